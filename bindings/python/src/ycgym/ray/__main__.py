"""``python -m ycgym.ray run``: ``ycgym run`` across a Ray cluster (see :mod:`ycgym.ray.runner`).

Example::

    python -m ycgym.ray run --policy greedy,expert --seeds 1-1000 --out runs/big            # local Ray
    python -m ycgym.ray run --policy greedy --seeds 1-100000 --out runs/huge --address auto  # a cluster

Writes ``OUT/trajectories.arrow``, ``OUT/episodes.arrow`` and ``OUT/summary.json`` (byte-identical to
``ycgym run`` with the same flags) and prints the summary table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._argtypes import int_in
from .runner import RunError, run


def parser() -> argparse.ArgumentParser:
    """The command line (flags of ``ycgym run`` plus the Ray ones)."""
    p = argparse.ArgumentParser(prog="python -m ycgym.ray", description="ycgym on a Ray cluster")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser(
        "run",
        help="run baseline policies on many seeds across Ray actors; write the files of `ycgym run`",
        description="Run baseline policies on many seeds across Ray actors (one per worker, each owning a Node bulk runner); "
        "write OUT/trajectories.arrow, OUT/episodes.arrow and OUT/summary.json exactly as `ycgym run` does.",
    )
    # Same spelling as `ycgym run`; values are checked by its parser (`ycgym shard plan`).
    r.add_argument("--policy", required=True, help="comma-separated policies (greedy, random, throughput, prestige, expert)")
    r.add_argument("--seeds", default="1", help="seeds, e.g. 1-100 or 1,5,9 (default: 1)")
    r.add_argument(
        "--preset", "--config", dest="preset", default="default", help="preset name or TOML path (default: default); --config is an alias"
    )
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--max-steps", type=int_in(1), help="truncate each episode after this many actions")
    r.add_argument("--no-trajectories", dest="trajectories", action="store_false", help="skip OUT/trajectories.arrow")
    r.add_argument("--rollouts", action="store_true", help="also write the reference's rollout JSON per episode to OUT/rollouts/")
    r.add_argument("--run-id", help="run identifier stored in every row (default: derived from the parameters)")
    r.add_argument(
        "--format",
        choices=("arrow", "parquet"),
        default="arrow",
        help="table files: Arrow IPC (OUT/*.arrow, default) or zstd-compressed Parquet (OUT/*.parquet)",
    )
    r.add_argument(
        "--compression",
        choices=("zstd", "none"),
        default="zstd",
        help="Arrow IPC body compression: zstd (default; each buffer, as the Arrow format defines it) or none",
    )
    r.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    r.add_argument("--address", help="Ray cluster to connect to (e.g. auto, ray://head:10001); default: start a local Ray")
    r.add_argument("--num-workers", type=int_in(1), help="actors, one CPU each (default: the cluster's CPUs)")
    r.add_argument("--shard-size", type=int_in(1), help="episodes per shard (default: about 4 shards per worker, at most 64)")
    r.add_argument(
        "--max-retries", type=int_in(0), default=3, help="restarts per actor and retries per shard after an actor dies (default: 3)"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad flags or a failed run)."""
    o = parser().parse_args(argv)
    try:
        report = run(
            o.policy,
            o.seeds,
            o.out,
            preset=o.preset,
            max_steps=o.max_steps,
            trajectories=o.trajectories,
            rollouts=o.rollouts,
            run_id=o.run_id,
            format=o.format,
            compression=o.compression,
            address=o.address,
            num_workers=o.num_workers,
            shard_size=o.shard_size,
            max_retries=o.max_retries,
            progress=o.progress and sys.stderr.isatty(),
        )
    except RunError as e:
        sys.stderr.write(f"ycgym.ray: {e}\n")
        return 2
    sys.stdout.write(f"{report.table}\n\n")
    files = ", ".join(str(f) for f in report.files)
    sys.stdout.write(
        f"{report.episodes} episodes in {report.seconds:.1f} s on {report.num_workers} Ray workers ({report.shards} shards); wrote {files}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
