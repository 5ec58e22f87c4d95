"""Bulk baseline runs spread over a Ray cluster, merged into exactly the files ``ycgym run`` writes.

The run is planned, played and merged by the TypeScript CLI (``ycgym shard plan|worker|merge``); Ray only
places the work:

* the driver asks ``ycgym shard plan`` how many jobs the run has (job i is episode i in (policy, seed)
  order) and cuts ``[0, jobs)`` into contiguous shards;
* one :class:`ShardRunner` actor per worker (``num_cpus=1``) owns a long-lived ``ycgym shard worker``
  process (the Node bulk runner) and plays the shards that :class:`ray.util.ActorPool` hands it into a
  temporary directory, returning the files' bytes through the object store (so workers need no shared
  filesystem);
* an actor that dies (its process or its runner killed) is restarted by Ray (``max_restarts``) and the shard
  it was playing is retried (``max_task_retries``); a shard's result reaches the driver exactly once;
* the driver writes each shard under ``OUT/.ray-shards/`` and runs ``ycgym shard merge``, which checks that
  every job is there exactly once and writes ``trajectories.arrow``, ``episodes.arrow`` (``.parquet`` with
  ``format="parquet"``; the shards themselves always travel as Arrow IPC), ``rollouts/`` and
  ``summary.json`` with the code of ``ycgym run``: the files are byte-identical to its output.
"""

from __future__ import annotations

import collections
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import ray
from ray.util import ActorPool

from ..server import _drain, _pdeathsig, find_server_command

__all__ = ["RunError", "RunReport", "ShardOutput", "ShardRunner", "run", "run_args", "plan_run"]

STAGING = ".ray-shards"
"""Name of the directory under ``out`` where shard outputs wait for the merge (removed afterwards)."""


class RunError(RuntimeError):
    """A run could not be planned, played or merged (the message says which and why)."""


@dataclass(frozen=True)
class ShardOutput:
    """What an actor sends back for one shard: jobs ``[start, end)`` and the files it wrote."""

    start: int
    end: int
    episodes: int
    #: Relative path (``trajectories.arrow``, ``episodes.arrow``, ``rollouts/NAME.json``) -> contents.
    files: dict[str, bytes]
    #: Process id of the actor and of its Node runner, the actor's id (kept across restarts) and the Ray
    #: node it ran on (diagnostics, tests).
    actor_pid: int
    runner_pid: int
    actor_id: str
    node_id: str


@dataclass
class RunReport:
    """Result of :func:`run`."""

    #: ``summary.json`` as written (keyed by policy, in the order given).
    summary: dict[str, dict[str, float]]
    episodes: int
    #: Paths written under ``out`` (as ``ycgym run`` lists them).
    files: list[Path]
    seconds: float
    num_workers: int
    shards: int
    #: The summary table the merge printed (Markdown).
    table: str
    #: One entry per shard in completion order: (start, end, actor_pid, runner_pid, node_id).
    placements: list[tuple[int, int, int, int, str]] = field(default_factory=list)


def run_args(
    policies: str | Sequence[str],
    seeds: str | Sequence[int],
    *,
    preset: str = "default",
    max_steps: int | None = None,
    trajectories: bool = True,
    rollouts: bool = False,
    run_id: str | None = None,
    format: str = "arrow",
    compression: str = "zstd",
) -> list[str]:
    """The flags of ``ycgym run`` that decide a run's output, as passed to every ``ycgym shard`` command."""
    pol = policies if isinstance(policies, str) else ",".join(policies)
    sds = seeds if isinstance(seeds, str) else _seed_syntax(seeds)
    args = ["--policy", pol, "--seeds", sds, "--preset", preset]
    if max_steps is not None:
        args += ["--max-steps", str(max_steps)]
    if not trajectories:
        args.append("--no-trajectories")
    if rollouts:
        args.append("--rollouts")
    if run_id is not None:
        args += ["--run-id", run_id]
    if format != "arrow":
        args += ["--format", format]
    if compression != "zstd":
        args += ["--compression", compression]
    return args


