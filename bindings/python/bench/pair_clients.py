"""Two versions of this Python package side by side (not a test): the envs' and the client's step rates, paired.

``--a`` and ``--b`` are the ``src`` folders of two checkouts' Python packages (``OTHER/bindings/python/src``, or a
``git archive`` of one). Every round runs one child process per version, the order flipping every round (A first in
odd rounds), each with its folder first on ``PYTHONPATH`` (the child checks that ``ycgym`` came from there) and the
same server (``YCGYM_NODE_ENTRY`` or this package's, on ``--endpoint``). A child resets a ``YCBenchVectorEnv`` of
``--sessions`` sub-environments and as many ``Client`` sessions, warms up, then alternates windows of ``--steps``
vector env steps, ``--steps`` ``Client.step_batch`` calls of ``"company status"`` (one action for all, so both
versions run the same server work), and as many environment steps of a lockstep ``YCBenchEnv.step`` and of a lockstep
``Client.step`` (``env_step_per_s``, ``client_step_per_s``: what bench_step.py's ``ratio_env_step_vs_echo`` and
``ratio_client_step_vs_echo`` compare), ``env_step_replayed_per_s`` (a lockstep ``YCBenchEnv.step`` whose request is not
sent: its reply is a ``"company status"`` reply captured once, parsed again each step by ``orjson.loads``, so the rate
is that of the env's own work and the parse alone, without the transport or the server's turn), and reports each
workload's median rate over ``--windows`` windows
(environment steps per second). Machine load that changes between rounds hits both alike within a round: the result
is, per workload, the median of the per-round ratios B/A (above 1: B is faster) and each version's median rate.

Prints one JSON object. Usage::

    python bindings/python/bench/pair_clients.py --a /tmp/old/bindings/python/src --b bindings/python/src \\
        [--endpoint pipe|tcp://127.0.0.1:0] [--rounds 8] [--sessions 64] [--steps 100] [--windows 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ACTION = "company status"
WORKLOADS = ("vector_env_steps_per_s", "step_batch_env_steps_per_s", "env_step_per_s", "client_step_per_s", "env_step_replayed_per_s")


def child(endpoint: str, sessions: int, steps: int, windows: int) -> dict[str, object]:
    """One version's rates (run in a child process whose ``PYTHONPATH`` picks the version)."""
    import ycgym
    from ycgym import Client, LocalServer, YCBenchEnv, YCBenchVectorEnv

    options = {"stall_steps": 0}  # the action never moves time: no truncation after 200 such steps
    server = LocalServer(endpoint, args=["--max-sessions", str(4 * sessions + 8), "--max-sessions-per-client", str(2 * sessions + 8)])
    try:
        venv = YCBenchVectorEnv(sessions, endpoint=server.endpoint, reset_options=options)
        venv.reset(seed=0)
        client = Client(server.endpoint)
        entries = [(client.reset(seed, options=options)["session"], ACTION) for seed in range(sessions)]
        actions = (ACTION,) * sessions
        env = YCBenchEnv(endpoint=server.endpoint, reset_options=options)
        env.reset(seed=0)
        session = client.reset(0, options=options)["session"]
        # The replayed env: a real reset, then every step's reply parsed from one captured reply's bytes.
        import orjson

        renv = YCBenchEnv(endpoint=server.endpoint, reset_options=options)
        renv.reset(seed=0)
        captured = orjson.dumps(client.step(session, ACTION))
        renv._step_request = lambda _session, _action: orjson.loads(captured)  # type: ignore[method-assign,assignment]
        # A workload: (one call, the environment steps it takes); the lockstep ones run `sessions` times as many calls
        # per window as the batched ones, so each window takes as many environment steps.
        workloads: dict[str, tuple[Callable[[], object], int]] = {
            WORKLOADS[0]: (lambda: venv.step(actions), sessions),
            WORKLOADS[1]: (lambda: client.step_batch(entries), sessions),
            WORKLOADS[2]: (lambda: env.step(ACTION), 1),
            WORKLOADS[3]: (lambda: client.step(session, ACTION), 1),
            WORKLOADS[4]: (lambda: renv.step(ACTION), 1),
        }
        for fn, per in workloads.values():
            for _ in range(max(10, steps) * sessions // per):
                fn()
        rates: dict[str, list[float]] = {k: [] for k in workloads}
        for _ in range(windows):
            for name, (fn, per) in workloads.items():
                calls = steps * sessions // per
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                rates[name].append(calls * per / (time.perf_counter() - t0))
        env.close()
        renv.close()
        venv.close()
        client.close()
    finally:
        server.close()
    return {"ycgym": str(Path(ycgym.__file__).resolve().parent), **{k: statistics.median(v) for k, v in rates.items()}}


def run_child(src: str, a: argparse.Namespace) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    args = [sys.executable, __file__, "--child", "--endpoint", a.endpoint, "--sessions", str(a.sessions), "--steps", str(a.steps), "--windows", str(a.windows)]
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"pair_clients: the child for {src} failed:\n{out.stderr[-3000:]}")
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    where = Path(str(got["ycgym"]))
    if not where.is_relative_to(Path(src).resolve()):
        raise SystemExit(f"pair_clients: the child for {src} imported ycgym from {where} (is {src} a package's src folder?)")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", help="src folder of version A (holding ycgym/)")
    ap.add_argument("--b", help="src folder of version B")
    ap.add_argument("--endpoint", default="pipe", help="pipe (the envs' default on POSIX) or a ZeroMQ endpoint such as tcp://127.0.0.1:0")
    ap.add_argument("--rounds", type=int, default=8, help="rounds (each runs both versions once)")
    ap.add_argument("--sessions", type=int, default=64, help="sub-environments and step_batch sessions")
    ap.add_argument("--steps", type=int, default=100, help="calls per window")
    ap.add_argument("--windows", type=int, default=5, help="windows per workload per child (the median is its rate)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    for name in ("rounds", "sessions", "steps", "windows"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if a.child:
        print(json.dumps(child(a.endpoint, a.sessions, a.steps, a.windows)))
        return 0
    if not a.a or not a.b:
        ap.error("--a and --b are required")
    results: dict[str, list[dict[str, object]]] = {"a": [], "b": []}
    for r in range(a.rounds):
        for which in ("a", "b") if r % 2 == 0 else ("b", "a"):
            results[which].append(run_child(getattr(a, which), a))
    runs = []
    for w in WORKLOADS:
        ra = [float(x[w]) for x in results["a"]]  # type: ignore[arg-type]
        rb = [float(x[w]) for x in results["b"]]  # type: ignore[arg-type]
        ratios = [y / x for x, y in zip(ra, rb)]
        runs.append({"workload": w, "a_median": round(statistics.median(ra)), "b_median": round(statistics.median(rb)),
                     "ratio_b_over_a": round(statistics.median(ratios), 3), "round_ratios": [round(x, 3) for x in ratios]})
    print(json.dumps({"a": a.a, "b": a.b, "endpoint": a.endpoint, "rounds": a.rounds, "sessions": a.sessions, "steps": a.steps, "windows": a.windows, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
