"""The verifiers environment end to end: verifiers' own ``vf-eval`` runs ``ycgym-verifiers`` against the fake
OpenAI-compatible server; the chats it sends are the turn protocol's, and the rewards are the final funds."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fake_openai import FakeOpenAI, run
from ycgym import Client
from ycgym.integrations.score import TurnRun, funds_multiple
from ycgym.integrations.verifiers import parse_seeds

SEEDS = (5, 6)
MAX_TURNS = 6

# The scripted model: one reply per turn, chosen by how many replies the conversation already holds.
REPLIES = [
    run("yc-bench market browse --limit 3", "yc-bench employee list"),
    run(
        "yc-bench task accept --task-id Task-10",
        "yc-bench task assign --task-id Task-10 --employees Emp_1,Emp_2,Emp_3,Emp_4,Emp_5,Emp_6,Emp_7,Emp_8",
        "yc-bench task dispatch --task-id Task-10",
    ),
    run("yc-bench sim resume"),
    run("yc-bench scratchpad write --content 'Task-10 done?'", "yc-bench sim resume"),
    run("yc-bench company status"),
    run("yc-bench sim resume"),
]


def _reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return REPLIES[min(done, len(REPLIES) - 1)]


def _expected(endpoint: str, seed: int) -> tuple[list[list[dict[str, Any]]], int, int]:
    """The chats the protocol hands out for the scripted replies, the starting and final funds."""
    chats: list[list[dict[str, Any]]] = []
    with Client(endpoint) as c:
        r = c.turn_reset(seed, options={"max_turns": MAX_TURNS})
        s, start = r["session"], r["info"]["funds_cents"]
        msgs: list[Any] = r["messages"]
        for k in range(MAX_TURNS):
            chats.append(msgs)
            m = REPLIES[k]["message"]
            calls = [{"id": t["id"], "name": t["function"]["name"], "arguments": t["function"]["arguments"]} for t in m["tool_calls"]]
            st = c.turn_step(s, {"tool_calls": calls})
            if st["done"]:
                break
            msgs = c.turn_messages(s)
        assert st["done"]
        return chats, start, st["info"]["funds_cents"]


def test_vf_eval_runs_the_turn_protocol(endpoint: str, tmp_path: Path) -> None:
    vf_eval = Path(sys.executable).parent / "vf-eval"
    with FakeOpenAI(_reply, api_key="sk-fake") as fake:
        cmd = [
            str(vf_eval),
            "ycgym-verifiers",
            "--model",
            "fake-model",
            "--client.base-url",
            fake.base_url,
            "--client.api-key-var",
            "YCGYM_FAKE_KEY",
            "--env.taskset.seeds",
            ",".join(map(str, SEEDS)),
            "--env.taskset.max-turns",
            str(MAX_TURNS),
            "--env.taskset.endpoint",
            endpoint,
            "--no-push",
            "--no-rich",
            "-o",
            str(tmp_path),
        ]
        p = subprocess.run(cmd, env={**os.environ, "YCGYM_FAKE_KEY": "sk-fake"}, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-4000:]
        requests = list(fake.requests)
    (traces_file,) = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines() if line.strip()]
    assert len(episodes) == len(SEEDS) and all(ep["ok"] and len(ep["traces"]) == 1 for ep in episodes)
    traces = [ep["traces"][0] for ep in episodes]
    by_seed = {t["task"]["data"]["seed"]: t for t in traces}
    assert sorted(by_seed) == list(SEEDS)
    for r in requests:
        assert r["model"] == "fake-model" and r["tool_choice"] == "auto"
        assert [x["function"]["name"] for x in r["tools"]] == ["run_command"]
        assert "temperature" not in r and "top_p" not in r
    expected_chats: list[str] = []
    for seed in SEEDS:
        chats, start, final = _expected(endpoint, seed)
        expected_chats += [json.dumps(c, sort_keys=True) for c in chats]
        t = by_seed[seed]
        assert t["ok"] and not t["errors"], t["errors"]
        assert t["rewards"]["funds_multiple"]["score"] == funds_multiple(final, start)
        assert t["metrics"]["final_funds_usd"] == final / 100
        assert t["metrics"]["turns"] == len(chats) == MAX_TURNS
        assert t["metrics"]["bankrupt"] == 0.0
        info = t["info"]["ycgym"]
        assert (info["start_funds_cents"], info["final_funds_cents"], info["terminal_detail"]) == (start, final, f"max_turns={MAX_TURNS} reached")
        assert [t["task"]["data"]["system_prompt"], t["task"]["data"]["prompt"]] == [m["content"] for m in chats[0]]
    # Every model call sent exactly one of the protocol's chats (rollouts interleave, so compare as multisets).
    assert sorted(json.dumps(r["messages"], sort_keys=True) for r in requests) == sorted(expected_chats)
    # The scripted company earned something on at least one seed: the reward is not a constant.
    assert any(t["rewards"]["funds_multiple"]["score"] != 1.0 for t in traces)
    assert len(requests) == len(SEEDS) * MAX_TURNS


def test_parse_seeds() -> None:
    assert parse_seeds("1-3,7") == [1, 2, 3, 7]
    assert parse_seeds("5") == [5]
    for bad in ("", "3-1", "a", "1-b"):
        with pytest.raises(ValueError):
            parse_seeds(bad)
    # Bounded as every seed list is (ycgym.splits.parse_seed_list): before, "1-100000000" built a list of 10^8 ints
    # (gigabytes), and a seed beyond 2^53 reached the server.
    with pytest.raises(ValueError, match=r"^1-100000000 names more than 1000000 seeds$"):
        parse_seeds("1-100000000")
    with pytest.raises(ValueError, match="seeds must be integers from -9007199254740991 to 9007199254740991"):
        parse_seeds(f"1,{2**60}")
    assert parse_seeds("-2--1, 4 ,,") == [-2, -1, 4]


def test_without_the_extra_the_import_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``[verifiers]`` the import said only ``No module named 'verifiers'``; it names the extra now."""
    monkeypatch.setitem(sys.modules, "verifiers", None)
    monkeypatch.delitem(sys.modules, "ycgym.integrations.verifiers")
    with pytest.raises(ImportError, match=re.escape("pip install 'ycgym[verifiers]'")):
        importlib.import_module("ycgym.integrations.verifiers")