def _seed_syntax(seeds: Sequence[int]) -> str:
    """Seeds in ``ycgym run``'s syntax, in the given order, ascending runs written ``a-b`` (keeps argv short)."""
    parts: list[str] = []
    xs = [int(s) for s in seeds]
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def _cli(command: Sequence[str], args: Sequence[str], what: str) -> str:
    try:
        done = subprocess.run([*command, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    except OSError as e:
        raise RunError(f"{what}: cannot run {' '.join(command)}: {e}") from e
    if done.returncode != 0:
        msg = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").removeprefix("ycgym: ")
        raise RunError(f"{what}: {msg}")
    return done.stdout


def _excerpt(text: str | bytes) -> str:
    """The start of a malformed output, for an error message."""
    shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return repr(shown[:200]) + (f" ({len(shown)} characters)" if len(shown) > 200 else "")


def _json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """``text``, the JSON object a ``ycgym shard`` command wrote, or a :class:`RunError` naming ``what`` (the plan, a
    shard) and what is wrong with it (a runner that broke, a node out of disk)."""
    try:
        value = json.loads(text)
    except ValueError as e:
        raise RunError(f"{what}: the output of ycgym shard is not JSON ({e}): {_excerpt(text)}") from None
    if type(value) is not dict:
        raise RunError(f"{what}: the output of ycgym shard is {type(value).__name__}, not a JSON object: {_excerpt(text)}")
    return value


def _read_summary(path: Path) -> dict[str, dict[str, float]]:
    """The ``summary.json`` the merge wrote at ``path`` (an object of one object per policy), or a :class:`RunError`
    naming the file and what is wrong with it (missing, cut short, not JSON): the merge exited 0, so something else
    (a disk full, another process writing the folder) damaged it."""
    try:
        text = path.read_bytes()
    except OSError as e:
        raise RunError(f"merge: {path} cannot be read: {e.strerror or e}") from None
    try:
        value = json.loads(text)
    except ValueError as e:  # a JSONDecodeError, or bytes that are not UTF-8
        raise RunError(f"merge: {path} is not JSON ({e}): {_excerpt(text)}") from None
    if type(value) is not dict:
        raise RunError(f"merge: {path} is {type(value).__name__}, not a JSON object: {_excerpt(text)}")
    for policy, row in value.items():
        if type(row) is not dict:
            raise RunError(f"merge: {path} is malformed: {policy!r:.60} is not a JSON object: {_excerpt(text)}")
    return value


def plan_run(args: Sequence[str], command: Sequence[str] | None = None) -> dict[str, Any]:
    """``ycgym shard plan``: ``{"run_id", "preset", "policies", "jobs"}`` (raises :class:`RunError` on bad flags, or
    on an output that is not such an object)."""
    out = _cli(command or find_server_command(), ["shard", "plan", *args], "plan")
    plan = _json_object(out, "plan")
    jobs = plan.get("jobs")
    if type(jobs) is not int or jobs < 0:
        raise RunError(f"plan: the output of ycgym shard has no count of jobs ('jobs' is {jobs!r:.60}): {_excerpt(out)}")
    return plan


def _shard_episodes(reply: dict[str, Any], start: int, end: int) -> int:
    """The episodes of shard ``[start, end)`` its runner's reply says it wrote, or a :class:`RunError` naming the shard:
    the runner failed it (its message), or the reply is not a ``done`` of this shard with a count in ``[0, end - start]``."""
    what = f"shard [{start}, {end})"
    event = reply.get("event")
    if event == "error":
        message = reply.get("message")
        if type(message) is not str:
            raise RunError(f"{what}: the runner failed it with no message: {_excerpt(json.dumps(reply))}")
        raise RunError(f"{what}: {message}")
    if event != "done":
        raise RunError(f"{what}: the runner's reply is neither done nor error: {_excerpt(json.dumps(reply))}")
    got = (reply.get("start"), reply.get("end"))
    if type(got[0]) is not int or type(got[1]) is not int or got != (start, end):
        raise RunError(f"{what}: the runner's reply is for shard [{got[0]!r:.30}, {got[1]!r:.30}): {_excerpt(json.dumps(reply))}")
    episodes = reply.get("episodes")
    if type(episodes) is not int or not 0 <= episodes <= end - start:
        raise RunError(f"{what}: the runner's reply has no valid count of episodes ('episodes' is {episodes!r:.60})")
    return episodes


@ray.remote(num_cpus=1)
class ShardRunner:
    """A Ray actor owning one ``ycgym shard worker`` process; plays shards one at a time.

    If the runner process dies, the actor exits as if killed, so that Ray restarts it and retries the
    shard: an actor and its runner fail as one unit.
    """

    def __init__(self, args: Sequence[str], command: Sequence[str] | None = None) -> None:
        cmd = list(command) if command is not None else find_server_command()
        self._argv = [*cmd, "shard", "worker", *args]
        use_pdeathsig = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        self._proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_pdeathsig if use_pdeathsig else None,
        )
        self._stderr: collections.deque[str] = collections.deque(maxlen=50)
        threading.Thread(target=_drain, args=(self._proc.stderr, None, self._stderr), daemon=True).start()
        ready = self._reply("ycgym shard worker did not start")
        if ready.get("event") != "ready":
            raise RunError(f"ycgym shard worker did not start: {ready}")
        ctx = ray.get_runtime_context()
        self._node_id = ctx.get_node_id()
        self._actor_id = ctx.get_actor_id() or f"pid{os.getpid()}"
        # Scratch directories are named after the actor id, which survives restarts: a restarted actor
        # removes what its killed predecessor left.
        self._scratch = Path(tempfile.gettempdir()) / f"ycgym-ray-{self._actor_id}"
        for stale in self._scratch.parent.glob(f"{self._scratch.name}-*"):
            shutil.rmtree(stale, ignore_errors=True)

    def _reply(self, what: str, scratch: Path | None = None) -> dict[str, Any]:
        """The runner's next reply line, a JSON object (else a :class:`RunError` naming ``what``). A line its exit cut
        off (no newline) is its exit, as no line at all: the actor exits to be restarted."""
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.endswith(b"\n"):
            self._die("exited" if not line else "exited in the middle of a reply", scratch)
        return _json_object(line, what)

    def _die(self, what: str, scratch: Path | None) -> NoReturn:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        code = self._proc.wait()
        time.sleep(0.1)  # let the stderr reader catch the last lines
        tail = "\n".join(self._stderr).strip()
        sys.stderr.write(f"ycgym.ray: runner {' '.join(self._argv)} {what} (status {code}); restarting the actor\n{tail}\n")
        sys.stderr.flush()
        # An unexpected exit (not ray.actor.exit_actor): Ray restarts the actor and retries the shard.
        os._exit(1)

    def where(self) -> tuple[str, str, int, str]:
        """The actor's id, its node, its runner's process id and the path its scratch folders' names start with."""
        return self._actor_id, self._node_id, self._proc.pid, str(self._scratch)

    def run(self, start: int, end: int) -> ShardOutput:
        """Play jobs ``[start, end)`` and return the files written (its scratch directory is removed)."""
        assert self._proc.stdin is not None
        tmp = self._scratch.with_name(f"{self._scratch.name}-{start}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            try:
                self._proc.stdin.write((json.dumps({"start": start, "end": end, "out": str(tmp)}) + "\n").encode())
                self._proc.stdin.flush()
            except BrokenPipeError:
                self._die("closed its input", tmp)
            episodes = _shard_episodes(self._reply(f"shard [{start}, {end})", tmp), start, end)
            files = {p.relative_to(tmp).as_posix(): p.read_bytes() for p in sorted(tmp.rglob("*")) if p.is_file()}
            return ShardOutput(start, end, episodes, files, os.getpid(), self._proc.pid, self._actor_id, self._node_id)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _shard_ranges(jobs: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size, jobs)) for a in range(0, jobs, size)]


