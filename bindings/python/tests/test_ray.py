"""ycgym.ray against a real local Ray (2 CPUs) and the real TypeScript runner.

One Ray instance serves the module (starting one takes seconds); the command-line test connects to it with
``--address`` as a second driver, as a user would to a cluster.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import ray

import ycgym.ray as yr
from ycgym.arrow import EPISODE_SCHEMA, STEP_SCHEMA
from ycgym.ray.data import resolve_files
from ycgym.server import find_server_command

# Ray Data 2.60 warns about its own deprecated settings and pandas 3 idioms: not ours to fix.
pytestmark = pytest.mark.filterwarnings(r"ignore::DeprecationWarning:ray\.")

SEEDS = "1-64"
# The 64-seed runs skip trajectories (100 MB each, and the merge's byte-identity of trajectories is tested in
# test/export/shard.test.ts); the small run of test_small_run_with_trajectories_and_read_back keeps them.
FILES = ("episodes.arrow", "summary.json")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray with 2 CPUs; yields its address for other drivers."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ycgym run --policy greedy --seeds 1-64 --no-trajectories`` (two worker threads)."""
    return ycgym_run(tmp_path_factory.mktemp("ref"), "--policy", "greedy", "--seeds", SEEDS, "--no-trajectories")


def ycgym_run(out: Path, *flags: str) -> Path:
    subprocess.run(
        [*find_server_command(), "run", *flags, "--workers", "2", "--no-progress", "--out", str(out)], check=True, stdout=subprocess.DEVNULL
    )
    return out


