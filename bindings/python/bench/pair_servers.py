"""Two server builds side by side (not a test): CPU per ``Client.step`` of each, or ``step_batch`` rates, paired.

Starts one ``LocalServer`` per build (``--a`` and ``--b``: their ``dist/src/cli/main.js``) on the same transport, resets
one session on each, and steps both in turn with ``"company status"`` (one request in flight at a time, as
``bench_step.py``'s ``client_step``), so whatever else loads the machine hits both alike. The order flips every
window (A first in even windows, B first in odd ones). Per window, each server's CPU per step is read from Linux's
``/proc/PID/task/TID/schedstat``: its main thread (the event loop) and all its threads. Prints one line per window,
then one JSON line: the median CPU of each and the geometric mean over the windows of the ratios A/B (above 1: B
spends less).

With ``--batch N``, each server gets N sessions and every call is one ``Client.step_batch`` of N ``"company status"``
(as ``bench_step.py``'s ``step_batch_env_steps_per_s`` with ``--sessions N``; the client splits as it does by default):
``--steps`` batches per server per window, CPU per environment step, and each server's rate (environment steps per
second of the time its own calls took), with the median of the per-window rate ratios B/A (above 1: B is faster).
``--binary`` sends them as ``Client.step_batch_arrays`` (the binary reply, as ``bench_step.py``'s
``step_batch_arrays``).

With ``--discrete N``, each server serves a ``YCBenchDiscreteVectorEnv`` of N masked envs (the RL training path,
binary replies), every env taking its first valid action, episodes ending and auto-resetting with fresh seeds as in
training (as ``bench_step.py``'s ``discrete_vector_env_steps_per_s``): ``--steps`` vector steps per server per window,
each server's rate and CPU per environment step, paired as above. This measures what a fresh world costs a training
loop (a reset generates one), which ``--batch`` does not.

    python bindings/python/bench/pair_servers.py --a ../base/dist/src/cli/main.js --b dist/src/cli/main.js \\
        [--endpoint pipe|tcp://127.0.0.1:0] [--windows 10] [--steps 2000] [--batch 64 [--binary] | --discrete 64] [--node-options-a ...] [--node-options-b ...]
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import math
import statistics
import time
from collections.abc import Callable

from ycgym.client import Client
from ycgym.discrete_vector import YCBenchDiscreteVectorEnv
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
    ap.add_argument("--batch", type=int, default=0, help="sessions per step_batch (0: lockstep steps)")
    ap.add_argument("--binary", action="store_true", help="with --batch: binary replies (Client.step_batch_arrays)")
    ap.add_argument("--discrete", type=int, default=0, help="masked envs per YCBenchDiscreteVectorEnv (0: plain steps)")
    ap.add_argument("--node-options-a", default=None, help="NODE_OPTIONS of server A")
    ap.add_argument("--node-options-b", default=None, help="NODE_OPTIONS of server B")
    a = ap.parse_args()
    env_a = {"NODE_OPTIONS": a.node_options_a} if a.node_options_a else None
    env_b = {"NODE_OPTIONS": a.node_options_b} if a.node_options_b else None
    if a.batch < 0:
        ap.error("--batch must be >= 0")
    if a.binary and a.batch == 0:
        ap.error("--binary needs --batch")
    if a.discrete < 0 or (a.discrete and a.batch):
        ap.error("--discrete must be >= 0 and goes without --batch")
    n = max(1, a.batch, a.discrete)
    with LocalServer(a.endpoint, entry=a.a, env=env_a) as sa, LocalServer(a.endpoint, entry=a.b, env=env_b) as sb:
        ca, cb = Client(sa.endpoint), Client(sb.endpoint)
        xa = [ca.reset(i + 1, options={"stall_steps": 0})["session"] for i in range(max(1, a.batch))]
        xb = [cb.reset(i + 1, options={"stall_steps": 0})["session"] for i in range(max(1, a.batch))]

        envs: list[YCBenchDiscreteVectorEnv] = []

        def discrete(endpoint: str, seed: int) -> Callable[[], object]:
            env = YCBenchDiscreteVectorEnv(num_envs=a.discrete, endpoint=endpoint)
            envs.append(env)
            info = env.reset(seed=seed)[1]

            def step() -> None:
                nonlocal info
                info = env.step(info["action_mask"].argmax(axis=1))[4]

            return step

        def caller(c: Client, sessions: list[str]) -> Callable[[], object]:
            if a.discrete:
                # The same seeds on both servers: they play the same episodes.
                return discrete(c.endpoint, 1000)
            if a.batch == 0:
                return functools.partial(c.step, sessions[0], ACTION)
            return functools.partial(c.step_batch_arrays if a.binary else c.step_batch, [(x, ACTION) for x in sessions])

        fa, fb = caller(ca, xa), caller(cb, xb)
        warmup = a.warmup if n == 1 else max(1, a.warmup // n)
        for _ in range(warmup):
            fa()
            fb()
        main_a: list[float] = []
        main_b: list[float] = []
        r_main: list[float] = []
        r_all: list[float] = []
        rate_a: list[float] = []
        rate_b: list[float] = []
        for w in range(a.windows):
            a0, b0 = thread_ns(sa.pid), thread_ns(sb.pid)
            spent = {"a": 0.0, "b": 0.0}
            first, second = (("a", fa), ("b", fb)) if w % 2 == 0 else (("b", fb), ("a", fa))
            clock = time.perf_counter
            for _ in range(a.steps):
                t0 = clock()
                first[1]()
                t1 = clock()
                second[1]()
                t2 = clock()
                spent[first[0]] += t1 - t0
                spent[second[0]] += t2 - t1
            a1, b1 = thread_ns(sa.pid), thread_ns(sb.pid)
            env_steps = a.steps * (n if a.batch or a.discrete else 1)
            (am, at), (bm, bt) = per_step(a0, a1, env_steps), per_step(b0, b1, env_steps)
            main_a.append(am)
            main_b.append(bm)
            r_main.append(am / bm)
            r_all.append(at / bt)
            rate_a.append(env_steps / spent["a"])
            rate_b.append(env_steps / spent["b"])
            print(f"window {w}: A main {am:6.1f} all {at:6.1f} | B main {bm:6.1f} all {bt:6.1f} us/step | A {rate_a[-1]:8.0f} B {rate_b[-1]:8.0f} steps/s", flush=True)
        for env in envs:
            env.close()
        ca.close()
        cb.close()
    out = {
        "endpoint": a.endpoint,
        "windows": a.windows,
        "steps": a.steps,
        "batch": a.batch,
        "binary": a.binary,
        "discrete": a.discrete,
        "a_main_cpu_us_per_step": round(statistics.median(main_a), 2),
        "b_main_cpu_us_per_step": round(statistics.median(main_b), 2),
        "ratio_main_a_over_b": round(geomean(r_main), 3),
        "ratio_all_threads_a_over_b": round(geomean(r_all), 3),
        "a_env_steps_per_s": round(statistics.median(rate_a)),
        "b_env_steps_per_s": round(statistics.median(rate_b)),
        "ratio_rate_b_over_a": round(statistics.median([y / x for x, y in zip(rate_a, rate_b)]), 3),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
