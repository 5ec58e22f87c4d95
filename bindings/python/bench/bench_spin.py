"""Benchmark the clients' spin-before-sleep wait under oversubscription (not a test).

``--procs`` lists how many Python processes step at once; each runs its own lockstep ``YCBenchEnv`` (the default local
server: a pipe to a child server, so N processes are 2N busy processes) and steps ``company status`` for ``--seconds``
after a common start. Each count runs with ``YCGYM_SPIN_US=0`` (every wait sleeps in the kernel) and with the default
spin, alternately, ``--repeats`` times; reported: the total steps per second of all processes (median over repeats)
per setting and their ratio (above 1: spinning is faster), and the machine's CPU count. Usage::

    YCGYM_NODE_ENTRY=dist/src/cli/main.js .venv/bin/python bindings/python/bench/bench_spin.py [--procs 1,2,4,8]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from typing import Any


def _worker(spin: str, seconds: float, ready: Any, go: Any, out: Any) -> None:
    if spin:
        os.environ["YCGYM_SPIN_US"] = spin
    else:
        os.environ.pop("YCGYM_SPIN_US", None)
    from ycgym import YCBenchEnv

    env = YCBenchEnv(reset_options={"stall_steps": 0})
    env.reset(seed=1)
    for _ in range(300):  # warm up the server's JIT and the caches
        env.step("company status")
    ready.release()
    go.wait()
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        env.step("company status")
        n += 1
    out.put(n / seconds)
    env.close()


def _run(procs: int, spin: str, seconds: float) -> float:
    ctx = mp.get_context("spawn")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(spin, seconds, ready, go, out)) for _ in range(procs)]
    for p in ps:
        p.start()
    for _ in ps:
        ready.acquire()
    go.set()
    total: float = sum(out.get() for _ in ps)
    for p in ps:
        p.join()
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="1,2,4,8", help="comma-separated process counts")
    ap.add_argument("--seconds", type=float, default=3.0, help="stepping time per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting (the median is reported)")
    a = ap.parse_args()
    counts = [int(x) for x in a.procs.split(",") if x.strip()]
    if not counts or any(c < 1 for c in counts):
        raise SystemExit("--procs: positive process counts, e.g. 1,2,4,8")
    rows = []
    for n in counts:
        runs: dict[str, list[float]] = {"sleeping": [], "spinning": []}
        for r in range(a.repeats):
            order = [("sleeping", "0"), ("spinning", "")] if r % 2 == 0 else [("spinning", ""), ("sleeping", "0")]
            for name, spin in order:
                runs[name].append(_run(n, spin, a.seconds))
        sleeping, spinning = statistics.median(runs["sleeping"]), statistics.median(runs["spinning"])
        rows.append(
            {
                "procs": n,
                "sleeping_steps_per_s": round(sleeping),
                "spinning_steps_per_s": round(spinning),
                "ratio_spinning_vs_sleeping": round(spinning / sleeping, 3),
                "runs": {k: [round(x) for x in v] for k, v in runs.items()},
            }
        )
    print(json.dumps({"cpus": os.cpu_count(), "seconds": a.seconds, "repeats": a.repeats, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