def test_a_turn_stopped_by_the_rollout_deadline_leaves_no_stale_final_funds(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """verifiers stops a rollout whose agent time runs out (asyncio cancels the harness) and still scores its partial
    trajectory. Cancelled while the server played a turn (the harness awaiting ``run.step`` in a thread), the harness
    left ``final_funds_cents`` at the funds of before that turn, and the task scored them as the run's final funds
    (here the starting funds: reward 1.0) though the server had played it. Now the state says the run is due (``due``)
    and scoring refuses, naming why, instead of answering stale funds."""
    import asyncio
    import threading
    from types import SimpleNamespace

    import ycgym.integrations.verifiers as yv

    played, release = threading.Event(), threading.Event()

    class SlowRun(TurnRun):
        def step(self, action: Any) -> Any:
            res = super().step(action)  # played on the server; the harness is cancelled before it takes it in
            played.set()
            release.wait(10)
            return res

    monkeypatch.setattr(yv, "TurnRun", SlowRun)
    harness = yv.YCBenchHarness(yv.YCBenchHarnessConfig())
    st = yv.YCBenchState()
    trace = SimpleNamespace(state=st, info={})
    data = yv.YCBenchData(name="t", prompt="p", seed=7, endpoint=endpoint)
    with FakeOpenAI(lambda body, n: REPLIES[1], api_key="sk-fake") as fake:

        async def stopped() -> None:
            # As verifiers' agent deadline does (asyncio.timeout): the harness cancelled while the turn is in its thread.
            task = asyncio.create_task(harness.launch(SimpleNamespace(model="m"), trace, None, fake.base_url, "sk-fake", {}, data))
            assert await asyncio.to_thread(played.wait, 60)
            task.cancel()
            release.set()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(stopped())
    assert st.start_funds_cents is not None and st.turns == 0
    assert st.due is not None and "stopped" in st.due, st.due
    with pytest.raises(RuntimeError, match="not known"):
        yv.YCBenchTask._state(trace)


class _HeldStep(TurnRun):
    """A run whose turns are held, once played on the server, inside ``step`` (in its client request) until ``release``
    is set; it records the order of the step's end and of the closes its client sends (``events``)."""

    def __init__(self, *a: Any, **k: Any) -> None:
        import threading

        super().__init__(*a, **k)
        self.events: list[str] = []
        self.stepped: str | None = None
        self.played, self.release = threading.Event(), threading.Event()
        self.session_closed = threading.Event()
        client = self._backend.client
        real_step, real_close = client.turn_step, client.close

        def turn_step(session: str, action: Any, **kw: Any) -> Any:
            self.stepped = session
            res = real_step(session, action, **kw)
            self.played.set()
            assert self.release.wait(30)
            self.events.append("step end")
            return res

        def close(session: str | None = None, **kw: Any) -> Any:
            self.events.append("close session" if session is not None else "close socket")
            if session is not None:
                self.session_closed.set()
            return real_close(session, **kw)

        client.turn_step = turn_step  # type: ignore[method-assign]
        client.close = close  # type: ignore[method-assign]


def _session_gone(endpoint: str, session: str) -> bool:
    from ycgym import ProtocolError

    with Client(endpoint) as c:
        try:
            c.turn_messages(session)
        except ProtocolError as e:
            return e.code == "unknown_session"
    return False


def test_a_cancelled_harness_closes_its_run_only_after_the_step_in_its_thread_ends(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancelled while ``run.step`` ran in a worker thread, the harness's ``finally`` ran ``run.close`` in another
    thread at once: the session was closed (and the connection and shared server released) while the step was still
    inside ``run.step``. Now close waits for the run's request in flight, then closes: the step's end comes first, the
    session is gone afterwards, and nothing is raised but the cancellation."""
    import asyncio
    import threading

    import ycgym.integrations.verifiers as yv

    runs: list[_HeldStep] = []
    close_called = threading.Event()

    class Run(_HeldStep):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            runs.append(self)

        def close(self) -> None:
            close_called.set()
            super().close()

    monkeypatch.setattr(yv, "TurnRun", Run)
    harness = yv.YCBenchHarness(yv.YCBenchHarnessConfig())
    st = yv.YCBenchState()
    trace = SimpleNamespace(state=st, info={})
    data = yv.YCBenchData(name="t", prompt="p", seed=7, endpoint=endpoint)
    with FakeOpenAI(lambda body, n: REPLIES[1], api_key="sk-fake") as fake:

        async def stopped() -> None:
            task = asyncio.create_task(harness.launch(SimpleNamespace(model="m"), trace, None, fake.base_url, "sk-fake", {}, data))
            def played() -> bool:
                end = time.monotonic() + 60
                while not runs and time.monotonic() < end:
                    time.sleep(0.01)
                return bool(runs) and runs[0].played.wait(60)

            assert await asyncio.to_thread(played)
            held = runs[0]
            task.cancel()
            assert await asyncio.to_thread(close_called.wait, 30)
            # The close runs while the step is held: it must not close the session yet.
            assert not await asyncio.to_thread(held.session_closed.wait, 2.0), held.events
            held.release.set()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(stopped())
    held = runs[0]
    assert held.events == ["step end", "close session", "close socket"], held.events
    assert held._backend.closed and held.client.closed
    assert st.due is not None
    assert held.stepped is not None and _session_gone(endpoint, held.stepped)


def test_close_waits_a_bounded_time_then_leaves_the_close_to_the_request_in_flight(endpoint: str, caplog: pytest.LogCaptureFixture) -> None:
    """A step still held past ``close_wait``: close returns, logging why, without closing anything under the step; the
    step then ends normally and closes the run itself. No request of the run starts once it is closed."""
    import logging
    import threading

    held = _HeldStep(endpoint, close_wait=0.2)
    sid = held.reset(7)["session"]
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(held.step(["yc-bench company status"])))
    t.start()
    try:
        assert held.played.wait(60)
        with caplog.at_level(logging.WARNING, logger="ycgym"):
            t0 = time.monotonic()
            held.close()
            assert time.monotonic() - t0 < 10
        assert any("still running" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records), caplog.records
        assert held.events == [] and not held._backend.closed
        for call, f in (("step", lambda: held.step(["yc-bench company status"])), ("reset", lambda: held.reset(1)), ("messages", held.messages)):
            with pytest.raises(RuntimeError, match="the run is closed"):
                f()
            assert held.events == [], call
    finally:
        held.release.set()
        t.join(60)
    assert not t.is_alive() and len(got) == 1 and held.last is got[0] and held.stepped == sid
    assert held.events == ["step end", "close session", "close socket"], held.events
    assert held._backend.closed
    assert _session_gone(endpoint, sid)
    held.close()  # idempotent
    assert held.events == ["step end", "close session", "close socket"]
