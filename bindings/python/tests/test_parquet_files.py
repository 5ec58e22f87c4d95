"""``ycgym run --format parquet``: the Parquet step/episode tables hold exactly the rows of the Arrow IPC files
(same run, ``--format arrow``), read back with pyarrow, polars and DuckDB without any extension; zstd
compression; ``ycgym.arrow.read_trajectories(dir)`` reads only the step table of a run directory; the README's
DuckDB query runs as written.

Runs the TypeScript CLI (``node dist/src/cli/main.js run``); the Makefile builds it before pytest runs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_arrow_files import GOLDEN_GREEDY, POLICIES, SEEDS, _entry

pa = pytest.importorskip("pyarrow")
import pyarrow.ipc as ipc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def _run(out: Path, *extra: str) -> None:
    cmd = [*_entry(), "run", "--policy", ",".join(POLICIES), "--seeds", "1-3", "--workers", "2", "--out", str(out), "--no-progress", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same run written as Arrow IPC with plain buffers (``--compression none``; the default zstd-compressed files
    hold the same rows: test_arrow_files.py) and as Parquet."""
    arrow = tmp_path_factory.mktemp("run-arrow")
    parquet = tmp_path_factory.mktemp("run-parquet")
    _run(arrow, "--compression", "none")
    _run(parquet, "--format", "parquet")
    return arrow, parquet


def _arrow(d: Path, table: str) -> Any:  # a pyarrow Table (pyarrow is imported by importorskip: a value to mypy)
    return ipc.open_file(d / f"{table}.arrow").read_all()


def test_parquet_files_hold_the_arrow_rows_pyarrow(runs: tuple[Path, Path]) -> None:
    arrow, parquet = runs
    assert sorted(p.name for p in parquet.iterdir()) == ["episodes.parquet", "summary.json", "trajectories.parquet"]
    assert (parquet / "summary.json").read_bytes() == (arrow / "summary.json").read_bytes()
    for table in ("trajectories", "episodes"):
        want = _arrow(arrow, table)
        got = pq.read_table(parquet / f"{table}.parquet")
        # Same schema (types, nullability and the ycgym.schema metadata), same rows.
        assert got.schema.equals(want.schema, check_metadata=True), table
        assert got.equals(want), table
        meta = pq.ParquetFile(parquet / f"{table}.parquet").metadata
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                assert meta.row_group(rg).column(c).compression == "ZSTD"
    steps = pq.read_table(parquet / "trajectories.parquet")
    text = steps.column("observation_text")
    assert text.type == pa.string() and not pa.types.is_dictionary(text.type)
    # Compressed: the texts (most of the bytes) shrink by far more than 10x.
    assert (parquet / "trajectories.parquet").stat().st_size * 10 < (arrow / "trajectories.arrow").stat().st_size


def test_parquet_rows_with_polars(runs: tuple[Path, Path]) -> None:
    import polars as pl

    arrow, parquet = runs
    for table in ("trajectories", "episodes"):
        got = pl.read_parquet(parquet / f"{table}.parquet")
        want = pl.read_ipc(arrow / f"{table}.arrow")
        assert got.schema == want.schema
        assert got.equals(want), table


def test_parquet_rows_with_duckdb(runs: tuple[Path, Path]) -> None:
    import duckdb

    arrow, parquet = runs
    con = duckdb.connect()
    steps_pq = con.execute(f"select * from read_parquet('{parquet / 'trajectories.parquet'}') order by episode_id, step").fetchall()
    want = _arrow(arrow, "trajectories")  # DuckDB scans the local by its name
    steps_ipc = con.execute("select * from want order by episode_id, step").fetchall()
    assert len(steps_pq) == want.num_rows
    assert steps_pq == steps_ipc
    rows = con.execute(
        f"select policy, seed, final_funds_cents from '{parquet / 'episodes.parquet'}' order by episode_id"
    ).fetchall()
    assert [(p, s) for p, s, _ in rows] == [(p, s) for p in POLICIES for s in SEEDS]
    for policy, seed, final in rows:
        if policy == "greedy":
            assert final == GOLDEN_GREEDY[seed]


def test_read_trajectories_of_a_run_directory(runs: tuple[Path, Path]) -> None:
    from ycgym.arrow import STEP_SCHEMA, read_trajectories

    arrow, parquet = runs
    want = _arrow(arrow, "trajectories")
    for d in (arrow, parquet):
        got = read_trajectories(d)
        # The step rows only: episodes.arrow/.parquet is not mixed in (no rows of nulls).
        assert got.num_rows == want.num_rows, d
        assert got.schema.equals(STEP_SCHEMA, check_metadata=True)
        assert got.equals(want), d
    # A directory holding both formats of the same table reads it once.
    both = parquet.parent / "both-formats"
    both.mkdir(exist_ok=True)
    for f in [*arrow.iterdir(), *parquet.iterdir()]:
        (both / f.name).write_bytes(f.read_bytes())
    assert read_trajectories(both).equals(want)