@pytest.fixture(scope="module")
def ray_run(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``python -m ycgym.ray run`` over the same seeds on the module's cluster."""
    out = tmp_path_factory.mktemp("ray") / "run"
    cmd = [
        sys.executable,
        "-m",
        "ycgym.ray",
        "run",
        "--policy",
        "greedy",
        "--seeds",
        SEEDS,
        "--no-trajectories",
        "--out",
        str(out),
        "--address",
        cluster,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, done


def test_cli_output_is_byte_identical_to_ycgym_run(ray_run: tuple[Path, subprocess.CompletedProcess[str]], reference: Path) -> None:
    out, done = ray_run
    for f in FILES:
        assert (out / f).read_bytes() == (reference / f).read_bytes(), f
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)  # the staging directory is gone
    assert "| greedy | 64 |" in done.stdout
    assert "64 episodes in" in done.stdout and "on 2 Ray workers" in done.stdout


def test_killed_actor_and_runner_are_retried_without_duplicates(cluster: str, reference: Path, tmp_path: Path) -> None:
    killed: dict[str, int] = {}

    def on_shard(s: yr.ShardOutput) -> None:
        # The pool hands an actor its next shard before the driver sees the last result, so the process
        # killed here is playing a shard: Ray must restart the actor and play that shard again.
        if len(seen) == 0:
            killed["actor"] = s.actor_pid
            os.kill(s.actor_pid, signal.SIGKILL)
        elif "runner" not in killed and len(seen) >= 4 and s.actor_pid != killed["actor"]:
            killed["runner"] = s.runner_pid
            os.kill(s.runner_pid, signal.SIGKILL)
        seen.append(s)

    seen: list[yr.ShardOutput] = []
    report = yr.run("greedy", SEEDS, tmp_path, num_workers=2, shard_size=4, trajectories=False, on_shard=on_shard)
    assert report.shards == 16 and len(seen) == 16
    assert sorted(s.start for s in seen) == list(range(0, 64, 4))
    # Two original actors and runners, plus one restart after each kill that played the shards left to it.
    assert "runner" in killed
    assert len({s.actor_pid for s in seen}) >= 4
    assert len({s.runner_pid for s in seen}) >= 4
    # Restarted actors removed the scratch directories of the shards their predecessors were killed in.
    assert [p for s in seen for p in Path(tempfile.gettempdir()).glob(f"ycgym-ray-{s.actor_id}*")] == []
    eps = pa.ipc.open_file(tmp_path / "episodes.arrow").read_all()
    assert eps.column("episode_id").to_pylist() == list(range(64))
    for f in ("episodes.arrow", "summary.json"):
        assert (tmp_path / f).read_bytes() == (reference / f).read_bytes(), f
    assert not (tmp_path / "trajectories.arrow").exists()


def test_without_retries_a_killed_actor_fails_the_run_cleanly(cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def on_shard(s: yr.ShardOutput) -> None:
        if not killed:
            killed.append(s.actor_pid)
            actors.append(s.actor_id)
            os.kill(s.actor_pid, signal.SIGKILL)

    killed: list[int] = []
    actors: list[str] = []
    # The scratch prefixes of this run's actors (one per actor, named after its id), as the driver asked them: only
    # their folders are this run's. Another run on the machine (a parallel test run) makes ycgym-ray-* folders of its
    # own in the same temporary directory, which this run neither makes nor removes.
    prefixes: list[Path] = []
    remove = yr.runner._remove_scratch

    def removing(runners: Any) -> None:
        runners = list(runners)
        prefixes.extend(Path(prefix) for _, _, prefix in runners)
        remove(runners)

    monkeypatch.setattr(yr.runner, "_remove_scratch", removing)
    with pytest.raises(yr.RunError, match=r"a worker died and was not restarted \(max_retries=0\)"):
        yr.run("greedy", "1-40", tmp_path, num_workers=2, shard_size=4, trajectories=True, max_retries=0, on_shard=on_shard)
    assert killed and not (tmp_path / "summary.json").exists() and not (tmp_path / ".ray-shards").exists()
    # Both actors' prefixes (the killed one's among them), in this node's temporary directory.
    assert len(prefixes) == 2 and Path(tempfile.gettempdir()) / f"ycgym-ray-{actors[0]}" in prefixes, prefixes
    assert all(p.parent == Path(tempfile.gettempdir()) for p in prefixes), prefixes
    # Both actors were playing a shard when the run failed (the killed one its next, which the pool hands over before
    # the driver sees the last result; the other one, killed by the driver, its own): the driver removes what their
    # runners had written, which no restarted actor will.
    assert sorted(p.name for prefix in prefixes for p in prefix.parent.glob(f"{prefix.name}*")) == []


def test_actors_that_cannot_start_fail_the_run_with_a_run_error(cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The driver's plan is fine; the actors' runners are given flags they refuse, so they exit before "ready".
    monkeypatch.setattr(yr.runner, "plan_run", lambda args, command=None: {"run_id": "r", "preset": "default", "policies": ["greedy"], "jobs": 4})
    monkeypatch.setattr(yr.runner, "run_args", lambda *a, **k: ["--policy", "nope", "--seeds", "1-4"])
    with pytest.raises(yr.RunError, match=r"a worker could not start \(max_retries=0\)"):
        yr.run("greedy", "1-4", tmp_path / "out", num_workers=1, max_retries=0)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_seed_lists_keep_their_order_and_argv_stays_short() -> None:
    args = yr.run_args(["greedy"], [*range(1, 100_001), 7, 3, 4, 5, -2, -1])
    assert args[args.index("--seeds") + 1] == "1-100000,7,3-5,-2--1"
    plan = yr.plan_run(args)
    assert plan["jobs"] == 100_006
    assert yr.plan_run(yr.run_args("greedy,random", "1-3", run_id="r")) == {
        "run_id": "r",
        "preset": "default",
        "policies": ["greedy", "random"],
        "jobs": 6,
    }
    assert "--compression" not in yr.run_args("greedy", "1-3")
    plain = yr.run_args("greedy", "1-3", compression="none")
    assert plain[plain.index("--compression") + 1] == "none"
    assert yr.plan_run(plain)["jobs"] == 3


def test_bad_flags_fail_before_ray_starts(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "ycgym.ray", "run", "--policy", "nope", "--seeds", "1-3", "--out", str(tmp_path / "x")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unknown policy nope" in done.stderr
    assert not (tmp_path / "x").exists()
    with pytest.raises(yr.RunError, match="bad seed list"):
        yr.run("greedy", "1-x", tmp_path / "y")
    # An output folder that cannot be made: a RunError before Ray starts (it was a FileNotFoundError traceback once
    # the actors had started).
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(yr.RunError, match=f"^cannot create the output folder {bad}: "):
            yr.run("greedy", "1-3", bad)
    done = subprocess.run([*cmd[:5], "greedy", "--seeds", "1-3", "--out", str(tmp_path / "f" / "sub")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("ycgym.ray: cannot create the output folder") and "Traceback" not in done.stderr


def test_config_is_an_alias_of_preset(tmp_path: Path) -> None:
    """``--config NAME`` is an alias of ``--preset NAME`` in every command (README, Presets; the reference's flag), as in
    ``ycgym run``, whose flags this command takes. It was refused ("unrecognized arguments: --config"); now its value
    reaches ``ycgym run``'s own parser, which names a bad preset before Ray starts."""
    cmd = [sys.executable, "-m", "ycgym.ray", "run", "--policy", "greedy", "--seeds", "1-3", "--config", "bogus", "--out", str(tmp_path / "x")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Unknown preset 'bogus'" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists()


def test_small_run_with_trajectories_and_read_back(cluster: str, tmp_path: Path) -> None:
    ref = ycgym_run(tmp_path / "ref", "--policy", "greedy,random", "--seeds", "1-4", "--max-steps", "40", "--rollouts")
    out = tmp_path / "runs" / "ray"
    report = yr.run(["greedy", "random"], [1, 2, 3, 4], out, num_workers=2, shard_size=3, max_steps=40, rollouts=True)
    assert report.files == [out / "trajectories.arrow", out / "episodes.arrow", out / "summary.json"]
    for f in ("trajectories.arrow", "episodes.arrow", "summary.json"):
        assert (out / f).read_bytes() == (ref / f).read_bytes(), f
    names = sorted(p.name for p in (ref / "rollouts").iterdir())
    assert len(names) == 8 and sorted(p.name for p in (out / "rollouts").iterdir()) == names
    for n in names:
        assert (out / "rollouts" / n).read_bytes() == (ref / "rollouts" / n).read_bytes(), n

    steps = pa.ipc.open_file(out / "trajectories.arrow").read_all()
    blocks = ray.get(yr.read_trajectories(out).to_arrow_refs())
    table = pa.concat_tables(blocks).sort_by([("episode_id", "ascending"), ("step", "ascending")])
    assert table.schema.remove_metadata() == STEP_SCHEMA.remove_metadata()
    assert table.equals(steps)
    eps = yr.read_episodes(out).to_pandas().sort_values("episode_id")
    assert list(eps.columns) == EPISODE_SCHEMA.names
    assert eps["episode_id"].tolist() == list(range(8))
    assert pc.sum(table["reward_cents"]).as_py() == int((eps["final_funds_cents"] - 20_000_000).sum())

    # Parquet (row group by row group) and globs over several runs read the same way.
    other = tmp_path / "runs" / "parquet"
    other.mkdir()
    pq.write_table(steps.slice(0, 100), other / "trajectories.parquet", row_group_size=30)
    both = yr.read_trajectories(str(tmp_path / "runs" / "*")).to_pandas()
    assert len(both) == steps.num_rows + 100
    assert both["reward_cents"].sum() == pc.sum(steps["reward_cents"]).as_py() + pc.sum(steps.slice(0, 100)["reward_cents"]).as_py()


def test_parquet_run_is_byte_identical_to_ycgym_run_and_reads_back(cluster: str, tmp_path: Path) -> None:
    """``format="parquet"`` (``--format parquet``) reaches the shards and the merge: the files of ``ycgym run --format
    parquet`` over the same seeds, byte for byte, and Ray Data reads them as the Arrow run's rows."""
    ref = ycgym_run(tmp_path / "ref", "--policy", "greedy", "--seeds", "1-5", "--max-steps", "60", "--format", "parquet")
    out = tmp_path / "ray"
    report = yr.run("greedy", "1-5", out, num_workers=2, shard_size=2, max_steps=60, format="parquet")
    assert report.files == [out / "trajectories.parquet", out / "episodes.parquet", out / "summary.json"]
    for f in ("trajectories.parquet", "episodes.parquet", "summary.json"):
        assert (out / f).read_bytes() == (ref / f).read_bytes(), f
    arrow = ycgym_run(tmp_path / "arrow", "--policy", "greedy", "--seeds", "1-5", "--max-steps", "60")
    steps = pa.ipc.open_file(arrow / "trajectories.arrow").read_all()
    read = pa.concat_tables(ray.get(yr.read_trajectories(out).to_arrow_refs())).sort_by([("episode_id", "ascending"), ("step", "ascending")])
    assert read.num_rows == steps.num_rows
    assert read.column("observation_text").to_pylist() == steps.column("observation_text").to_pylist()


def test_resolve_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        for f in ("trajectories.arrow", "episodes.arrow", "summary.json"):
            (tmp_path / run / f).write_bytes(b"")
    (tmp_path / "b" / "trajectories.parquet").write_bytes(b"")
    a, b = tmp_path / "a", tmp_path / "b"
    assert resolve_files(a, "trajectories") == [str(a / "trajectories.arrow")]
    assert resolve_files(str(tmp_path / "*"), "episodes") == [str(a / "episodes.arrow"), str(b / "episodes.arrow")]
    assert resolve_files([b, a / "trajectories.arrow"], "trajectories") == [
        str(b / "trajectories.arrow"),
        str(b / "trajectories.parquet"),
        str(a / "trajectories.arrow"),
    ]
    assert resolve_files("s3://bucket/run/trajectories.arrow", "trajectories") == ["s3://bucket/run/trajectories.arrow"]
    with pytest.raises(FileNotFoundError, match=r"no trajectories\.arrow or trajectories\.parquet"):
        resolve_files(tmp_path, "trajectories")
    with pytest.raises(FileNotFoundError, match="no file or directory matches"):
        resolve_files(str(tmp_path / "nothing-*"), "trajectories")
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        resolve_files(tmp_path / "c", "trajectories")
    with pytest.raises(ValueError, match=r"not an \.arrow or \.parquet file"):
        resolve_files(a / "summary.json", "trajectories")
    with pytest.raises(ValueError, match="no paths given"):
        resolve_files([], "trajectories")
    monkeypatch.chdir(tmp_path)
    assert resolve_files(["a", "b/episodes.arrow"], "episodes") == [str(a / "episodes.arrow"), str(b / "episodes.arrow")]


def test_readme_example_runs_as_written(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme[readme.index("\n## Ray\n") :]
    code = section[section.index("```python\n") + len("```python\n") : section.index("```\n", section.index("```python\n") + 10)]
    assert len([line for line in code.splitlines() if line.strip()]) <= 6
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md#ray", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    summary = json.loads((tmp_path / "runs" / "ray-demo" / "summary.json").read_text())
    assert lines[0] == str(summary["greedy"]["mean_final_funds_cents"])
    rows = pa.ipc.open_file(tmp_path / "runs" / "ray-demo" / "trajectories.arrow").read_all().num_rows
    assert lines[1] == f"{rows} steps"


# A stand-in for ``ycgym shard worker``: ready, then for each request the next line of REPLIES (as written: a line
# without its newline is one cut off by the process's exit), or an exit when they run out.
_FAKE_RUNNER = r"""
import json, sys
replies = json.loads(sys.argv[1])
print(json.dumps({"event": "ready"}), flush=True)
for _ in sys.stdin:
    if not replies:
        break
    reply = replies.pop(0)
    sys.stdout.write(reply)
    sys.stdout.flush()
    if not reply.endswith("\n"):
        break
"""

MALFORMED_SHARD_REPLIES = {
    "not JSON": ('{"event": "done", "start": 0, "end"\n', "is not JSON"),
    "not an object": ("[1, 2]\n", "not a JSON object"),
    "no episodes": ('{"event": "done", "start": 0, "end": 2}\n', "'episodes'"),
    "episodes a string": ('{"event": "done", "start": 0, "end": 2, "episodes": "2"}\n', "'episodes'"),
    "another shard's": ('{"event": "done", "start": 4, "end": 6, "episodes": 2}\n', "shard \\[4, 6\\)"),
    "no message": ('{"event": "error"}\n', "no message"),
}


def _fake_runner(*replies: str) -> list[str]:
    return [sys.executable, "-c", _FAKE_RUNNER, json.dumps(list(replies))]


def test_a_malformed_shard_reply_is_a_run_error_naming_the_shard(cluster: str) -> None:
    """The runner's reply line was read unchecked: a line that is not JSON, not an object, or without a well-typed
    ``episodes`` (a runner that broke, a node out of disk) failed the shard with a JSONDecodeError, an AttributeError,
    a KeyError or a TypeError from deep inside the actor, and a reply for another shard was taken as this one's. Now a
    RunError that names the shard and what was wrong; the actor goes on (the next good reply is taken)."""
    cases = sorted(MALFORMED_SHARD_REPLIES)
    good = '{"event": "done", "start": 0, "end": 2, "episodes": 2}\n'
    actor = yr.ShardRunner.options(max_restarts=0).remote([], command=_fake_runner(*(MALFORMED_SHARD_REPLIES[c][0] for c in cases), good))  # type: ignore[attr-defined]
    try:
        for case in cases:
            with pytest.raises(yr.RunError, match=rf"shard \[0, 2\): .*{MALFORMED_SHARD_REPLIES[case][1]}") as e:
                ray.get(actor.run.remote(0, 2))
            assert "Traceback" not in str(getattr(e.value, "cause", e.value)), case
        assert ray.get(actor.run.remote(0, 2)).episodes == 2
    finally:
        ray.kill(actor)


def test_a_shard_reply_cut_off_by_the_runner_exit_restarts_the_actor(cluster: str) -> None:
    """A reply line without its newline is one the runner's exit cut off (a crash mid-write): the runner is gone, as
    when it writes nothing, so the actor exits to be restarted and the shard retried (with no restarts left, the actor
    is lost). It used to be parsed: a JSONDecodeError, the actor left with a dead runner."""
    actor = yr.ShardRunner.options(max_restarts=0).remote([], command=_fake_runner('{"event": "done", "sta'))  # type: ignore[attr-defined]
    try:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.run.remote(0, 2))
    finally:
        ray.kill(actor)


@pytest.mark.parametrize(
    ("printed", "why"),
    [('{"jobs": ', "not JSON"), ("[4]", "not a JSON object"), ('{"run_id": "r"}', "'jobs'"), ('{"jobs": "4"}', "'jobs'"), ('{"jobs": -1}', "'jobs'")],
)
def test_a_malformed_plan_is_a_run_error(printed: str, why: str) -> None:
    """``ycgym shard plan``'s output was taken unchecked: ``run`` then failed with a JSONDecodeError, a KeyError or a
    TypeError (``int(plan["jobs"])``). Now ``plan_run`` raises a RunError saying what was wrong."""
    with pytest.raises(yr.RunError, match=f"^plan: .*{why}"):
        yr.plan_run([], [sys.executable, "-c", f"print({printed!r})"])


SUMMARY_DAMAGE: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing": (lambda p: p.unlink(), "cannot be read"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "not JSON"),
    "not JSON": (lambda p: p.write_bytes(b"\xff\xfe garbage"), "not JSON"),
    "not an object": (lambda p: p.write_text("[1, 2]"), "not a JSON object"),
    "a policy not an object": (lambda p: p.write_text('{"greedy": 3}'), "'greedy' is not a JSON object"),
}


@pytest.mark.parametrize("case", sorted(SUMMARY_DAMAGE))
def test_a_bad_merged_summary_is_a_run_error_naming_it(cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The merge's ``summary.json`` was read with a plain ``json.loads`` once the merge exited 0: a summary missing
    (a disk full, another process), cut short or not JSON failed the run with a bare FileNotFoundError or
    JSONDecodeError. Now a RunError naming the file and what was wrong, as for a malformed plan or shard reply."""
    damage, why = SUMMARY_DAMAGE[case]
    real_cli = yr.runner._cli

    def cli(command: list[str], args: list[str], what: str) -> str:
        out = real_cli(command, args, what)
        if what == "merge":
            damage(tmp_path / "out" / "summary.json")
        return out

    monkeypatch.setattr(yr.runner, "_cli", cli)
    summary = tmp_path / "out" / "summary.json"
    with pytest.raises(yr.RunError, match=rf"^merge: {summary} .*{why}") as e:
        yr.run("greedy", "1-1", tmp_path / "out", max_steps=3, trajectories=False, num_workers=1)
    assert e.value.__cause__ is None and (e.value.__context__ is None or e.value.__suppress_context__), "no chained traceback from json/pathlib"
    assert not (tmp_path / "out" / yr.runner.STAGING).exists()
