"""LLM runs that fail loudly (401 stops at once; 429/5xx back off with the wait shown) and run many seeds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fake_openai import FakeOpenAI, HTTPFailure, run


def cli(endpoint: str, out: Path | None, fake: FakeOpenAI, *args: str, key: str = "k") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": key}
    where = ["--out", str(out)] if out is not None else []
    return subprocess.run(
        [sys.executable, "-m", "ycgym.llm", "--model", "m", *where, "--endpoint", endpoint, *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def read_rows(p: Path) -> list[dict[str, Any]]:
    with pa.memory_map(str(p), "r") as src:
        rows: list[dict[str, Any]] = ipc.open_file(src).read_all().to_pylist()
        return rows


def test_401_stops_at_once_with_the_status_on_stderr(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI([run("yc-bench company status")] * 5, api_key="right") as fake:
        t0 = time.monotonic()
        p = cli(endpoint, tmp_path, fake, "--retries", "5", "--retry-backoff", "30", key="wrong")
        assert fake.requests == []  # refused before any completion
    assert p.returncode == 3, p.stderr
    assert "the endpoint refused the request (seed 1): HTTP 401: bad key" in p.stderr
    assert "retrying" not in p.stderr and time.monotonic() - t0 < 60  # no 30 s backoff
    out = json.loads(p.stdout)
    assert out["terminal_reason"] == "error" and out["terminal_detail"] == "HTTP 401: bad key" and out["calls"] == 0


def test_403_404_400_are_fatal_too(endpoint: str, tmp_path: Path) -> None:
    for status in (403, 404, 400):
        with FakeOpenAI([HTTPFailure(status, f"no way {status}")] * 3) as fake:
            p = cli(endpoint, tmp_path / str(status), fake, "--retries", "3")
            assert len(fake.requests) == 1
        assert p.returncode == 3 and f"HTTP {status}: no way {status}" in p.stderr, p.stderr


def test_429_then_200_backs_off_with_the_wait_shown(endpoint: str, tmp_path: Path) -> None:
    script: list[dict[str, Any] | HTTPFailure] = [HTTPFailure(429, "slow down"), run("yc-bench company status"), HTTPFailure(500, "boom"), run("yc-bench company status")]
    with FakeOpenAI(script) as fake:
        p = cli(endpoint, tmp_path, fake, "--max-turns", "2", "--retry-backoff", "0.2")
        assert len(fake.requests) == 4
    assert p.returncode == 0, p.stderr
    assert "[llm] attempt 1/3 failed (HTTP 429: slow down); retrying in 0.2 s" in p.stderr
    assert "[llm] attempt 1/3 failed (HTTP 500: boom); retrying in 0.2 s" in p.stderr
    out = json.loads(p.stdout)
    assert out["terminal_reason"] == "max_turns" and out["turns"] == 2
    rows = read_rows(tmp_path / "trajectories.arrow")
    assert rows[-1]["truncated"] and not rows[-1]["terminated"]


def stateless(body: dict[str, Any], n: int) -> dict[str, Any]:
    """A deterministic agent whose reply depends only on its own conversation (safe for parallel seeds)."""
    k = sum(1 for m in body["messages"] if m["role"] == "assistant")
    cmds = ["yc-bench company status", "yc-bench market browse --limit 2", "yc-bench employee list", "yc-bench sim resume"]
    return run(cmds[k % len(cmds)])


def test_seeds_in_parallel_match_one_at_a_time(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(stateless) as fake:
        par = cli(endpoint, tmp_path / "par", fake, "--seeds", "1-3", "--parallel", "3", "--max-turns", "4", "--quiet")
        seq = cli(endpoint, tmp_path / "seq", fake, "--split", "test", "--count", "3", "--max-turns", "4", "--quiet")
    assert par.returncode == 0 and seq.returncode == 0, par.stderr + seq.stderr
    assert sorted(json.loads(line)["seed"] for line in par.stdout.splitlines()) == [1, 2, 3]
    for name in ("trajectories.arrow", "episodes.arrow"):
        a, b = read_rows(tmp_path / "par" / name), read_rows(tmp_path / "seq" / name)
        assert a == b and len(a) >= 3
    eps = read_rows(tmp_path / "par" / "episodes.arrow")
    assert [e["seed"] for e in eps] == [1, 2, 3] and {e["outcome"] for e in eps} == {"truncated"}
    assert json.loads((tmp_path / "par" / "summary.json").read_text())["m"]["episodes"] == 3
    assert (tmp_path / "par" / "seed-2" / "turns.arrow").exists()


def test_report_reads_a_multi_seed_llm_run(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(stateless) as fake:
        p = cli(endpoint, tmp_path, fake, "--seeds", "1-2", "--max-turns", "3", "--quiet")
    assert p.returncode == 0, p.stderr
    entry = os.environ.get("YCGYM_NODE_ENTRY", str(Path(__file__).resolve().parents[3] / "dist" / "src" / "cli" / "main.js"))
    subprocess.run(["node", entry, "report", str(tmp_path)], check=True, capture_output=True, text=True, timeout=120)
    md = (tmp_path / "report.md").read_text()
    assert "## Against the paper's leaderboard" in md and "| **m** | this run |" in md


def test_kill_then_resume_gives_the_uninterrupted_rows(endpoint: str, tmp_path: Path) -> None:
    """A run killed in the middle (SIGKILL while the endpoint answers call 5) and resumed with --resume writes the
    same trajectories, episodes and turn rows (latency and wall-clock aside) as a run never interrupted."""
    args = ["--seed", "2", "--max-turns", "9", "--quiet"]
    with FakeOpenAI(stateless) as fake:
        whole = cli(endpoint, tmp_path / "whole", fake, *args)
    assert whole.returncode == 0, whole.stderr

    victim: dict[str, subprocess.Popen[str]] = {}

    def killer(body: dict[str, Any], n: int) -> dict[str, Any]:
        if n == 5:
            victim["p"].kill()
            victim["p"].wait(timeout=30)
        return stateless(body, n)

    cut = tmp_path / "cut"
    with FakeOpenAI(killer) as fake:
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
        victim["p"] = subprocess.Popen(
            [sys.executable, "-m", "ycgym.llm", "--model", "m", "--out", str(cut), "--endpoint", endpoint, *args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        victim["p"].communicate(timeout=300)
    assert victim["p"].returncode != 0
    state = json.loads((cut / "resume" / "state.json").read_text())
    assert state["call"] == 4 and not (cut / "episodes.arrow").exists()

    with FakeOpenAI(stateless) as fake:
        again = cli(endpoint, None, fake, "--resume", str(cut), "--max-turns", "9", "--quiet")
        assert len(fake.requests) == 5  # calls 5 to 9 only
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["terminal_reason"] == "max_turns"
    assert not (cut / "resume" / "state.json").exists()
    for name in ("trajectories.arrow", "episodes.arrow"):
        assert read_rows(cut / name) == read_rows(tmp_path / "whole" / name), name
    drop = ("latency_s",)
    a = [{k: v for k, v in r.items() if k not in drop} for r in read_rows(cut / "turns.arrow")]
    b = [{k: v for k, v in r.items() if k not in drop} for r in read_rows(tmp_path / "whole" / "turns.arrow")]
    assert a == b and len(a) == 9


def test_help_names_the_command_it_was_run_as() -> None:
    script = Path(sys.executable).parent / "ycgym-llm"
    if script.exists():
        out = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True).stdout
        assert out.startswith("usage: ycgym-llm ") and "--resume DIR" in out and "--config" not in out.split("\n")[0]
    out = subprocess.run([sys.executable, "-m", "ycgym.llm", "--help"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("usage: python -m ycgym.llm ")
    for flag in ("--seeds", "--split", "--count", "--parallel", "--resume"):
        assert flag in out, flag
    # --config is an alias of --preset: one help entry (Python 3.13's argparse names the metavar once).
    assert re.search(r"^  --preset( PRESET)?, --config PRESET$", out, re.MULTILINE), out


def test_bad_flags_are_usage_errors_before_anything_runs(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    """Every flag is checked before a server starts, a directory is made or the endpoint is called: a bad one is a
    usage error (exit 2, ``<prog>: error: ...``) naming it. Before, NaN temperatures, top_p 5 and negative prices ran
    (NaN failed every call: "Out of range float values are not JSON compliant"), 100,000,000 seeds were taken,
    ``--resume`` of a missing directory started a fresh run there, and a missing API key, an unwritable ``--out``, a
    missing ``--system-prompt-file``, a negative or NaN ``--request-timeout`` / ``--retry-backoff`` and an unreachable
    ``--endpoint`` ended in tracebacks (the last after 60 s)."""
    import ycgym.llm.__main__ as llm_main

    afile = tmp_path / "a-file"
    afile.write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    out = str(tmp_path / "out")
    monkeypatch.setattr("ycgym._backend.SERVER_CHECK_TIMEOUT_S", 0.5)
    cases: list[tuple[list[str], str]] = [
        (["--seeds", "1-100000000", "--out", out], "argument --seeds: 1-100000000 names more than 1000000 seeds"),
        (["--seed", str(2**60), "--out", out], "argument --seed: must be an integer from -9007199254740991 to 9007199254740991"),
        (["--temperature", "nan", "--out", out], "argument --temperature: must be a finite number >= 0"),
        (["--temperature", "-1", "--out", out], "argument --temperature: must be a finite number >= 0"),
        (["--top-p", "5", "--out", out], "argument --top-p: must be a number from 0 to 1"),
        (["--price-prompt", "-1", "--out", out], "argument --price-prompt: must be a finite number >= 0"),
        (["--price-completion", "inf", "--out", out], "argument --price-completion: must be a finite number >= 0"),
        (["--request-timeout", "-1", "--out", out], "argument --request-timeout: must be a finite number > 0"),
        (["--request-timeout", "nan", "--out", out], "argument --request-timeout: must be a finite number > 0"),
        (["--retry-backoff", "nan", "--out", out], "argument --retry-backoff: must be a finite number >= 0"),
        (["--out", str(afile / "sub")], "--out: cannot create"),
        (["--out", str(afile)], "--out: cannot create"),
        (["--resume", str(tmp_path / "missing")], "--resume: no such directory"),
        (["--resume", str(empty)], "--resume: nothing to resume in"),
        (["--system-prompt-file", str(tmp_path / "missing.txt"), "--out", out], "--system-prompt-file: cannot read"),
        (["--endpoint", "tcp://127.0.0.1:9", "--out", out], "--endpoint: no ycgym server answers at tcp://127.0.0.1:9"),
        (["--endpoint", "nonsense", "--out", out], "--endpoint: no ycgym server answers at nonsense"),
    ]
    base = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--quiet"]
    for args, message in cases:
        with pytest.raises(SystemExit) as e:
            llm_main.main([*base, *args])
        err = capsys.readouterr().err
        assert e.value.code == 2, (args, err)
        assert f"error: {message}" in err, (args, err)
        assert "Traceback" not in err
        assert not Path(out).exists(), args
    assert not (tmp_path / "missing").exists()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(SystemExit) as e:
        llm_main.main(["--model", "m", "--out", out])
    assert e.value.code == 2 and "error: no API key: set OPENAI_API_KEY" in capsys.readouterr().err
    assert not Path(out).exists()


def test_a_preset_the_server_lacks_is_a_usage_error_before_anything_is_written(endpoint: str, tmp_path: Path, capsys: Any) -> None:
    """``--preset`` names a preset of the server (which judges presets; paths are not sent): one it lacks is a usage
    error (exit 2) naming the available ones, before a directory is made or the model is called. It was a traceback
    (``ProtocolError: [bad_preset] ...``) after OUT had been made, exit 1."""
    import ycgym.llm.__main__ as llm_main

    out = tmp_path / "out"
    base = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--quiet", "--endpoint", endpoint, "--out", str(out)]
    for args in (["--preset", "bogus"], ["--preset", "/tmp/x.toml"], ["--config", "bogus", "--split", "test", "--count", "2"]):
        with pytest.raises(SystemExit) as e:
            llm_main.main([*base, *args])
        err = capsys.readouterr().err
        assert e.value.code == 2, (args, err)
        assert "error: --preset: unknown preset " in err and "(available: " in err and "default" in err, (args, err)
        assert "Traceback" not in err
        assert not out.exists(), args


def test_a_missing_openai_package_is_a_usage_error_before_anything_runs(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    """The wheel installs the ``ycgym-llm`` script without the ``[llm]`` extra: without the ``openai`` package the
    run is a usage error (exit 2) saying what to install, before a server starts or OUT is made. It was a traceback
    from the seed's worker thread (``ImportError: ycgym.llm needs the openai package``), exit 1, after OUT had been
    made."""
    import ycgym.llm.__main__ as llm_main

    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        llm_main.main(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--quiet", "--endpoint", "tcp://127.0.0.1:9", "--out", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert "error: the LLM runner needs the openai package: pip install 'ycgym[llm]'" in err, err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_turn_refused_for_capacity_is_retried_not_failed() -> None:
    # A shared server under memory pressure refuses turn_step (and turn_messages) with `capacity`: nothing ran, so
    # the runner waits and sends the same turn again instead of failing the seed's run.
    from ycgym.client import ProtocolError
    from ycgym.llm.runner import _TurnSteps

    class Flaky:
        def __init__(self) -> None:
            self.refusals = {"turn_step": 2, "turn_messages": 1}
            self.calls: list[str] = []

        def _maybe_refuse(self, op: str) -> None:
            self.calls.append(op)
            if self.refusals[op] > 0:
                self.refusals[op] -= 1
                raise ProtocolError("capacity", "server at capacity: retry later")

        def turn_step(self, session: str, action: Any, detail: bool = False) -> dict[str, Any]:
            self._maybe_refuse("turn_step")
            return {"done": False, "terminal_reason": None, "info": {"reward_cents": 5}}

        def turn_messages(self, session: str) -> list[dict[str, Any]]:
            self._maybe_refuse("turn_messages")
            return [{"role": "user", "content": "next"}]

    waits: list[float] = []
    client = Flaky()
    steps = _TurnSteps(client, "s1", sleep=waits.append)
    messages, reward, terminated, truncated, _ = steps.step({"content": "hi"})
    assert (messages, reward, terminated, truncated) == ([{"role": "user", "content": "next"}], 5, False, False)
    assert client.calls == ["turn_step", "turn_step", "turn_step", "turn_messages", "turn_messages"]
    assert len(waits) == 3 and all(w > 0 for w in waits)

    # Another error is not retried, and capacity is given up on after a bounded number of tries.
    class Refusing(Flaky):
        def __init__(self, code: str) -> None:
            super().__init__()
            self.code = code

        def turn_step(self, session: str, action: Any, detail: bool = False) -> dict[str, Any]:
            self.calls.append("turn_step")
            raise ProtocolError(self.code, "no")

    for code, tries in (("invalid_request", 1), ("capacity", None)):
        c = Refusing(code)
        waits.clear()
        with pytest.raises(ProtocolError) as ei:
            _TurnSteps(c, "s1", sleep=waits.append).step({"content": "hi"})
        assert ei.value.code == code
        if tries is not None:
            assert len(c.calls) == tries and waits == []
        else:
            assert 1 < len(c.calls) <= 12 and sum(waits) <= 120