def run(
    policies: str | Sequence[str],
    seeds: str | Sequence[int],
    out: str | os.PathLike[str],
    *,
    preset: str = "default",
    max_steps: int | None = None,
    trajectories: bool = True,
    rollouts: bool = False,
    run_id: str | None = None,
    format: str = "arrow",
    compression: str = "zstd",
    address: str | None = None,
    num_workers: int | None = None,
    shard_size: int | None = None,
    max_retries: int = 3,
    progress: bool = False,
    on_shard: Callable[[ShardOutput], None] | None = None,
) -> RunReport:
    """Run baseline ``policies`` on ``seeds`` across a Ray cluster; write ``out`` as ``ycgym run`` would.

    Args:
        policies, seeds, preset, max_steps, trajectories, rollouts, run_id, format, compression: as the flags of
            ``ycgym run`` (``seeds`` as a list or in its syntax, e.g. ``"1-100"``; ``format``: ``"arrow"`` or
            ``"parquet"``; ``compression``: ``"zstd"`` or ``"none"``, the Arrow IPC files' buffers).
        address: a Ray cluster to connect to (``ray.init(address=...)``); without it a Ray already initialised
            in this process is used, else a local one is started with ``num_workers`` CPUs (all cores by
            default). A Ray this call starts is left running for later calls and stops at interpreter exit.
        num_workers: actors (one CPU each); default: the cluster's CPUs.
        shard_size: jobs per shard; default: about four shards per worker, 1..64 jobs each.
        max_retries: restarts per actor and retries per shard after an actor dies (application errors are
            not retried).
        progress: show a tqdm progress bar on stderr (per shard).
        on_shard: called on the driver with each shard's output as it arrives (before it is written).
    """
    t0 = time.perf_counter()
    out_dir = Path(out)
    command = find_server_command()
    args = run_args(
        policies, seeds, preset=preset, max_steps=max_steps, trajectories=trajectories, rollouts=rollouts, run_id=run_id, format=format, compression=compression
    )
    plan = plan_run(args, command)
    jobs = int(plan["jobs"])
    if num_workers is not None and num_workers < 1:
        raise RunError(f"num_workers must be >= 1, got {num_workers}")
    if shard_size is not None and shard_size < 1:
        raise RunError(f"shard_size must be >= 1, got {shard_size}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create the output folder {out_dir}: {e.strerror or e}") from None

    if not ray.is_initialized():
        # Left running, like ray.data's own auto-init: later Ray calls in this process (reading the output
        # with read_trajectories, another run) reuse it; it stops at interpreter exit.
        if address is not None:
            ray.init(address=address, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=num_workers or os.cpu_count() or 1, include_dashboard=False, logging_level=logging.WARNING)
    actors: list[Any] = []
    runners: dict[str, tuple[str, int, str]] = {}
    done = False
    staging = out_dir / STAGING
    try:
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
        workers = num_workers or max(1, int(cpus))
        workers = min(workers, jobs)
        size = shard_size or max(1, min(64, math.ceil(jobs / (4 * workers))))
        ranges = _shard_ranges(jobs, size)
        # Worker nodes find their own server as LocalServer does (YCGYM_NODE_ENTRY, the wheel's bundled one, a checkout, `ycgym` on PATH).
        actor_cls = ShardRunner.options(max_restarts=max_retries, max_task_retries=max_retries)  # type: ignore[attr-defined]
        actors = [actor_cls.remote(args) for _ in range(workers)]
        # Where each actor's runner writes, for the cleanup of a failed run (the runner's pid as last seen).
        try:
            where = ray.get([a.where.remote() for a in actors])
        except ray.exceptions.RayActorError as e:
            raise RunError(f"a worker could not start (max_retries={max_retries}): {e}") from e
        runners = {aid: (node, pid, prefix) for aid, node, pid, prefix in where}
        pool = ActorPool(actors)
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        bar = _progress_bar(jobs, progress)
        placements: list[tuple[int, int, int, int, str]] = []
        seen: set[int] = set()
        try:
            for shard in _results(pool, ranges, max_retries):
                if shard.start in seen:  # Ray hands each task's result over once; guard against a bug anyway
                    raise RunError(f"shard [{shard.start}, {shard.end}) arrived twice")
                seen.add(shard.start)
                if shard.actor_id in runners:
                    node, _, prefix = runners[shard.actor_id]
                    runners[shard.actor_id] = (node, shard.runner_pid, prefix)
                if on_shard is not None:
                    on_shard(shard)
                d = staging / f"{shard.start:09d}-{shard.end:09d}"
                for rel, data in shard.files.items():
                    p = d / rel
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_bytes(data)
                placements.append((shard.start, shard.end, shard.actor_pid, shard.runner_pid, shard.node_id))
                if bar is not None:
                    bar.update(shard.episodes)
        finally:
            if bar is not None:
                bar.close()
        merged = _cli(command, ["shard", "merge", *args, "--from", str(staging), "--out", str(out_dir)], "merge")
        summary = _read_summary(out_dir / "summary.json")
        table = merged.split("\n\n", 1)[0]
        files = [out_dir / f"trajectories.{format}"] if trajectories else []
        files += [out_dir / f"episodes.{format}", out_dir / "summary.json"]
        done = True
        return RunReport(summary, jobs, files, time.perf_counter() - t0, workers, len(ranges), table, placements)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001  # pragma: no cover - already gone
                pass
        if not done:
            _remove_scratch(runners.values())


