"""Trajectories as Apache Arrow tables (needs ``pyarrow``; ``polars`` for :func:`to_polars`).

The step table has one row per observation, so an episode of N steps has N + 1 rows (row 0 is the
reset observation). Its schema, :data:`STEP_SCHEMA`, is the one the TypeScript exporter
(``src/export/schema.ts``, ``ycgym run``/the server's recorder) writes, column for column, with the same
``ycgym.schema``/``ycgym.schema_version`` metadata, so :func:`read_trajectories` reads files from both:

=============================  ============  ============================================================
column                         type          meaning
=============================  ============  ============================================================
run_id                         string        the run (a batch of episodes recorded together)
episode_id                     int64         episode number within the run
policy                         string        policy name
preset                         string        preset name
seed                           int64         episode seed
step                           int64         actions taken before this observation (0 on the reset row)
action                         string?       the command that produced this observation (null on row 0)
observation_text               string        exact CLI output (empty on row 0)
ok                             bool          the command succeeded (true on row 0)
exit_code                      int32         0 ok, 1 rejected, 2 usage error
command                        string?       recognised verb, null when unrecognised and on row 0
sim_time                       timestamp[us] simulation time after the step (naive)
funds_cents                    int64         funds after the step
monthly_payroll_cents          int64         payroll after the step
runway_months                  float64?      funds / payroll (2 decimals), null when payroll is 0
prestige_research ...          float64       prestige per domain (research, inference,
                                             data_environment, training)
active/planned/completed_tasks int32         owned tasks by status
reward                         float64       reward of this step in dollars (0.0 on row 0)
reward_cents                   int64         the same, exact cents
terminated                     bool          funds negative or horizon reached at this step
truncated                      bool          the episode ended here without terminating (max steps, or
                                             the policy stopped)
is_first / is_last             bool          first / last row of the episode
sim_day                        float64       days since the episode started (as the observation's ``sim_day``)
days_left                      float64       days until the horizon end (as the observation's ``days_left``)
trust                          list<struct>  ``[{client, trust}]``: every client's trust after the step, in
                                             client-name order (``info["status"]["trust"]`` as a list)
=============================  ============  ============================================================

Strings are plain ``string`` (UTF-8), never dictionary-encoded (``?`` marks nullable columns).
``trust`` is ``list<item: struct<client: string, trust: double>>`` (items and fields never null), which
pyarrow, polars (``List(Struct)``) and DuckDB (``STRUCT(client VARCHAR, trust DOUBLE)[]``) read from the
Arrow IPC and the Parquet files alike.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("ycgym.arrow needs pyarrow: pip install 'ycgym[arrow]'") from e

from ._arrow_schema import EPISODE_COLUMNS, SCHEMA_VERSION, STEP_COLUMNS, STRUCT_FIELDS
from .episode import Transition, run_episode
from .spaces import DOMAINS, _days, parse_time

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import polars

__all__ = [
    "SCHEMA_VERSION",
    "STEP_SCHEMA",
    "EPISODE_SCHEMA",
    "TURN_SCHEMA",
    "Policy",
    "status_row",
    "trust_items",
    "record_episode",
    "steps_to_table",
    "write_trajectories",
    "read_trajectories",
    "to_polars",
    "episodes_table",
]

_ARROW_TYPES: dict[str, Any] = {
    "utf8": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp_us": pa.timestamp("us"),
}
"""The Arrow type of each scalar column kind of ``src/export/schema.ts``."""


def _column_type(name: str, kind: str) -> Any:
    """The Arrow type of a column: a scalar kind, or ``list_struct``: a list (non-null items named ``item``)
    of structs whose non-null fields are ``STRUCT_FIELDS[name]``."""
    if kind != "list_struct":
        return _ARROW_TYPES[kind]
    struct = pa.struct([pa.field(f, _ARROW_TYPES[k], nullable=False) for f, k in STRUCT_FIELDS[name]])
    return pa.list_(pa.field("item", struct, nullable=False))


# The columns of the step and episode tables are generated from the TypeScript exporter's
# (src/export/schema.ts -> _arrow_schema.py, by scripts/gen/python.ts): written once.
_STEP_FIELDS: list[tuple[str, Any, bool]] = [(name, _column_type(name, kind), nullable) for name, kind, nullable in STEP_COLUMNS]

STEP_SCHEMA = pa.schema(
    [pa.field(name, typ, nullable=nullable) for name, typ, nullable in _STEP_FIELDS],
    metadata={b"ycgym.schema": b"steps", b"ycgym.schema_version": SCHEMA_VERSION.encode()},
)
"""Arrow schema of step tables (see the module docstring); equal to the TypeScript exporter's."""

_EPISODE_FIELDS: list[tuple[str, Any, bool]] = [(name, _column_type(name, kind), nullable) for name, kind, nullable in EPISODE_COLUMNS]

