"""Gymnasium spaces of the ycgym environment and the numeric encoding of observations.

An observation of :class:`ycgym.YCBenchEnv` is a ``dict``:

==========================  ==========================================  ===================================
key                         space                                       value
==========================  ==========================================  ===================================
``text``                    :class:`UnicodeText` (0..1,048,576 chars)   exactly what the reference CLI prints (see below)
``command``                 :class:`CommandText` (0..32, a-z space -)   recognised verb (``"task accept"``) or ``""``
``ok``                      ``Discrete(2)``                             1 when the command succeeded
``exit_code``               ``Discrete(3)``                             0 ok, 1 command error, 2 usage error
``funds_cents``             ``Box(-2**53, 2**53, (), float64)``         company funds (exact integer cents)
``monthly_payroll_cents``   ``Box(0, 2**53, (), float64)``              current monthly payroll
``runway_months``           ``Box(-2**53, 2**53, (), float64)``         funds / payroll, 2 decimals; ``2**53`` when payroll is 0 (status ``null``)
``prestige``                ``Box(0, prestige_max, (4,), float64)``     per domain, order :data:`DOMAINS`
``trust``                   ``Box(0, trust_max, (n_clients,), float64)``  per client, clients sorted by name (:attr:`SpaceParams.clients`)
``active_tasks``            ``Box(0, 2**31-1, (), int64)``              owned tasks by status
``planned_tasks``           same
``completed_tasks``         same                                        (successful or failed)
``sim_day``                 ``Box(0, 2**53, (), float64)``              days since the episode's start (fractional)
``days_left``               ``Box(-2**53, 2**53, (), float64)``         days until the horizon end (<= 0 once reached)
==========================  ==========================================  ===================================

The raw status block (with the wake ``events``) is in ``info["status"]``.

The bound of ``text`` (:data:`MAX_TEXT_LENGTH`, or the envs' ``max_text_length``) is 1,048,576 characters. The
longest texts of normal play, measured over greedy, throughput and expert episodes of the ``default`` and
``multi`` presets (seeds 1-3, probing every 10 steps: ``node dist/bench/text-lengths.js``), are
``finance ledger`` (158,104 characters at the end of a one-year expert episode), ``task list`` (118,652) and
``market browse --limit 200`` (64,298, the whole market); they grow linearly with the horizon and the payroll,
so the bound leaves room for about six simulated years. Only texts an agent makes long itself (a huge
``scratchpad``, a command echoing megabytes of arguments) exceed it; such a text is cut to the bound in the
observation and the step's ``info`` says so (``text_truncated`` true and ``text_length``, the full length);
``render()`` still returns it whole.

Both text fields go through Gymnasium's ``AsyncVectorEnv`` shared memory as code points with a length (4 bytes
per character of the bound and environment, 4 MiB per environment for ``text``), read when accessed.
"""

from __future__ import annotations

import functools
import multiprocessing
import operator
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

__all__ = [
    "DOMAINS",
    "MAX_TEXT_LENGTH",
    "ACTION_CHARSET",
    "UnicodeText",
    "CommandText",
    "SharedTexts",
    "SpaceParams",
    "action_space",
    "action_text",
    "observation_space",
    "encode_observation",
    "checked_observation",
    "encode_batch",
    "parse_time",
]

DOMAINS: tuple[str, ...] = ("research", "inference", "data_environment", "training")
"""Domain order of the ``prestige`` vector."""

MAX_TEXT_LENGTH = 1 << 20
"""Default bound of ``text`` in characters (see the module docstring for why; longer texts are cut and flagged)."""

ACTION_CHARSET: str = "".join(chr(c) for c in range(0x20, 0x7F))
"""Printable ASCII (space to ``~``): the charset of the action space."""