def _remove_scratch(runners: Iterable[tuple[str, int, str]]) -> None:
    """After a failed run, remove what its actors' runners left in this node's temporary directory.

    An actor that dies while playing a shard (killed, or killed by the driver when the run failed) leaves that
    shard's scratch folder; a restarted actor removes its predecessor's, but a run that failed restarts none. Each
    runner (killed with its actor) is waited for, up to a few seconds, so that it writes nothing after the removal.
    Folders on other nodes are out of the driver's reach.
    """
    here = ray.get_runtime_context().get_node_id()
    deadline = time.monotonic() + 5.0
    for node, pid, prefix in runners:
        if node != here:
            continue
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        scratch = Path(prefix)
        for p in scratch.parent.glob(f"{scratch.name}-*"):
            shutil.rmtree(p, ignore_errors=True)


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (with /proc, a zombie, exited but not yet reaped, does not)."""
    if os.path.isdir("/proc/self"):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return False
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by another user
        return True
    return True


def _results(pool: ActorPool, ranges: list[tuple[int, int]], max_retries: int) -> Iterator[ShardOutput]:
    """Shard outputs in completion order; an actor lost for good becomes a :class:`RunError`."""
    it = pool.map_unordered(lambda a, r: a.run.remote(*r), ranges)
    while True:
        try:
            res = next(it)
        except StopIteration:
            return
        except ray.exceptions.ActorDiedError as e:
            raise RunError(f"a worker died and was not restarted (max_retries={max_retries}): {e}") from e
        yield res


def _progress_bar(total: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]

    return tqdm(total=total, unit="ep", desc="episodes", file=sys.stderr, dynamic_ncols=True)