EPISODE_SCHEMA = pa.schema(
    [pa.field(name, typ, nullable=nullable) for name, typ, nullable in _EPISODE_FIELDS],
    metadata={b"ycgym.schema": b"episodes", b"ycgym.schema_version": SCHEMA_VERSION.encode()},
)
"""Arrow schema of episode tables (``episodes.arrow``); equal to the TypeScript exporter's."""

_TURN_FIELDS: list[tuple[str, Any, bool]] = [
    ("run_id", pa.string(), False),
    ("episode_id", pa.int64(), False),
    ("model", pa.string(), False),
    ("preset", pa.string(), False),
    ("seed", pa.int64(), False),
    ("call", pa.int64(), False),
    ("turn", pa.int64(), False),
    ("first_step", pa.int64(), False),
    ("steps", pa.int32(), False),
    ("user_input", pa.string(), False),
    ("messages_sent", pa.int32(), False),
    ("content", pa.string(), True),
    ("reasoning_content", pa.string(), True),
    ("tool_calls", pa.string(), False),
    ("finish_reason", pa.string(), True),
    ("prompt_tokens", pa.int64(), True),
    ("completion_tokens", pa.int64(), True),
    ("cost_usd", pa.float64(), True),
    ("latency_s", pa.float64(), False),
    ("resumed", pa.bool_(), False),
    ("auto_advanced", pa.bool_(), False),
    ("sim_time", pa.timestamp("us"), False),
    ("funds_cents", pa.int64(), False),
    ("reward_cents", pa.int64(), False),
    ("done", pa.bool_(), False),
    ("terminal_reason", pa.string(), True),
    ("terminal_detail", pa.string(), True),
]

TURN_SCHEMA = pa.schema(
    [pa.field(name, typ, nullable=nullable) for name, typ, nullable in _TURN_FIELDS],
    metadata={b"ycgym.schema": b"llm_turns", b"ycgym.schema_version": SCHEMA_VERSION.encode()},
)
"""Arrow schema of LLM turn tables (``turns.arrow`` of :mod:`ycgym.llm`): one row per LLM call.

``call`` counts LLM calls from 1; ``turn`` is the reference's turn number of the call (its transcript
``turn``); ``first_step``/``steps`` locate the call's rows in the step table (same ``run_id`` and
``episode_id``; an auto-advance ``sim resume`` of the harness counts as a step of the turn);
``tool_calls`` is the JSON text of ``[{"id", "name", "arguments"}]``; token and cost columns are null
when the endpoint did not report them (and no prices were given); ``latency_s`` is wall-clock time of
the request; ``sim_time``/``funds_cents`` are after the turn, ``reward_cents`` the change of funds
during it."""

Policy = Callable[[Mapping[str, Any], Mapping[str, Any]], "str | None"]
"""A policy maps ``(observation, info)`` to the next command, or ``None`` to stop the episode."""


def status_row(
    common: Mapping[str, Any],
    step: int,
    action: str | None,
    text: str,
    ok: bool,
    exit_code: int,
    command: str | None,
    status: Mapping[str, Any],
    reward_cents: int,
    start: datetime | None = None,
) -> dict[str, Any]:
    """One :data:`STEP_SCHEMA` row from a status block (``common``: ``run_id, episode_id, policy,
    preset, seed``); ``terminated``/``truncated``/``is_last`` are false, ``is_first`` is ``step == 0``;
    ``start``: the episode's start time (``sim_day`` counts from it; default: this row's time, as on the
    initial row)."""
    prestige = status["prestige"]
    runway = status.get("runway_months")
    t = parse_time(status["sim_time"])
    return {
        **common,
        "step": step,
        "action": action,
        "observation_text": text,
        "ok": bool(ok),
        "exit_code": int(exit_code),
        "command": command,
        "sim_time": t,
        "funds_cents": int(status["funds_cents"]),
        "monthly_payroll_cents": int(status["monthly_payroll_cents"]),
        "runway_months": None if runway is None else float(runway),
        **{f"prestige_{d}": float(prestige[d]) for d in DOMAINS},
        "active_tasks": int(status["active_tasks"]),
        "planned_tasks": int(status["planned_tasks"]),
        "completed_tasks": int(status["completed_tasks"]),
        "reward": int(reward_cents) / 100,
        "reward_cents": int(reward_cents),
        "terminated": False,
        "truncated": False,
        "is_first": step == 0,
        "is_last": False,
        "sim_day": _days(t, t if start is None else start),
        "days_left": _days(parse_time(status["horizon_end"]), t),
        "trust": trust_items(status["trust"]),
    }


