"""Files of ``ycgym run``: the Arrow step/episode tables and summary.json, read with pyarrow, polars and DuckDB.

Runs the TypeScript CLI (``node dist/src/cli/main.js run``) into a temporary directory; the Makefile
builds it before pytest runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
POLICIES = ["greedy", "random"]
SEEDS = [1, 2, 3]
GOLDEN_GREEDY = {1: 42029521, 2: 27129705, 3: -1630305}


def _entry() -> list[str]:
    node = shutil.which("node")
    assert node is not None, "node is required (the Makefile builds the TypeScript side before pytest)"
    main = Path(os.environ.get("YCGYM_NODE_ENTRY") or REPO / "dist" / "src" / "cli" / "main.js")
    assert main.exists(), f"{main} is missing: run `npm run build` (make test does)"
    return [node, str(main)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    entry = _entry()
    out = tmp_path_factory.mktemp("ycgym-run")
    cmd = [*entry, "run", "--policy", ",".join(POLICIES), "--seeds", "1-3", "--workers", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run with ``--compression none`` (plain Arrow IPC buffers)."""
    out = tmp_path_factory.mktemp("ycgym-run-plain")
    cmd = [*_entry(), "run", "--policy", ",".join(POLICIES), "--seeds", "1-3", "--workers", "1", "--compression", "none", "--out", str(out), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def test_zstd_compressed_by_default_and_equal_to_plain(run_dir: Path, plain_dir: Path) -> None:
    """The default files are Arrow IPC with zstd BodyCompression: pyarrow and polars read the rows of the plain run."""
    import polars as pl
    import pyarrow.ipc as ipc

    for name in ("trajectories.arrow", "episodes.arrow"):
        z = ipc.open_file(run_dir / name).read_all()
        p = ipc.open_file(plain_dir / name).read_all()
        assert z.equals(p) and z.schema.equals(p.schema, check_metadata=True)
        assert pl.read_ipc(run_dir / name).equals(pl.read_ipc(plain_dir / name))
    # Record batch messages name their compression: the compressed file is far smaller than the plain one.
    assert (run_dir / "trajectories.arrow").stat().st_size * 10 < (plain_dir / "trajectories.arrow").stat().st_size
    assert (run_dir / "summary.json").read_bytes() == (plain_dir / "summary.json").read_bytes()


STEP_COLUMNS = [
    "run_id", "episode_id", "policy", "preset", "seed", "step", "action", "observation_text", "ok", "exit_code",
    "command", "sim_time", "funds_cents", "monthly_payroll_cents", "runway_months", "prestige_research",
    "prestige_inference", "prestige_data_environment", "prestige_training", "active_tasks", "planned_tasks",
    "completed_tasks", "reward", "reward_cents", "terminated", "truncated", "is_first", "is_last", "sim_day",
    "days_left", "trust",
]
EPISODE_COLUMNS = [
    "run_id", "episode_id", "seed", "policy", "preset", "final_funds_cents", "outcome", "steps",
    "tasks_succeeded", "tasks_failed", "accepted_from_adversarial", "accepted_total",
]


def test_pyarrow_schema_and_rows(run_dir: Path) -> None:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    steps = ipc.open_file(run_dir / "trajectories.arrow").read_all()
    episodes = ipc.open_file(run_dir / "episodes.arrow").read_all()
    assert steps.column_names == STEP_COLUMNS
    assert episodes.column_names == EPISODE_COLUMNS
    for field in [*steps.schema, *episodes.schema]:
        assert not pa.types.is_dictionary(field.type), field
    assert steps.schema.field("observation_text").type == pa.string()
    assert steps.schema.field("action").nullable and not steps.schema.field("observation_text").nullable
    assert steps.schema.field("sim_time").type == pa.timestamp("us")
    assert steps.schema.field("funds_cents").type == pa.int64()
    assert steps.schema.metadata[b"ycgym.schema"] == b"steps"
    assert episodes.num_rows == len(POLICIES) * len(SEEDS)
    eps = episodes.to_pylist()
    assert [(e["policy"], e["seed"]) for e in eps] == [(p, s) for p in POLICIES for s in SEEDS]
    assert steps.num_rows == sum(e["steps"] + 1 for e in eps)
    for e in eps:
        if e["policy"] == "greedy":
            assert e["final_funds_cents"] == GOLDEN_GREEDY[e["seed"]]


def test_polars_episode_structure(run_dir: Path) -> None:
    import polars as pl

    df = pl.read_ipc(run_dir / "trajectories.arrow")
    per = df.group_by("episode_id").agg(
        pl.len().alias("rows"),
        pl.col("is_first").sum().alias("firsts"),
        pl.col("is_last").sum().alias("lasts"),
        pl.col("step").max().alias("max_step"),
        pl.col("action").null_count().alias("null_actions"),
    ).sort("episode_id")
    assert per["firsts"].to_list() == [1] * len(per)
    assert per["lasts"].to_list() == [1] * len(per)
    assert (per["rows"] == per["max_step"] + 1).all()
    assert per["null_actions"].to_list() == [1] * len(per)
    eps = pl.read_ipc(run_dir / "episodes.arrow").sort("episode_id")
    assert (eps["steps"] + 1).to_list() == per["rows"].to_list()
    first = df.filter(pl.col("is_first"))
    assert first["action"].is_null().all() and (first["reward_cents"] == 0).all()


def test_duckdb_queries(run_dir: Path) -> None:
    import duckdb
    import pyarrow.ipc as ipc

    steps = ipc.open_file(run_dir / "trajectories.arrow").read_all()  # noqa: F841 (DuckDB scans the local)
    episodes = ipc.open_file(run_dir / "episodes.arrow").read_all()  # noqa: F841
    con = duckdb.connect()
    rows = con.execute(
        "select e.policy, e.seed, e.final_funds_cents, s.funds_cents, count(*) over (partition by s.episode_id) "
        "from steps s join episodes e using (episode_id) where s.is_last order by e.episode_id"
    ).fetchall()
    assert len(rows) == len(POLICIES) * len(SEEDS)
    for policy, seed, final, last_funds, _ in rows:
        assert final == last_funds
        if policy == "greedy":
            assert final == GOLDEN_GREEDY[seed]
    row = con.execute("select sum(reward_cents) from steps where policy = 'greedy' and seed = 1").fetchone()
    assert row is not None
    (total,) = row
    assert total == GOLDEN_GREEDY[1] - 20_000_000


def test_summary_json(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert list(summary) == POLICIES
    keys = {
        "episodes", "mean_final_funds_cents", "median_final_funds_cents", "min_final_funds_cents",
        "max_final_funds_cents", "bankruptcies", "tasks_succeeded", "tasks_failed", "adversarial_accept_share",
    }
    for v in summary.values():
        assert set(v) == keys
        assert v["episodes"] == len(SEEDS)
    assert summary["greedy"]["min_final_funds_cents"] == -1630305
    assert summary["greedy"]["max_final_funds_cents"] == 42029521
    assert 0 <= summary["random"]["adversarial_accept_share"] <= 1


def test_python_schemas_equal_the_typescript_files(run_dir: Path) -> None:
    import pyarrow.ipc as ipc

    from ycgym.arrow import EPISODE_SCHEMA, STEP_SCHEMA

    steps = ipc.open_file(run_dir / "trajectories.arrow").schema
    episodes = ipc.open_file(run_dir / "episodes.arrow").schema
    assert steps.equals(STEP_SCHEMA, check_metadata=True)
    assert episodes.equals(EPISODE_SCHEMA, check_metadata=True)
