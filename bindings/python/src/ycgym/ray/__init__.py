"""ycgym on Ray (``pip install 'ycgym[ray]'``): bulk baseline runs across a cluster, and written runs as
``ray.data`` datasets.

* :func:`run` (``python -m ycgym.ray run``): ``ycgym run`` spread over Ray actors, one per worker, each
  owning a Node bulk runner; writes the same ``trajectories.arrow``, ``episodes.arrow`` and
  ``summary.json``, byte for byte, as ``ycgym run`` with the same flags. Actors that die are restarted and
  their shards retried by Ray.
* :func:`read_trajectories` / :func:`read_episodes`: the files of one or many runs as a
  :class:`ray.data.Dataset`.

Example::

    import ycgym.ray
    report = ycgym.ray.run("greedy,expert", "1-1000", "runs/big", num_workers=8)
    print(report.summary["greedy"]["mean_final_funds_cents"])
    ds = ycgym.ray.read_trajectories("runs/big")
    print(ds.groupby("policy").mean("reward").take_all())

See docs/ray.md.
"""

from __future__ import annotations

try:
    import ray as _ray  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("ycgym.ray needs Ray: pip install 'ycgym[ray]'") from e

from .data import YcgymFileDatasource, read_episodes, read_trajectories
from .runner import RunError, RunReport, ShardOutput, ShardRunner, plan_run, run, run_args

__all__ = [
    "RunError",
    "RunReport",
    "ShardOutput",
    "ShardRunner",
    "YcgymFileDatasource",
    "plan_run",
    "read_episodes",
    "read_trajectories",
    "run",
    "run_args",
]
