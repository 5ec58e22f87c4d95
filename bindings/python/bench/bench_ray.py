"""Scaling of ``ycgym.ray.run`` on one machine: episodes/s for 1, 2, ... Ray workers, next to ``ycgym run``
with the same number of worker threads.

Usage (from the repository root, after ``make build py-install``)::

    .venv/bin/python bindings/python/bench/bench_ray.py --workers 1,2 --seeds 1-64 [--no-trajectories] [--repeat 3]

For each worker count it prints one JSON line and, at the end, a Markdown table with medians over the
repeats. Per Ray run: ``seconds`` (the whole call: actors, shards, merge), ``first_shard_s`` (until the first
shard arrives: actor and runner start-up plus one shard), ``steady_eps_per_s`` (episodes/s between the first
and the last shard), ``merge_s`` (last shard to the merged files). One local Ray serves every run (its own
start-up is reported once as ``ray_init_s``, not counted in the runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ray

import ycgym.ray as yr
from ycgym.server import find_server_command


def _ints(v: str) -> list[int]:
    return [int(x) for x in v.split(",") if x.strip()]


def ray_run(policy: str, seeds: str, workers: int, trajectories: bool, out: Path) -> dict[str, Any]:
    arrivals: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    report = yr.run(
        policy,
        seeds,
        out,
        num_workers=workers,
        trajectories=trajectories,
        on_shard=lambda s: arrivals.append((time.perf_counter(), s.episodes)),
    )
    t_end = time.perf_counter()
    first, last = arrivals[0][0], arrivals[-1][0]
    later = sum(n for _, n in arrivals[1:])
    return {
        "episodes": report.episodes,
        "shards": report.shards,
        "seconds": report.seconds,
        "eps_per_s": report.episodes / report.seconds,
        "first_shard_s": first - t0,
        "steady_eps_per_s": later / (last - first) if last > first else None,
        "merge_s": t_end - last,
    }


def thread_run(policy: str, seeds: str, workers: int, trajectories: bool, out: Path) -> dict[str, Any]:
    cmd = [
        *find_server_command(),
        "run",
        "--policy",
        policy,
        "--seeds",
        seeds,
        "--workers",
        str(workers),
        "--no-progress",
        "--out",
        str(out),
    ]
    if not trajectories:
        cmd.append("--no-trajectories")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    episodes = sum(v["episodes"] for v in json.loads((out / "summary.json").read_text()).values())
    return {"episodes": episodes, "seconds": seconds, "eps_per_s": episodes / seconds}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--workers", type=_ints, default=[1, 2], help="worker counts, e.g. 1,2,4 (default: 1,2)")
    p.add_argument("--seeds", default="1-64", help="seeds (default: 1-64)")
    p.add_argument("--policy", default="greedy", help="policies (default: greedy)")
    p.add_argument("--no-trajectories", dest="trajectories", action="store_false", help="episodes and summary only")
    p.add_argument("--repeat", type=int, default=1, help="runs per worker count (medians reported)")
    p.add_argument("--json", type=Path, help="also write the results to this file")
    o = p.parse_args()

    t0 = time.perf_counter()
    ray.init(num_cpus=max(o.workers), include_dashboard=False, logging_level=logging.WARNING)
    ray_init_s = time.perf_counter() - t0
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ycgym-bench-ray-") as tmp:
        for w in o.workers:
            for k in range(o.repeat):
                r = {"workers": w, "repeat": k, "cpus": os.cpu_count(), "trajectories": o.trajectories}
                r["ray"] = ray_run(o.policy, o.seeds, w, o.trajectories, Path(tmp) / f"ray-{w}-{k}")
                r["threads"] = thread_run(o.policy, o.seeds, w, o.trajectories, Path(tmp) / f"thr-{w}-{k}")
                print(json.dumps(r), flush=True)
                rows.append(r)
    ray.shutdown()

    def med(w: int, side: str, key: str) -> float:
        xs = [r[side][key] for r in rows if r["workers"] == w and r[side][key] is not None]
        return statistics.median(xs) if xs else float("nan")

    print(f"\nray_init_s: {ray_init_s:.1f}  seeds: {o.seeds}  policy: {o.policy}  trajectories: {o.trajectories}  repeats: {o.repeat}\n")
    print("| workers | Ray eps/s | Ray steady eps/s | first shard s | merge s | ycgym run eps/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in o.workers:
        print(
            f"| {w} | {med(w, 'ray', 'eps_per_s'):.1f} | {med(w, 'ray', 'steady_eps_per_s'):.1f} | {med(w, 'ray', 'first_shard_s'):.1f} "
            f"| {med(w, 'ray', 'merge_s'):.2f} | {med(w, 'threads', 'eps_per_s'):.1f} |"
        )
    if o.json:
        o.json.write_text(json.dumps({"ray_init_s": ray_init_s, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