_COMMAND_CHARSET = string.ascii_lowercase + " -"
_BIG = float(2**53)  # every integer up to here is exact in float64 (and in a JS number)
_INT_MAX = 2**31 - 1
_EPOCH = datetime(1970, 1, 1)


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` whose character set is all of Unicode.

    ``contains`` accepts any ``str`` of allowed length made of Unicode scalar values (no lone
    surrogates): observation text echoes whatever the agent typed, so no finite charset fits.
    Enumerating ~1.1M characters in a plain ``Text`` would cost seconds and hundreds of MB per space
    (and per copy in :func:`gymnasium.vector.utils.batch_space`); this class keeps the check exact
    and cheap. ``sample()`` draws from ``sample_charset`` (printable ASCII and newline by default).
    It is not flattenable (``is_np_flattenable`` is false).
    """

    def __init__(
        self,
        max_length: int = MAX_TEXT_LENGTH,
        *,
        min_length: int = 0,
        sample_charset: str = ACTION_CHARSET + "\n",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=sample_charset, seed=seed)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, str) or not (self.min_length <= len(x) <= self.max_length):
            return False
        if x.isascii():
            return True
        try:
            x.encode("utf-8")  # fails exactly on lone surrogates
        except UnicodeEncodeError:
            return False
        return True

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return isinstance(other, UnicodeText) and self.min_length == other.min_length and self.max_length == other.max_length

    def __hash__(self) -> int:  # pragma: no cover - spaces are rarely hashed
        return hash((UnicodeText, self.min_length, self.max_length))


class CommandText(spaces.Text):
    """The ``command`` field's :class:`gymnasium.spaces.Text` (equal to a plain ``Text`` of the same bounds and
    charset), whose ``AsyncVectorEnv`` shared memory is read when accessed (see :class:`SharedTexts`)."""


class SharedTexts(Sequence[str]):
    """The texts of N environments in ``AsyncVectorEnv`` shared memory, decoded when read.

    Gymnasium's own ``Text`` shared memory is decoded once, when the vector env is built, so later steps would
    return the first texts again; this view reads the buffer the workers write at every access. Copying it
    (``copy.copy``, ``copy.deepcopy``: what ``AsyncVectorEnv(copy=True)``, the default, returns) or pickling it
    gives a plain ``tuple`` of the current texts.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows  # (n, 1 + max_length) int32: length, then code points

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        row = self._rows[i]
        return row[1 : 1 + int(row[0])].tobytes().decode("utf-32-le")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SharedTexts, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


_SHM_DTYPE = np.dtype("<i4")


@create_shared_memory.register(UnicodeText)
@create_shared_memory.register(CommandText)
def _create_text_memory(space: spaces.Text, n: int = 1, ctx: Any = multiprocessing) -> Any:
    return ctx.Array(_SHM_DTYPE.char, n * (space.max_length + 1))


@read_from_shared_memory.register(UnicodeText)
@read_from_shared_memory.register(CommandText)
def _read_text_memory(space: spaces.Text, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(np.frombuffer(shared_memory.get_obj(), dtype=_SHM_DTYPE).reshape((n, space.max_length + 1)))


@write_to_shared_memory.register(UnicodeText)
@write_to_shared_memory.register(CommandText)
def _write_text_memory(space: spaces.Text, index: int, value: str, shared_memory: Any) -> None:
    codes = np.frombuffer(value.encode("utf-32-le"), dtype=_SHM_DTYPE)
    if len(codes) > space.max_length:
        raise ValueError(f"a text of {len(codes)} characters does not fit {space!r}")
    width = space.max_length + 1
    row = np.frombuffer(shared_memory.get_obj(), dtype=_SHM_DTYPE)[index * width : (index + 1) * width]
    row[0] = len(codes)
    row[1 : 1 + len(codes)] = codes


@dataclass(frozen=True)
class SpaceParams:
    """What the observation space of a preset depends on."""

    clients: tuple[str, ...]
    """Client names in ``trust`` order (sorted, as in the status block)."""
    prestige_max: float = _BIG
    trust_max: float = _BIG

    @property
    def n_clients(self) -> int:
        return len(self.clients)

    @classmethod
    def from_status(cls, status: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> SpaceParams:
        """Derive the parameters from a status block and, when known, the preset's config.

        ``config`` is the preset as JSON (``{"world": {"prestige_max": ..., "trust_max": ...}}``);
        without it the bounds are the generic ``2**53``.
        """
        clients = tuple(sorted(status["trust"].keys()))
        world = (config or {}).get("world") or {}
        pmax = _BIG
        tmax = _BIG
        try:
            pmax = max(float(world["prestige_max"]), float(world.get("initial_prestige_level", 0.0)))
        except (KeyError, TypeError, ValueError):
            pass
        try:
            tmax = float(world["trust_max"])
        except (KeyError, TypeError, ValueError):
            pass
        # Never let a bound exclude the value actually observed.
        pmax = max([pmax, *(float(v) for v in status["prestige"].values())])
        tmax = max([tmax, *(float(v) for v in status["trust"].values())])
        return cls(clients=clients, prestige_max=pmax, trust_max=tmax)


def action_space(seed: int | None = None) -> spaces.Text:
    """``Text(1..4096, printable ASCII)``: every sample is a string the server accepts as an action.

    Any ``str`` is a valid action on the wire (also ``""`` and non-ASCII): an unknown or malformed
    command is an ordinary step whose observation carries the CLI's error output, with reward 0.
    """
    return spaces.Text(max_length=4096, charset=ACTION_CHARSET, seed=seed)


def action_text(action: Any) -> str:
    """The command text of an action: a ``str`` as is, ``bytes`` decoded as UTF-8.

    Raises ``ValueError`` for bytes that are not UTF-8 or a ``str`` that is not text (a lone surrogate, which has no
    UTF-8), and ``TypeError`` for anything else (an action is text).
    """
    if isinstance(action, str):
        text = action if type(action) is str else str.__str__(action)
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"ycgym: the action is not valid text ({e.reason} at character {e.start}): {text[:80]!r}") from None
        return text
    if isinstance(action, (bytes, bytearray, memoryview)):
        try:
            return bytes(action).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"ycgym: the action is not valid UTF-8 ({e.reason} at byte {e.start}): {bytes(action)[:80]!r}") from None
    raise TypeError(f"ycgym: an action is a command string (str, or UTF-8 bytes), got {type(action).__name__}: {action!r:.80}")


def _box(low: float, high: float, shape: tuple[int, ...] = (), dtype: Any = np.float64) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def observation_space(params: SpaceParams, max_text_length: int = MAX_TEXT_LENGTH) -> spaces.Dict:
    """The ``Dict`` observation space for a preset (see the module docstring)."""
    return spaces.Dict(
        {
            "text": UnicodeText(max_text_length),
            "command": CommandText(max_length=32, min_length=0, charset=_COMMAND_CHARSET),
            "ok": spaces.Discrete(2),
            "exit_code": spaces.Discrete(3),
            "funds_cents": _box(-_BIG, _BIG),
            "monthly_payroll_cents": _box(0.0, _BIG),
            "runway_months": _box(-_BIG, _BIG),
            "prestige": _box(0.0, params.prestige_max, (len(DOMAINS),)),
            "trust": _box(0.0, params.trust_max, (params.n_clients,)),
            "active_tasks": _box(0, _INT_MAX, (), np.int64),
            "planned_tasks": _box(0, _INT_MAX, (), np.int64),
            "completed_tasks": _box(0, _INT_MAX, (), np.int64),
            "sim_day": _box(0.0, _BIG),
            "days_left": _box(-_BIG, _BIG),
        }
    )


@functools.lru_cache(maxsize=4096)
def parse_time(s: str) -> datetime:
    """Parse the status block's ISO timestamps (``2025-01-01T09:00:00[.ffffff]``). Memoised (a ``datetime`` is
    immutable): most steps leave the simulated time as it was, and the horizon never moves within an episode."""
    return datetime.fromisoformat(s)


def micros_to_time(us: int) -> datetime:
    """Simulation instants in snapshots are microseconds since the epoch."""
    return _EPOCH + timedelta(microseconds=int(us))


_DAY = 86400.0


def _days(a: datetime, b: datetime) -> float:
    d = a - b
    return (d.days * 86400 + d.seconds + d.microseconds / 1e6) / _DAY


_days_memo = functools.lru_cache(maxsize=8192)(_days)
"""``_days``, memoised: an observation's two day counts repeat until the simulated time moves."""


def _runway(v: Any) -> float:
    return _BIG if v is None else float(v)


@functools.lru_cache(maxsize=64)
def _values_of(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """A function giving a mapping's values at ``keys``, in order, as a tuple (``operator.itemgetter``, which gives a
    lone value for one key: wrapped so that every key count gives a tuple)."""
    if len(keys) == 1:
        (key,) = keys
        return lambda m: (m[key],)
    if not keys:
        return lambda m: ()
    return operator.itemgetter(*keys)


def _float_rows(maps: Iterable[Mapping[str, Any]], keys: tuple[str, ...], n: int) -> np.ndarray:
    """``np.array([[float(m[k]) for k in keys] for m in maps], dtype=np.float64).reshape(n, len(keys))`` for ``n``
    mappings, built without a list per row (the rows' values fetched in C by ``itemgetter``, converted by ``float``)."""
    values = chain.from_iterable(map(_values_of(keys), maps))
    return np.fromiter(map(float, values), dtype=np.float64, count=n * len(keys)).reshape(n, len(keys))


def check_max_text_length(n: int) -> int:
    """Validate an env's ``max_text_length`` argument."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"max_text_length must be a positive integer, got {n!r}")
    return int(n)


_INT_STATUS = ("funds_cents", "monthly_payroll_cents", "active_tasks", "planned_tasks", "completed_tasks")
_NUMBER_TYPES = frozenset({int, float})
_NUMBER_OR_NONE = frozenset({int, float, type(None)})
_INT_TYPE = frozenset({int})
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def check_observation(obs: Any, params: SpaceParams) -> None:
    """Raise TypeError, KeyError or ValueError unless ``obs`` (a reply's observation) holds, with the types of the
    protocol's ``Observation``, every field :func:`encode_observation`, :func:`encode_batch` and the envs' info read:
    ``text``, ``command``, ``ok``, ``exit_code`` and the status block's times, counts, funds, runway, every prestige and
    trust value (the preset's domains and ``params``' clients among them). The text vector env checks each reset
    reply's observation with it before taking any of it in, and a step's entries when the step's encoding of its batch
    fails (the step pays nothing for it otherwise), so a malformed one fails its entry (``bad_reply``) instead of the
    whole batch."""
    if type(obs) is not dict:
        raise TypeError("the observation is not an object")
    st = obs["status"]
    if type(st) is not dict or type(obs["text"]) is not str or type(obs.get("command")) not in _STR_OR_NONE:
        raise TypeError("its status, text or command is not of its type")
    if type(obs["ok"]) is not bool or type(obs["exit_code"]) is not int:
        raise TypeError("its ok or exit_code is not of its type")
    counts = (*_values_of(_INT_STATUS)(st), obs["exit_code"])
    if set(map(type, counts)) != _INT_TYPE:
        raise TypeError(f"a status count or amount ({', '.join(_INT_STATUS)}) is not an integer")
    if min(counts) < _INT64_MIN or max(counts) > _INT64_MAX:  # the encodings hold them as int64
        raise ValueError(f"a status count or amount ({', '.join(_INT_STATUS)}) or the exit code is past 64 bits")
    runway = st["runway_months"]
    if runway is not None and type(runway) not in _NUMBER_TYPES:
        raise TypeError("status runway_months is not a number")
    prestige, trust = st["prestige"], st["trust"]
    if type(prestige) is not dict or type(trust) is not dict or not set(map(type, prestige.values())) <= _NUMBER_TYPES or not set(map(type, trust.values())) <= _NUMBER_TYPES:
        raise TypeError("status prestige or trust is not an object of numbers")
    try:  # the encodings hold them as float64: an integer past its range is refused
        list(map(float, chain(prestige.values(), trust.values(), () if runway is None else (runway,))))
    except OverflowError:
        raise ValueError("status runway_months, prestige or trust holds an integer past a float's range") from None
    _values_of(DOMAINS)(prestige)  # KeyError: a domain missing
    _values_of(params.clients)(trust)  # KeyError: a client missing
    for key in ("sim_time", "horizon_end"):
        if type(st[key]) is not str:
            raise TypeError(f"status {key} is not a string")
        parse_time(st[key])  # ValueError: not a time


def encode_observation(obs: Mapping[str, Any], params: SpaceParams, start: datetime, max_text_length: int = MAX_TEXT_LENGTH) -> dict[str, Any]:
    """Encode one protocol observation as a member of :func:`observation_space` (``text`` cut to ``max_text_length``)."""
    st = obs["status"]
    t = parse_time(st["sim_time"])
    prestige = st["prestige"]
    trust = st["trust"]
    # An integer past what these arrays hold raises ValueError, as check_observation does (not numpy's OverflowError: the
    # vector envs take ValueError for a malformed entry). The amounts are held as float64 but must fit an int64 too.
    try:
        text = obs["text"][:max_text_length]
        command = obs.get("command") or ""
        ints = (obs["ok"], obs["exit_code"], st["active_tasks"], st["planned_tasks"], st["completed_tasks"], st["funds_cents"], st["monthly_payroll_cents"])
        runway = st["runway_months"]
        days = _days_memo(t, start), _days_memo(parse_time(st["horizon_end"]), t)
        numbers = (*_values_of(DOMAINS)(prestige), *_values_of(params.clients)(trust))
        return _observation(text, command, ints, [float(ints[5]), float(ints[6]), _runway(runway), *days, *map(float, numbers)])
    except OverflowError as e:
        raise ValueError(f"the observation holds an integer past what its encoding holds ({e})") from None


_K_PRESTIGE = 5 + len(DOMAINS)
"""Where ``prestige`` ends and ``trust`` starts in the float array of :func:`_observation`."""


def _observation(text: str, command: str, ints: tuple[Any, ...], floats: list[Any]) -> dict[str, Any]:
    """The observation dict of :func:`encode_observation` and :func:`checked_observation`: ``ints`` are ok, exit_code,
    the active, planned and completed tasks, funds and payroll (in int64 only to check that they fit); ``floats`` are
    funds, payroll, the runway (``_runway``), the sim day and the days left, then prestige in :data:`DOMAINS` order and
    trust in the clients' order, each a ``float`` or an ``int`` (numpy converts an ``int`` to float64 as ``float()``
    does, with no ``float()`` call per value: :func:`checked_observation` passes the ints it checked as they came).
    OverflowError for an integer past what the arrays hold.

    Every number comes from one of two arrays (numpy array construction is the costly part): ``f[k, ...]`` is a 0-d
    array (a view of its own element), ``n[k]`` a numpy int64, and prestige and trust are slices of ``f`` (views of their
    own elements), the types a ``np.array(x, dtype)`` / ``np.int64(x)`` per field gave."""
    ok, code, active, planned, completed, funds, payroll = ints
    f = np.array(floats, dtype=np.float64)
    n = np.array([1 if ok else 0, code, active, planned, completed, funds, payroll], dtype=np.int64)
    k = _K_PRESTIGE
    return {
        "text": text,
        "command": command,
        "ok": n[0],
        "exit_code": n[1],
        "funds_cents": f[0, ...],
        "monthly_payroll_cents": f[1, ...],
        "runway_months": f[2, ...],
        "prestige": f[5:k],
        "trust": f[k:],
        "active_tasks": n[2, ...],
        "planned_tasks": n[3, ...],
        "completed_tasks": n[4, ...],
        "sim_day": f[3, ...],
        "days_left": f[4, ...],
    }


_OBS_STATUS = operator.itemgetter("funds_cents", "monthly_payroll_cents", "active_tasks", "planned_tasks", "completed_tasks", "runway_months", "prestige", "trust", "sim_time", "horizon_end")
_FAST_REFUSED = (KeyError, TypeError, ValueError, OverflowError, AttributeError)


def checked_observation(obs: Any, params: SpaceParams, start: datetime, max_text_length: int = MAX_TEXT_LENGTH) -> dict[str, Any]:
    """``check_observation(obs, params)``, then ``encode_observation(obs, params, start, max_text_length)``: the same
    observation or the same exception, for about the cost of the encoding alone (the single envs' step and reset).

    An observation that passes every check on the way (each one at least as strict as :func:`check_observation`'s: the
    exact types, every prestige and trust value among :data:`DOMAINS` and ``params``' clients and no other, the counts
    and amounts within int64 as numpy's int64 array takes them, every number within a float, the times parsed) is
    encoded as it is checked; any other goes through the two functions in turn, which raise what they raise."""
    try:
        if type(obs) is dict:
            st = obs["status"]
            text, ok, code, command = obs["text"], obs["ok"], obs["exit_code"], obs.get("command")
            if type(st) is dict and type(text) is str and type(ok) is bool and type(code) is int and (command is None or type(command) is str):
                funds, payroll, active, planned, completed, runway, prestige, trust, sim_time, horizon = _OBS_STATUS(st)
                clients = params.clients
                if (
                    type(funds) is int
                    and type(payroll) is int
                    and type(active) is int
                    and type(planned) is int
                    and type(completed) is int
                    and (runway is None or type(runway) is int or type(runway) is float)
                    and type(prestige) is dict
                    and type(trust) is dict
                    and len(prestige) == len(DOMAINS)
                    and len(trust) == len(clients)
                    and type(sim_time) is str
                    and type(horizon) is str
                ):
                    # With as many keys as there are domains (clients), all of them present: the values are all of them.
                    numbers = (*_values_of(DOMAINS)(prestige), *_values_of(clients)(trust))
                    if set(map(type, numbers)) <= _NUMBER_TYPES:
                        t = parse_time(sim_time)
                        floats = [funds, payroll, _BIG if runway is None else runway, _days_memo(t, start), _days_memo(parse_time(horizon), t), *numbers]
                        return _observation(text[:max_text_length], command or "", (ok, code, active, planned, completed, funds, payroll), floats)
    except _FAST_REFUSED:
        pass
    check_observation(obs, params)
    return encode_observation(obs, params, start, max_text_length)


def encode_batch(
    observations: Sequence[Mapping[str, Any]], params: SpaceParams, starts: Sequence[datetime], max_text_length: int = MAX_TEXT_LENGTH
) -> dict[str, Any]:
    """Encode N observations as one member of ``batch_space(observation_space(params), N)``.

    Equal to ``gymnasium.vector.utils.concatenate`` of the :func:`encode_observation` results, built
    directly (text and command are tuples of ``str``, the rest numpy arrays with a leading N axis).
    """
    n = len(observations)
    sts = list(map(_STATUS, observations))
    times = list(map(parse_time, map(_SIM_TIME, sts)))

    # Each column's values have the types check_observation gives them (numpy and float() would convert a "5", a true
    # or a null without a word, and truncate a 1.5 to an int): a batch is refused exactly when one of its observations
    # would be, whatever the others hold. One set of types per column, no check per value.
    def ints(key: str, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        vals = list(map(operator.itemgetter(key), rows))
        if set(map(type, vals)) - _INT_TYPE:
            raise TypeError(f"status {key} is not an integer in every observation")
        return np.fromiter(vals, dtype=np.int64, count=n)

    def numbers(maps: Iterable[Mapping[str, Any]], keys: tuple[str, ...], what: str) -> np.ndarray:
        vals = list(chain.from_iterable(map(_values_of(keys), maps)))
        if set(map(type, vals)) - _NUMBER_TYPES:
            raise TypeError(f"status {what} is not an object of numbers in every observation")
        return np.fromiter(vals, dtype=np.float64, count=n * len(keys)).reshape(n, len(keys))

    runways = list(map(_RUNWAY, sts))
    if set(map(type, runways)) - _NUMBER_OR_NONE:
        raise TypeError("status runway_months is not a number or null in every observation")
    # An integer past int64 (the counts and amounts; the amounts are held as float64 but must fit an int64, as
    # check_observation says) or float64 (prestige, trust, runway) raises ValueError, as check_observation does, not
    # numpy's OverflowError (which the vector env's intake does not take for a malformed entry).
    try:
        return {
            "text": tuple(o["text"][:max_text_length] for o in observations),
            "command": tuple(o.get("command") or "" for o in observations),
            "ok": np.fromiter(map(bool, map(_OK, observations)), dtype=np.int64, count=n),
            "exit_code": ints("exit_code", observations),
            "funds_cents": ints("funds_cents", sts).astype(np.float64),
            "monthly_payroll_cents": ints("monthly_payroll_cents", sts).astype(np.float64),
            "runway_months": np.fromiter(map(_runway, runways), dtype=np.float64, count=n),
            "prestige": numbers(map(_PRESTIGE, sts), DOMAINS, "prestige"),
            "trust": numbers(map(_TRUST, sts), params.clients, "trust"),
            "active_tasks": ints("active_tasks", sts),
            "planned_tasks": ints("planned_tasks", sts),
            "completed_tasks": ints("completed_tasks", sts),
            "sim_day": np.fromiter(map(_days_memo, times, starts), dtype=np.float64, count=n),
            "days_left": np.fromiter(map(_days_memo, map(parse_time, map(_HORIZON, sts)), times), dtype=np.float64, count=n),
        }
    except OverflowError as e:
        raise ValueError(f"an observation holds an integer past what its encoding holds ({e})") from None


_STATUS = operator.itemgetter("status")
_SIM_TIME = operator.itemgetter("sim_time")
_HORIZON = operator.itemgetter("horizon_end")
_OK = operator.itemgetter("ok")
_RUNWAY = operator.itemgetter("runway_months")
_PRESTIGE = operator.itemgetter("prestige")
_TRUST = operator.itemgetter("trust")
_STR_OR_NONE = frozenset({str, type(None)})
