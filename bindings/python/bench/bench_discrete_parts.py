"""Where an env step of the masked RL path goes (not a test): ``YCBenchDiscreteVectorEnv`` on its own server.

Steps ``--envs`` masked envs, each taking its first valid action (as ``bench_step.py``'s
``discrete_vector_env_steps_per_s``: episodes end and auto-reset with fresh worlds), for ``--steps`` vector steps after
``--warmup``, and splits an env step's time and CPU:

* ``wall_us_per_env_step`` (and ``env_steps_per_s``); ``client_wait_us_per_env_step``: wall time this process spent
  waiting for replies (spinning or asleep); ``client_send_us_per_env_step``: wall time in sending requests (over
  ZeroMQ a send may hand the CPU to the I/O threads); ``client_work_us_per_env_step``: the rest (the env's Python work:
  decoding, masks, frames, infos, automatic-reset handling, and the bench's ``argmax``).
* ``client_main_cpu_us_per_env_step``: this thread's CPU (``time.thread_time``: the work above and the spinning wait).
* ``server_main_cpu_us_per_env_step`` / ``server_other_cpu_us_per_env_step``: the server's main thread (the event loop)
  and its other threads (ZeroMQ's I/O thread, V8's helpers), from Linux's ``/proc/PID/task/TID/schedstat`` (null
  elsewhere).
* ``env_steps_per_episode``: env steps per episode end at this policy (how often a fresh world is made).
* ``fresh_reset_*``: the same measures per sub-environment reset of ``env.reset(seed=...)`` with seeds no reset used
  before (``--resets`` calls of ``--envs`` resets each: a world generated for each), and
  ``reset_share_of_server_main``: that server CPU per reset times the episode ends per env step, over the server's
  CPU per env step (what a fresh world costs a training loop, the GC it causes included).

Prints one JSON object. Usage::

    YCGYM_NODE_ENTRY=dist/src/cli/main.js .venv/bin/python bindings/python/bench/bench_discrete_parts.py \\
        [--envs 64] [--steps 600] [--warmup 100] [--resets 20] [--endpoint tcp://127.0.0.1:0|pipe]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from pair_servers import thread_ns  # this folder's: a script's own folder is on its path

from ycgym import YCBenchDiscreteVectorEnv
from ycgym.server import LocalServer


def thread_cpu_ns(pid: int) -> tuple[int, int] | None:
    """The main thread's and the other threads' on-CPU nanoseconds of process ``pid`` (None without ``/proc``)."""
    threads = thread_ns(pid)
    if not threads:
        return None
    main = sum(ns for name, ns in threads.values() if name == "MainThread")
    return main, sum(ns for _, ns in threads.values()) - main


def per(x: float | None, n: int, scale: float) -> float | None:
    return None if x is None else round(x / n * scale, 2)


def timed(acc: dict[str, float], key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding its wall time to ``acc[key]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += time.perf_counter() - t

    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=600, help="vector steps measured")
    ap.add_argument("--warmup", type=int, default=100, help="vector steps before (the server's JIT, caches)")
    ap.add_argument("--resets", type=int, default=20, help="env.reset calls with fresh seeds measured")
    ap.add_argument("--endpoint", default="tcp://127.0.0.1:0", help='"pipe" or a ZeroMQ endpoint for the local server')
    a = ap.parse_args()
    if a.envs < 1 or a.steps < 1 or a.warmup < 0 or a.resets < 1:
        ap.error("--envs, --steps and --resets must be positive, --warmup non-negative")
    with LocalServer(a.endpoint) as server:
        env = YCBenchDiscreteVectorEnv(num_envs=a.envs, endpoint=server.endpoint)
        try:
            client = env.client
            acc = {"wait": 0.0, "send": 0.0}
            # Instance attributes over the client's own methods: every reply waited for, every request sent.
            setattr(client, "_recv_reply", timed(acc, "wait", client._recv_reply))  # noqa: B010
            setattr(client, "_send_payload", timed(acc, "send", client._send_payload))  # noqa: B010
            info = env.reset(seed=1000)[1]
            for _ in range(a.warmup):
                info = env.step(info["action_mask"].argmax(axis=1))[4]
            acc["wait"] = acc["send"] = 0.0
            ends = 0
            s0, c0, t0 = thread_cpu_ns(server.pid), time.thread_time(), time.perf_counter()
            for _ in range(a.steps):
                _, _, term, trunc, info = env.step(info["action_mask"].argmax(axis=1))
                ends += int((term | trunc).sum())
            t1, c1, s1 = time.perf_counter(), time.thread_time(), thread_cpu_ns(server.pid)
            waited, sending = acc["wait"], acc["send"]
            n = a.steps * a.envs
            wall = t1 - t0
            smain = None if s0 is None or s1 is None else s1[0] - s0[0]
            sother = None if s0 is None or s1 is None else s1[1] - s0[1]
            # Fresh worlds: seeds far from those the steps drew (the server caches worlds it meets twice).
            r0, rc0, rt0 = thread_cpu_ns(server.pid), time.thread_time(), time.perf_counter()
            for k in range(a.resets):
                env.reset(seed=10**12 + k * a.envs)
            rt1, rc1, r1 = time.perf_counter(), time.thread_time(), thread_cpu_ns(server.pid)
        finally:
            env.close()
    nr = a.resets * a.envs
    rmain = None if r0 is None or r1 is None else r1[0] - r0[0]
    rother = None if r0 is None or r1 is None else r1[1] - r0[1]
    main_per_step = per(smain, n, 1e-3)
    main_per_reset = per(rmain, nr, 1e-3)
    out = {
        "endpoint": a.endpoint,
        "envs": a.envs,
        "steps": a.steps,
        "env_steps_per_s": round(n / wall),
        "wall_us_per_env_step": per(wall, n, 1e6),
        "client_wait_us_per_env_step": per(waited, n, 1e6),
        "client_send_us_per_env_step": per(sending, n, 1e6),
        "client_work_us_per_env_step": per(wall - waited - sending, n, 1e6),
        "client_main_cpu_us_per_env_step": per(c1 - c0, n, 1e6),
        "server_main_cpu_us_per_env_step": main_per_step,
        "server_other_cpu_us_per_env_step": per(sother, n, 1e-3),
        "env_steps_per_episode": round(n / ends, 1) if ends else None,
        "fresh_reset_wall_us": per(rt1 - rt0, nr, 1e6),
        "fresh_reset_client_main_cpu_us": per(rc1 - rc0, nr, 1e6),
        "fresh_reset_server_main_cpu_us": main_per_reset,
        "fresh_reset_server_other_cpu_us": per(rother, nr, 1e-3),
        "reset_share_of_server_main": None
        if main_per_reset is None or not main_per_step or not ends
        else round(main_per_reset * ends / n / main_per_step, 3),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