def trust_items(trust: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``trust`` column's value of a status block's ``trust`` mapping: ``[{"client", "trust"}]`` in
    client-name order."""
    return [{"client": k, "trust": float(v)} for k, v in sorted(trust.items())]


def _row(
    common: Mapping[str, Any],
    step: int,
    action: str | None,
    obs: Mapping[str, Any],
    info: Mapping[str, Any],
    reward: float,
    start: datetime | None = None,
) -> dict[str, Any]:
    command = info.get("command", obs.get("command") or None)
    cents = int(info.get("reward_cents", round(float(reward) * 100)))
    row = status_row(common, step, action, obs["text"], obs["ok"], obs["exit_code"], command, info["status"], cents, start)
    row["reward"] = float(reward)
    return row


def record_episode(
    env: gym.Env[Any, Any],
    policy: Policy,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int | None = None,
    run_id: str | None = None,
    episode_id: int = 0,
    policy_name: str | None = None,
    preset: str | None = None,
) -> list[dict[str, Any]]:
    """Play one episode of ``env`` (a :class:`ycgym.YCBenchEnv`, possibly wrapped) with ``policy``.

    Returns the N + 1 rows of :data:`STEP_SCHEMA` as dicts. The episode ends when the env terminates or
    truncates, when the policy returns ``None``, or after ``max_steps`` steps; the last two mark the last
    row ``truncated``. ``seed=None`` records the seed the env drew (``env.unwrapped.seed_used``).
    """
    base = env.unwrapped
    name = policy_name if policy_name is not None else getattr(policy, "name", None) or getattr(policy, "__name__", type(policy).__name__)
    rows: list[dict[str, Any]] = []
    common: dict[str, Any] = {}

    def first(obs: Any, info: Mapping[str, Any]) -> None:
        used_seed = getattr(base, "seed_used", None)
        common.update({
            "run_id": run_id if run_id is not None else uuid.uuid4().hex,
            "episode_id": int(episode_id),
            "policy": str(name),
            "preset": preset if preset is not None else str(getattr(base, "preset", "")),
            "seed": int(seed if seed is not None else (used_seed if used_seed is not None else -1)),
        })
        rows.append(_row(common, 0, None, obs, info, 0.0))

    def step(t: Transition) -> None:
        rows.append(_row(common, t.step, t.action, t.obs, t.info, t.reward, rows[0]["sim_time"]))
        rows[-1]["terminated"] = t.terminated
        rows[-1]["truncated"] = t.truncated

    run_episode(env, policy, seed=seed, options=options, max_steps=max_steps, on_reset=first, on_step=step)
    last = rows[-1]
    if not (last["terminated"] or last["truncated"]):
        last["truncated"] = True  # stopped by max_steps or by the policy
    last["is_last"] = True
    return rows


def steps_to_table(steps: Iterable[Mapping[str, Any]], schema: pa.Schema = STEP_SCHEMA) -> pa.Table:
    """Build a :data:`STEP_SCHEMA` table from step rows (e.g. several :func:`record_episode` results);
    with ``schema`` (:data:`EPISODE_SCHEMA`, :data:`TURN_SCHEMA`), a table of those rows."""
    rows = list(steps)
    cols = {f.name: [r[f.name] for r in rows] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)


def write_trajectories(table: pa.Table, path: str | Path, schema: pa.Schema | None = STEP_SCHEMA, compression: str | None = "zstd") -> Path:
    """Write a step table as an Arrow IPC file (``.arrow``; ``.parquet`` writes zstd-compressed Parquet, as
    ``ycgym run --format parquet`` does). Other tables: pass their ``schema`` (or ``None`` to write the table
    as it is). An Arrow file's buffers are zstd-compressed, as ``ycgym run`` writes them (``compression=None``:
    plain buffers, as ``--compression none``). The file is written beside ``path`` (``.NAME.partial``) and moved into
    place once complete: a write that fails or is interrupted leaves what was at ``path`` as it was."""
    if compression not in ("zstd", None):
        raise ValueError(f"compression must be 'zstd' or None, got {compression!r}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if schema is not None and table.schema != schema:
        table = table.cast(schema)
    staged = p.with_name(f".{p.name}.partial")
    try:
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

            pq.write_table(table, staged, compression="zstd")
        else:
            options = pa.ipc.IpcWriteOptions(compression=compression)
            with pa.OSFile(str(staged), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as writer:
                writer.write_table(table)
        os.replace(staged, p)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    return p


def _read_one(p: Path) -> pa.Table:
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

        with _naming(p, "a Parquet file"):
            return pq.read_table(p)
    with pa.memory_map(str(p), "r") as src, _naming(p, "an Arrow IPC file or stream"):
        try:
            return pa.ipc.open_file(src).read_all()
        except pa.ArrowInvalid:
            src.seek(0)
            return pa.ipc.open_stream(src).read_all()


@contextlib.contextmanager
def _naming(p: Path, kind: str) -> Iterator[None]:
    """pyarrow's refusal of a file that is not ``kind`` as a ValueError naming the file (ArrowInvalid is one)."""
    try:
        yield
    except pa.ArrowInvalid as e:
        raise ValueError(f"{p}: not {kind}: {e}") from None


