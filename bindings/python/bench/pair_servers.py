"""Two server builds side by side on the lockstep path (not a test): CPU per ``Client.step`` of each, paired.

Starts one ``LocalServer`` per build (``--a`` and ``--b``: their ``dist/src/cli/main.js``) on the same transport, resets
one session on each, and steps both in turn with ``"company status"`` (one request in flight at a time, as
``bench_step.py``'s ``client_step``), so whatever else loads the machine hits both alike. The order flips every
window (A first in even windows, B first in odd ones). Per window, each server's CPU per step is read from Linux's
``/proc/PID/task/TID/schedstat``: its main thread (the event loop) and all its threads. Prints one line per window,
then one JSON line: the median CPU of each and the geometric mean over the windows of the ratios A/B (above 1: B
spends less).

    python bindings/python/bench/pair_servers.py --a ../base/dist/src/cli/main.js --b dist/src/cli/main.js \\
        [--endpoint pipe|tcp://127.0.0.1:0] [--windows 10] [--steps 2000] [--node-options-a ...] [--node-options-b ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import statistics

from ycgym.client import Client
from ycgym.server import LocalServer

ACTION = "company status"


def thread_ns(pid: int) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(t + "/comm") as f:
                name = f.read().strip()
            with open(t + "/schedstat") as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue
        out[t] = (name, ns)
    return out


def per_step(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]], n: int) -> tuple[float, float]:
    """Main-thread and all-thread CPU in microseconds per step."""
    main = sum(v[1] - before.get(k, (v[0], 0))[1] for k, v in after.items() if v[0] == "MainThread")
    total = sum(v[1] - before.get(k, (v[0], 0))[1] for k, v in after.items())
    return main / n / 1000, total / n / 1000


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="main.js of build A")
    ap.add_argument("--b", required=True, help="main.js of build B")
    ap.add_argument("--endpoint", default="pipe", help="pipe (default) or tcp://127.0.0.1:0")
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2000, help="steps of each server per window")
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--node-options-a", default=None, help="NODE_OPTIONS of server A")
    ap.add_argument("--node-options-b", default=None, help="NODE_OPTIONS of server B")
    a = ap.parse_args()
    env_a = {"NODE_OPTIONS": a.node_options_a} if a.node_options_a else None
    env_b = {"NODE_OPTIONS": a.node_options_b} if a.node_options_b else None
    with LocalServer(a.endpoint, entry=a.a, env=env_a) as sa, LocalServer(a.endpoint, entry=a.b, env=env_b) as sb:
        ca, cb = Client(sa.endpoint), Client(sb.endpoint)
        xa = ca.reset(1, options={"stall_steps": 0})["session"]
        xb = cb.reset(1, options={"stall_steps": 0})["session"]
        for _ in range(a.warmup):
            ca.step(xa, ACTION)
            cb.step(xb, ACTION)
        main_a: list[float] = []
        main_b: list[float] = []
        r_main: list[float] = []
        r_all: list[float] = []
        for w in range(a.windows):
            a0, b0 = thread_ns(sa.pid), thread_ns(sb.pid)
            first, second = ((ca, xa), (cb, xb)) if w % 2 == 0 else ((cb, xb), (ca, xa))
            for _ in range(a.steps):
                first[0].step(first[1], ACTION)
                second[0].step(second[1], ACTION)
            a1, b1 = thread_ns(sa.pid), thread_ns(sb.pid)
            (am, at), (bm, bt) = per_step(a0, a1, a.steps), per_step(b0, b1, a.steps)
            main_a.append(am)
            main_b.append(bm)
            r_main.append(am / bm)
            r_all.append(at / bt)
            print(f"window {w}: A main {am:6.1f} all {at:6.1f} | B main {bm:6.1f} all {bt:6.1f} us/step", flush=True)
        ca.close()
        cb.close()
    print(
        json.dumps(
            {
                "endpoint": a.endpoint,
                "windows": a.windows,
                "steps": a.steps,
                "a_main_cpu_us_per_step": round(statistics.median(main_a), 1),
                "b_main_cpu_us_per_step": round(statistics.median(main_b), 1),
                "ratio_main_a_over_b": round(geomean(r_main), 3),
                "ratio_all_threads_a_over_b": round(geomean(r_all), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
