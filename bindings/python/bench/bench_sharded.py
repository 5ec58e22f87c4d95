"""Benchmark ShardedVectorEnv against the plain Discrete vector env (not a test).

A Discrete vector env of ``--envs`` sub-environments (64), each taking its first valid action (as bench_step.py's
``discrete_vector_env_steps_per_s``; episodes end and auto-reset as in training), built as the plain
``YCBenchDiscreteVectorEnv`` (one server: K=1) and as ``ShardedVectorEnv`` with each K of ``--servers`` (default 2;
``--servers 1``: the sharded env's own cost, ``K=1,sharded``).
The configurations run in alternating windows of ``--steps`` vector steps, ``--repeats`` times, so that a machine's
changing load falls on all of them alike; printed as JSON: the median env-steps/s of each, the ratio of each K to
K=1, ``os.cpu_count()`` and the load averages before and after. On a shared machine read the ratios, not the rates.

    .venv/bin/python bindings/python/bench/bench_sharded.py --servers 2 3 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", type=int, default=64, help="sub-environments (default 64)")
    ap.add_argument("--servers", type=int, nargs="+", default=[2], help="the K to measure against K=1 (default 2)")
    ap.add_argument("--steps", type=int, default=200, help="vector steps per window (default 200)")
    ap.add_argument("--repeats", type=int, default=7, help="windows per configuration (default 7; medians)")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--spin-us", type=int, default=None, help="YCGYM_SPIN_US for every client and server (default: theirs)")
    ap.add_argument("--shard-spin-us", type=int, default=None, help="also measure each K with ShardedVectorEnv(spin_us=this)")
    args = ap.parse_args()
    if args.spin_us is not None:
        os.environ["YCGYM_SPIN_US"] = str(args.spin_us)

    import ycgym  # after YCGYM_SPIN_US is set

    load_before = os.getloadavg()
    envs: dict[str, Any] = {"K=1": ycgym.YCBenchDiscreteVectorEnv(args.envs, preset=args.preset)}
    for k in args.servers:
        envs[f"K={k}" if k != 1 else "K=1,sharded"] = ycgym.ShardedVectorEnv(args.envs, servers=k, preset=args.preset)
        if args.shard_spin_us is not None:
            envs[f"K={k},spin_us={args.shard_spin_us}"] = ycgym.ShardedVectorEnv(args.envs, servers=k, preset=args.preset, spin_us=args.shard_spin_us)
    masks: dict[str, Any] = {}
    for name, env in envs.items():
        env.reset(seed=0)
        masks[name] = env.action_masks()
    rates: dict[str, list[float]] = {name: [] for name in envs}
    try:
        for _ in range(1 + args.repeats):  # the first round warms up (not counted)
            for name, env in envs.items():
                mask = masks[name]
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    mask = env.step(mask.argmax(axis=1))[4]["action_mask"]
                dt = time.perf_counter() - t0
                masks[name] = mask
                rates[name].append(args.envs * args.steps / dt)
    finally:
        for env in envs.values():
            env.close()
    med = {name: statistics.median(r[1:]) for name, r in rates.items()}
    out = {
        "envs": args.envs,
        "steps_per_window": args.steps,
        "repeats": args.repeats,
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "spin_us": os.environ.get("YCGYM_SPIN_US"),
        "env_steps_per_s": {name: round(v) for name, v in med.items()},
        "ratio_vs_k1": {name: round(v / med["K=1"], 3) for name, v in med.items() if name != "K=1"},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