_TABLE_SUFFIXES = (".arrow", ".feather", ".arrows", ".ipc", ".parquet")


def _schema_of(p: Path) -> pa.Schema:
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

        with _naming(p, "a Parquet file"):
            return pq.read_schema(p)
    with pa.memory_map(str(p), "r") as src, _naming(p, "an Arrow IPC file or stream"):
        try:
            return pa.ipc.open_file(src).schema
        except pa.ArrowInvalid:
            src.seek(0)
            return pa.ipc.open_stream(src).schema


def _step_files(d: Path) -> list[Path]:
    """The step tables in directory ``d``, in name order: files of another ycgym table (``episodes``,
    ``llm_turns``: their ``ycgym.schema`` metadata says so) are left out, and of ``NAME.arrow`` and
    ``NAME.parquet`` (the same rows in two formats) only the Parquet file is read."""
    files = sorted(f for f in d.iterdir() if f.is_file() and f.suffix in _TABLE_SUFFIXES)
    stems_with_parquet = {f.stem for f in files if f.suffix == ".parquet"}
    out = []
    for f in files:
        if f.suffix != ".parquet" and f.stem in stems_with_parquet:
            continue
        kind = (_schema_of(f).metadata or {}).get(b"ycgym.schema")
        if kind is not None and kind != b"steps":
            continue
        out.append(f)
    return out


def read_trajectories(path: str | Path | Sequence[str | Path]) -> pa.Table:
    """Read trajectories: an Arrow IPC file or stream (``.arrow``/``.feather``/``.arrows``), a Parquet
    file, a directory of such files, or a list of paths. A directory (e.g. the output of ``ycgym run``) gives
    its step tables only, in name order: its episode table and other ycgym tables are skipped, and when a
    table is there as ``.arrow`` and ``.parquet`` only the Parquet file is read. Dictionary-encoded string
    columns are decoded to plain strings."""
    if isinstance(path, (str, Path)):
        p = Path(path)
        if p.is_dir():
            files = _step_files(p)
        else:
            files = [p]
    else:
        files = [Path(x) for x in path]
    if not files:
        return STEP_SCHEMA.empty_table()
    tables = [_plain_strings(_read_one(f)) for f in files]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def _plain_strings(t: pa.Table) -> pa.Table:
    for i, f in enumerate(t.schema):
        if pa.types.is_dictionary(f.type):
            t = t.set_column(i, f.name, pc.cast(t.column(i), f.type.value_type))
    return t


def to_polars(table: pa.Table) -> polars.DataFrame:
    """The table as a ``polars.DataFrame`` (zero-copy where possible)."""
    import polars as pl

    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    return df


def episodes_table(steps: pa.Table) -> pa.Table:
    """One row per episode of a step table, sorted by ``run_id, episode_id``: ``run_id, episode_id,
    seed, policy, preset, final_funds_cents, outcome, steps`` (as in the TypeScript exporter's episode
    table; ``outcome`` is ``bankruptcy``, ``horizon_end`` or ``truncated``) plus ``return_cents`` (exact:
    last minus first funds) and ``return_dollars`` (sum of rewards)."""
    keys = ["run_id", "episode_id", "seed", "policy", "preset"]
    ordered = steps.sort_by([("run_id", "ascending"), ("episode_id", "ascending"), ("step", "ascending")])
    agg = ordered.group_by(keys, use_threads=False).aggregate(
        [
            ("step", "max"),
            ("reward", "sum"),
            ("funds_cents", "first"),
            ("funds_cents", "last"),
            ("terminated", "last"),
        ]
    )
    final = agg["funds_cents_last"]
    terminated = agg["terminated_last"]
    outcome = pc.if_else(
        terminated,
        pc.if_else(pc.less(final, 0), pa.scalar("bankruptcy"), pa.scalar("horizon_end")),
        pa.scalar("truncated"),
    )
    out = pa.table(
        {
            "run_id": agg["run_id"],
            "episode_id": agg["episode_id"],
            "seed": agg["seed"],
            "policy": agg["policy"],
            "preset": agg["preset"],
            "final_funds_cents": final,
            "outcome": outcome,
            "steps": pc.cast(agg["step_max"], pa.int32()),
            "return_cents": pc.subtract(final, agg["funds_cents_first"]),
            "return_dollars": agg["reward_sum"],
        }
    )
    return out.sort_by([("run_id", "ascending"), ("episode_id", "ascending")])
