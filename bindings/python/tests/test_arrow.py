"""Arrow trajectories: recording, schema, IPC/Parquet round trips, polars and DuckDB."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from helpers import REPO, golden_commands
from ycgym import YCBenchEnv
from ycgym.arrow import STEP_SCHEMA, episodes_table, read_trajectories, record_episode, steps_to_table, to_polars, write_trajectories


class Scripted:
    name = "scripted"

    def __init__(self, commands: list[str]) -> None:
        self.commands = list(commands)

    def __call__(self, obs: Any, info: Any) -> str:
        return self.commands.pop(0) if self.commands else "company status"


@pytest.fixture(scope="module")
def episodes() -> list[list[dict[str, Any]]]:
    env = YCBenchEnv()
    try:
        a = record_episode(env, Scripted(golden_commands("traj-default-greedy-seed-3.json.gz")), seed=3, run_id="run-1", episode_id=0)
        b = record_episode(env, Scripted(["employee list", "no such command"]), seed=4, run_id="run-1", episode_id=1, max_steps=5)
        return [a, b]
    finally:
        env.close()


def test_record_episode_rows(episodes: list[list[dict[str, Any]]]) -> None:
    a, b = episodes
    assert len(a) == 135 + 1  # bankrupt at step 135, plus the reset row
    assert a[0]["is_first"] and a[0]["action"] is None and a[0]["step"] == 0 and a[0]["reward"] == 0.0
    assert a[-1]["is_last"] and a[-1]["terminated"] and not a[-1]["truncated"] and a[-1]["funds_cents"] < 0
    assert sum(r["is_first"] for r in a) == 1 and sum(r["is_last"] for r in a) == 1
    assert [r["step"] for r in a] == list(range(136))
    assert {r["policy"] for r in a} == {"scripted"} and {r["preset"] for r in a} == {"default"} and {r["seed"] for r in a} == {3}
    assert len(b) == 6 and b[-1]["truncated"] and not b[-1]["terminated"] and b[-1]["is_last"]
    assert b[2]["observation_text"].startswith("Usage:") and b[2]["exit_code"] == 2 and b[2]["command"] is None
    assert b[1]["command"] == "employee list" and b[1]["ok"] and b[0]["ok"] and b[0]["command"] is None
    assert a[0]["sim_time"].isoformat() == "2025-01-01T09:00:00" and a[-1]["sim_time"] > a[0]["sim_time"]
    assert sum(r["reward_cents"] for r in a) == a[-1]["funds_cents"] - a[0]["funds_cents"]


def test_table_schema_and_round_trips(episodes: list[list[dict[str, Any]]], tmp_path: Path) -> None:
    table = steps_to_table([r for ep in episodes for r in ep])
    assert table.schema.equals(STEP_SCHEMA, check_metadata=True)
    assert table.num_rows == 136 + 6
    assert not any(pa.types.is_dictionary(f.type) for f in table.schema)
    assert table.column_names[:8] == ["run_id", "episode_id", "policy", "preset", "seed", "step", "action", "observation_text"]
    assert table.column_names[-7:] == ["terminated", "truncated", "is_first", "is_last", "sim_day", "days_left", "trust"]
    assert table.schema.field("sim_time").type == pa.timestamp("us")
    for name in ("t.arrow", "t.parquet"):
        back = read_trajectories(write_trajectories(table, tmp_path / name))
        assert back.equals(table)
    # Arrow files are zstd-compressed by default, as ycgym run writes them; compression=None writes plain buffers.
    plain = write_trajectories(table, tmp_path / "plain.arrow", compression=None)
    assert read_trajectories(plain).equals(table)
    assert (tmp_path / "t.arrow").stat().st_size * 3 < plain.stat().st_size
    with pytest.raises(ValueError, match="compression must be 'zstd' or None"):
        write_trajectories(table, tmp_path / "x.arrow", compression="lz4")
    write_trajectories(table.slice(0, 136), tmp_path / "dir" / "a.arrow")
    write_trajectories(table.slice(136), tmp_path / "dir" / "b.arrow")
    assert read_trajectories(tmp_path / "dir").equals(table)
    # A stream-format file and a dictionary-encoded column are read as plain strings.
    enc = table.set_column(2, "policy", table.column("policy").dictionary_encode())
    with pa.OSFile(str(tmp_path / "s.arrows"), "wb") as f, pa.ipc.new_stream(f, enc.schema) as w:
        w.write_table(enc)
    assert read_trajectories(tmp_path / "s.arrows").column("policy").type == pa.string()


def test_polars_duckdb_and_episode_summary(episodes: list[list[dict[str, Any]]]) -> None:
    table = steps_to_table([r for ep in episodes for r in ep])
    df = to_polars(table)
    assert isinstance(df, pl.DataFrame) and df.height == table.num_rows
    assert df.filter(pl.col("is_last")).select("episode_id").to_series().to_list() == [0, 1]
    con = duckdb.connect()
    con.register("steps", table)
    rows = con.execute("select episode_id, count(*) as n, max(step) as last from steps group by episode_id order by episode_id").fetchall()
    assert rows == [(0, 136, 135), (1, 6, 5)]
    eps = episodes_table(table).to_pylist()
    assert [e["steps"] for e in eps] == [135, 5]
    assert [e["outcome"] for e in eps] == ["bankruptcy", "truncated"]
    assert eps[0]["return_cents"] == eps[0]["final_funds_cents"] - 20_000_000
    assert eps[0]["return_dollars"] == pytest.approx(eps[0]["return_cents"] / 100)


def test_policy_returning_none_stops_the_episode() -> None:
    env = YCBenchEnv()
    try:
        rows = record_episode(env, lambda obs, info: None if info["step"] >= 2 else "company status", seed=1, run_id="r")
    finally:
        env.close()
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[-1]["truncated"] and rows[-1]["is_last"]


def ts_schema_module() -> Path | None:
    """``dist/src/export/schema.js`` next to the server entry in use (or in the checkout's dist/)."""
    entry = os.environ.get("YCGYM_NODE_ENTRY")
    roots = [Path(entry).resolve().parent, *Path(entry).resolve().parents] if entry else []
    for root in [*roots, REPO / "dist"]:
        for p in (root / "src" / "export" / "schema.js", root / "export" / "schema.js"):
            if p.is_file():
                return p
    return None


@pytest.mark.skipif(ts_schema_module() is None, reason="the TypeScript exporter is not built")
def test_schema_equals_the_typescript_exporters() -> None:
    mod = ts_schema_module()
    assert mod is not None
    script = f"import {{ STEP_COLUMNS, SCHEMA_VERSION }} from {json.dumps(mod.as_uri())}; console.log(JSON.stringify({{cols: STEP_COLUMNS, v: SCHEMA_VERSION}}))"
    out = subprocess.run(
        [os.environ.get("YCGYM_NODE", "node"), "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    ts = json.loads(out.stdout)
    kinds = {
        "utf8": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp_us": pa.timestamp("us"),
    }

    def kind(c: dict[str, Any]) -> Any:
        if c["kind"] != "list_struct":
            return kinds[c["kind"]]
        struct = pa.struct([pa.field(f["name"], kinds[f["kind"]], nullable=False) for f in c["fields"]])
        return pa.list_(pa.field("item", struct, nullable=False))

    want = [(c["name"], kind(c), c["nullable"]) for c in ts["cols"]]
    got = [(f.name, f.type, f.nullable) for f in STEP_SCHEMA]
    assert got == want
    assert STEP_SCHEMA.metadata[b"ycgym.schema_version"].decode() == ts["v"]


def test_server_recording_is_compressed_and_readable(tmp_path: Path) -> None:
    """``ycgym serve --record-dir`` records zstd-compressed Arrow by default (issue 14): pyarrow, polars and DuckDB
    (through pyarrow) read it, with the same rows as a ``--record-compression none`` recording of the same steps."""
    from ycgym import Client, LocalServer

    tables = {}
    for codec in ("zstd", "none"):
        d = tmp_path / codec
        d.mkdir()
        args = ["--record-dir", str(d)] + (["--record-compression", "none"] if codec == "none" else [])
        with LocalServer(args=args) as srv:
            c = Client(srv.endpoint)
            try:
                s = c.reset(7, options={"record": {"path": "r.arrow"}})["session"]
                for cmd in ("market browse --limit 200", "task accept --task-id Task-3", "market browse --limit 200", "company status"):
                    c.step(s, cmd)
                c.close(s)
            finally:
                c.close()
        with pa.memory_map(str(d / "r.arrow")) as f:
            tables[codec] = pa.ipc.open_file(f).read_all()
        assert pl.read_ipc(d / "r.arrow").height == 5
        tables[codec + "_size"] = (d / "r.arrow").stat().st_size
    assert tables["zstd"].equals(tables["none"])
    assert tables["zstd"].num_rows == 5
    assert tables["none_size"] > 5 * tables["zstd_size"]
    rel = tables["zstd"]  # noqa: F841 - DuckDB scans the local by its name
    got = duckdb.sql("SELECT count(*) FROM rel WHERE action IS NOT NULL")
    assert got is not None and got.fetchall() == [(4,)]


def test_reading_a_file_that_is_not_a_table_names_it(tmp_path: Path) -> None:
    """A file that is not an Arrow IPC file or stream, or not Parquet, is a ValueError naming it (read directly or
    found in a directory). Before, pyarrow's own message without the file: "Expected to read 1802401130 metadata
    bytes, but only read 0", "Parquet magic bytes not found in footer"."""
    from ycgym.arrow import read_trajectories

    for name in ("trajectories.arrow", "trajectories.parquet"):
        d = tmp_path / name.split(".")[1]
        d.mkdir()
        junk = d / name
        junk.write_bytes(b"junk, not a table")
        kind = "Parquet file" if name.endswith(".parquet") else "Arrow IPC file or stream"
        for where in (junk, d, [junk]):
            with pytest.raises(ValueError, match=f"^{re.escape(str(junk))}: not an? {kind}: "):
                read_trajectories(where)


def test_a_recording_cut_short_by_a_killed_server_keeps_its_complete_episodes(tmp_path: Path) -> None:
    """A server killed while it records (SIGKILL, out of memory) leaves complete Arrow files of the episodes written
    before: the recorder writes each file's footer after every record batch (cut off by the next one), so pyarrow,
    polars and ``read_trajectories`` read them as they are. Before, the files had no footer until the server closed
    them, and every tool refused them ("Expected to read 1330795073 metadata bytes"): all episodes were lost."""
    import signal

    from ycgym import Client, LocalServer

    d = tmp_path / "rec"
    d.mkdir()
    srv = LocalServer(args=["--record-dir", str(d)])
    try:
        c = Client(srv.endpoint)
        opts = {"record": {"path": "r.arrow"}, "max_steps": 3}
        s = c.reset(1, options=opts)["session"]
        for seed in (2, 3, 4):  # three episodes of 3 steps (4 rows each) end; a fourth is running
            for _ in range(3):
                c.step(s, "company status")
            c.reset(seed, session=s, options=opts)
        c.step(s, "company status")
        os.kill(srv.pid, signal.SIGKILL)
        c.close()
    finally:
        srv.close()
    steps = read_trajectories(d / "r.arrow")
    assert steps.column("episode_id").to_pylist() == [0] * 4 + [1] * 4 + [2] * 4
    assert steps.column("step").to_pylist() == [0, 1, 2, 3] * 3
    with pa.memory_map(str(d / "r.episodes.arrow")) as f:
        episodes = pa.ipc.open_file(f).read_all()
    assert episodes.column("episode_id").to_pylist() == [0, 1, 2]
    assert pl.read_ipc(d / "r.arrow").height == 12


def test_a_recording_stopped_by_its_budget_is_complete_and_readable(tmp_path: Path) -> None:
    """``ycgym serve --record-client-mib``: a recording that reaches its client's share is completed with the episodes
    written before (pyarrow, polars and ``read_trajectories`` read it), the step that found no room says so in
    ``recording_stopped``, and the session goes on stepping unrecorded. Before, a client could record without bound."""
    from ycgym import Client, LocalServer

    d = tmp_path / "rec"
    d.mkdir()
    with LocalServer(args=["--record-dir", str(d), "--record-compression", "none", "--record-client-mib", "1"]) as srv:
        c = Client(srv.endpoint)
        try:
            opts = {"record": {"path": "r.arrow"}, "max_steps": 3}
            s = c.reset(1, options=opts)["session"]
            stopped = None
            episodes = 0
            for seed in range(2, 200):
                for _ in range(3):
                    r = c.step(s, "market browse --limit 200")
                    stopped = r.get("recording_stopped", stopped)
                if stopped is not None:
                    break
                episodes += 1
                c.reset(seed, session=s, options=opts)
            assert stopped is not None
            assert stopped["path"] == "r.arrow" and stopped["reason"] == "client_budget"
            assert "--record-client-mib" in stopped["message"]
            c.reset(500, session=s, options={"max_steps": 3})
            assert "recording_stopped" not in c.step(s, "company status")
        finally:
            c.close()
    size = (d / "r.arrow").stat().st_size + (d / "r.episodes.arrow").stat().st_size
    assert size == stopped["bytes"] <= 2**20
    steps = read_trajectories(d / "r.arrow")
    assert episodes > 1
    assert steps.column("episode_id").to_pylist() == [e for e in range(episodes) for _ in range(4)]
    with pa.memory_map(str(d / "r.episodes.arrow")) as f:
        assert pa.ipc.open_file(f).read_all().num_rows == episodes
    assert pl.read_ipc(d / "r.arrow").height == 4 * episodes


def test_the_gym_env_passes_a_recording_stop_into_info(tmp_path: Path) -> None:
    """``YCBenchEnv`` over a server whose recording budget runs out: the step that found no room has the server's
    ``recording_stopped`` in its ``info`` (before, ``info`` dropped it: a Gym user could not tell the recording stopped)."""
    from ycgym import LocalServer, YCBenchEnv

    d = tmp_path / "rec"
    d.mkdir()
    with LocalServer(args=["--record-dir", str(d), "--record-compression", "none", "--record-client-mib", "1"]) as srv:
        env = YCBenchEnv(endpoint=srv.endpoint, reset_options={"record": {"path": "g.arrow"}, "max_steps": 3})
        try:
            stops = []
            for seed in range(1, 200):
                _, info = env.reset(seed=seed)
                assert "recording_stopped" not in info
                for _ in range(3):
                    _, _, _, _, info = env.step("market browse --limit 200")
                    if "recording_stopped" in info:
                        stops.append(info["recording_stopped"])
                if stops:
                    break
            assert [s["reason"] for s in stops] == ["client_budget"]
            assert stops[0]["path"] == "g.arrow"
        finally:
            env.close()


def test_write_trajectories_replaces_a_file_whole_or_not_at_all(episodes: list[list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails or is interrupted (Ctrl-C, a full disk) leaves the file that was there as it was, and no
    partial file: the table is written beside it and moved into place once complete (as ``ycgym run`` does). Before,
    the file was truncated at once and left holding part of the new table."""
    table = steps_to_table([r for ep in episodes for r in ep])
    for name in ("t.arrow", "t.parquet"):
        path = write_trajectories(table.slice(0, 10), tmp_path / name)
        before = path.read_bytes()

        def interrupted(*_a: Any, **_k: Any) -> None:
            raise KeyboardInterrupt

        target = "pyarrow.parquet.ParquetWriter.write_table" if name.endswith(".parquet") else "pyarrow.ipc.RecordBatchFileWriter.write_table"
        with monkeypatch.context() as m:
            m.setattr(target, interrupted)
            with pytest.raises(KeyboardInterrupt):
                write_trajectories(table, path)
        assert path.read_bytes() == before, name
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["t.arrow", "t.parquet"][: 1 + (name == "t.parquet")]), name
        assert read_trajectories(write_trajectories(table, path)).equals(table)


@pytest.mark.parametrize("kind", ["single", "binary", "json"])
def test_the_discrete_envs_pass_a_recording_stop_into_info(tmp_path: Path, kind: str) -> None:
    """The Discrete envs over a server whose recording budget runs out: each session's step that learns of the stop has
    the server's ``recording_stopped`` in its info (the vector env: that sub-environment's entry, with the
    ``_recording_stopped`` mask, as ``_add_info`` folds a dict), and the env goes on resetting (into the stopped
    recording: unrecorded). Before, only the text env passed the note on, a binary ``step_batch`` reply's
    ``recording_stopped`` list was not even decoded, and every reset after the stop failed (``invalid_request``)."""
    import numpy as np

    from ycgym import LocalServer, YCBenchDiscreteEnv, YCBenchDiscreteVectorEnv

    d = tmp_path / "rec"
    d.mkdir()
    opts = {"record": {"path": "d.arrow"}, "max_steps": 40}
    with LocalServer(args=["--record-dir", str(d), "--record-compression", "none", "--record-client-mib", "1"]) as srv:
        told: list[tuple[int, dict[str, Any]]] = []
        if kind == "single":
            env = YCBenchDiscreteEnv(endpoint=srv.endpoint, reset_options=opts)
            try:
                env.reset(seed=1)
                for _ in range(4000):
                    _, _, term, trunc, info = env.step(int(np.flatnonzero(env.action_masks())[-1]))
                    if "recording_stopped" in info:
                        told.append((0, info["recording_stopped"]))
                        break
                    if term or trunc:
                        assert "recording_stopped" not in env.reset()[1]
            finally:
                env.close()
        else:
            venv = YCBenchDiscreteVectorEnv(2, endpoint=srv.endpoint, reset_options=opts, encoding=kind)
            try:
                venv.reset(seed=1)
                for _ in range(4000):
                    acts = np.array([int(np.flatnonzero(m)[-1]) for m in venv.action_masks()])
                    info = venv.step(acts)[4]
                    if "recording_stopped" in info:
                        mask = info["_recording_stopped"]
                        told += [(i, {k: info["recording_stopped"][k][i] for k in ("path", "reason", "bytes")}) for i in map(int, np.flatnonzero(mask))]
                    if len({i for i, _ in told}) == 2:
                        break
            finally:
                venv.close()
        assert told, "the recording never stopped"
        assert all(t["path"] == "d.arrow" and t["reason"] == "client_budget" and int(t["bytes"]) > 0 for _, t in told)
        # every session told (a reset into the stopped recording, such as an automatic one, is told again: it plays unrecorded)
        assert {i for i, _ in told} == ({0} if kind == "single" else {0, 1})