def test_write_trajectories_parquet_is_zstd(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    from ycgym.arrow import read_trajectories, write_trajectories

    arrow, _ = runs
    want = _arrow(arrow, "trajectories")
    p = write_trajectories(want, tmp_path / "t.parquet")
    assert pq.ParquetFile(p).metadata.row_group(0).column(7).compression == "ZSTD"
    assert read_trajectories(p).equals(want)


def test_readme_duckdb_example_runs(runs: tuple[Path, Path]) -> None:
    """The README's DuckDB line over Parquet runs as written (DIR replaced by a run directory)."""
    import duckdb

    _, parquet = runs
    readme = (REPO / "README.md").read_text()
    m = re.search(r"duckdb\.sql\(\"(select [^\"]*'DIR/episodes\.parquet'[^\"]*)\"\)", readme)
    assert m, "README.md shows a duckdb.sql(...) query over DIR/episodes.parquet"
    rel = duckdb.sql(m.group(1).replace("DIR/", f"{parquet}/"))
    assert rel is not None
    rows = rel.fetchall()
    assert sorted(r[0] for r in rows) == sorted(POLICIES)


def test_sim_day_and_days_left_equal_the_python_observation(runs: tuple[Path, Path]) -> None:
    """The exporter's ``sim_day``/``days_left`` are the observation's, bit for bit, and ``record_episode``'s too:
    replay the first actions of greedy seed 1 in the Python env."""
    from ycgym import YCBenchEnv
    from ycgym.arrow import record_episode

    _, parquet = runs
    steps = pq.read_table(parquet / "trajectories.parquet").to_pylist()
    ep = [r for r in steps if r["policy"] == "greedy" and r["seed"] == 1][:60]
    assert ep[0]["sim_day"] == 0.0 and ep[-1]["sim_day"] > 1.0
    env = YCBenchEnv()
    try:
        obs, _ = env.reset(seed=1)
        assert float(obs["sim_day"]) == ep[0]["sim_day"] and float(obs["days_left"]) == ep[0]["days_left"]
        for row in ep[1:]:
            obs, *_ = env.step(row["action"])
            assert (float(obs["sim_day"]), float(obs["days_left"])) == (row["sim_day"], row["days_left"]), row["step"]
        actions = [r["action"] for r in ep[1:]]
        rec = record_episode(env, lambda o, i: actions.pop(0) if actions else None, seed=1)
        assert [(r["sim_day"], r["days_left"]) for r in rec] == [(r["sim_day"], r["days_left"]) for r in ep]
    finally:
        env.close()


def _trust_pairs(value: Any) -> list[tuple[str, float]]:
    """A ``trust`` cell as read by pyarrow, polars or DuckDB (a list of ``{client, trust}``) as pairs."""
    return [(item["client"], item["trust"]) for item in value]


def _trust_by_reader(parquet_file: Path, seed: int, ipc_file: Path | None = None) -> dict[str, list[list[tuple[str, float]]]]:
    """The ``trust`` column of greedy seed ``seed``'s rows, in step order, read by pyarrow, polars and DuckDB from
    ``parquet_file`` (and by pyarrow and polars from ``ipc_file``)."""
    import duckdb
    import polars as pl
    import pyarrow.compute as pc

    where = f"policy = 'greedy' and seed = {int(seed)}"
    out: dict[str, list[list[tuple[str, float]]]] = {}
    t = pq.read_table(parquet_file)
    t = t.filter(pc.and_(pc.equal(t["policy"], "greedy"), pc.equal(t["seed"], seed))).sort_by("step")
    out["pyarrow"] = [_trust_pairs(v) for v in t.column("trust").to_pylist()]
    df = pl.read_parquet(parquet_file).filter((pl.col("policy") == "greedy") & (pl.col("seed") == seed)).sort("step")
    assert df.schema["trust"] == pl.List(pl.Struct({"client": pl.String, "trust": pl.Float64}))
    out["polars"] = [_trust_pairs(v) for v in df["trust"].to_list()]
    con = duckdb.connect()
    assert con.execute(f"select typeof(trust) from read_parquet('{parquet_file}') limit 1").fetchone() == ("STRUCT(client VARCHAR, trust DOUBLE)[]",)
    rows = con.execute(f"select trust from read_parquet('{parquet_file}') where {where} order by step").fetchall()
    out["duckdb"] = [_trust_pairs(r[0]) for r in rows]
    if ipc_file is not None:
        t = ipc.open_file(ipc_file).read_all()
        t = t.filter(pc.and_(pc.equal(t["policy"], "greedy"), pc.equal(t["seed"], seed))).sort_by("step")
        out["pyarrow ipc"] = [_trust_pairs(v) for v in t.column("trust").to_pylist()]
        df = pl.read_ipc(ipc_file).filter((pl.col("policy") == "greedy") & (pl.col("seed") == seed)).sort("step")
        out["polars ipc"] = [_trust_pairs(v) for v in df["trust"].to_list()]
    return out


def test_trust_column_equals_the_env_info_trust(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """``trust`` holds every client's trust after the step in client-name order, exactly the env's
    ``info["status"]["trust"]`` at the same step: the exporter's Parquet and Arrow files read by pyarrow, polars
    and DuckDB (replaying greedy seed 1 in the Python env), and ``record_episode``'s rows written by
    ``write_trajectories``."""
    from ycgym import YCBenchEnv
    from ycgym.arrow import record_episode, steps_to_table, write_trajectories

    arrow, parquet = runs
    ep = [r for r in pq.read_table(parquet / "trajectories.parquet").to_pylist() if r["policy"] == "greedy" and r["seed"] == 1][:150]
    env = YCBenchEnv()
    try:
        _, info = env.reset(seed=1)
        want = [list(info["status"]["trust"].items())]
        for row in ep[1:]:
            _, _, _, _, info = env.step(row["action"])
            want.append(list(info["status"]["trust"].items()))
        actions = [r["action"] for r in ep[1:]]
        rec = record_episode(env, lambda o, i: actions.pop(0) if actions else None, seed=1, policy_name="greedy")
    finally:
        env.close()
    names = [c for c, _ in want[0]]
    assert len(names) >= 2 and names == sorted(names)
    assert len({tuple(w) for w in want}) > 1, "trust changes during the replayed steps"
    n = len(want)
    for reader, got in _trust_by_reader(parquet / "trajectories.parquet", 1, arrow / "trajectories.arrow").items():
        assert got[:n] == want, reader
    assert [_trust_pairs(r["trust"]) for r in rec] == want
    table = steps_to_table(rec)
    write_trajectories(table, tmp_path / "rec.parquet")
    write_trajectories(table, tmp_path / "rec.arrow")
    for reader, got in _trust_by_reader(tmp_path / "rec.parquet", 1, tmp_path / "rec.arrow").items():
        assert got == want, reader


def test_trajectories_doc_trust_query_runs(runs: tuple[Path, Path]) -> None:
    """docs/trajectories.md's DuckDB query over the trust column runs as written (DIR replaced by a run directory)
    and gives that client's trust at every step of the episode."""
    import duckdb

    _, parquet = runs
    doc = (REPO / "docs" / "trajectories.md").read_text()
    m = re.search(r"```sql\n(select [^`]*unnest\(trust\)[^`]*)```", doc)
    assert m, "docs/trajectories.md shows a DuckDB query over the trust column"
    sql = m.group(1).replace("DIR/", f"{parquet}/")
    client = re.search(r"t\.client = '([^']+)'", sql)
    assert client
    rel = duckdb.sql(sql)
    assert rel is not None
    got = rel.fetchall()
    steps = pq.read_table(parquet / "trajectories.parquet").to_pylist()
    want = [(r["step"], next(t["trust"] for t in r["trust"] if t["client"] == client.group(1))) for r in steps if r["episode_id"] == 0]
    assert got == sorted(want) and len(got) > 1


def test_trajectories_doc_reading_examples_run(runs: tuple[Path, Path]) -> None:
    """docs/trajectories.md's two "Reading the files" blocks (Parquet, then Arrow IPC: pyarrow, polars, DuckDB and
    ``ycgym.arrow.read_trajectories``) run as written, DIR replaced by a run directory of that format."""
    arrow, parquet = runs
    doc = (REPO / "docs" / "trajectories.md").read_text()
    section = doc[doc.index("\n## Reading the files\n") :]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    want = _arrow(arrow, "trajectories").num_rows
    for code, run_dir in zip(blocks, (parquet, arrow)):
        namespace: dict[str, Any] = {}
        exec(compile(code.replace("DIR", str(run_dir)), "docs/trajectories.md", "exec"), namespace)
        assert namespace["steps"].num_rows == want
    assert namespace["episodes"].height == len(POLICIES) * len(SEEDS)
