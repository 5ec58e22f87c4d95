"""ZeroMQ client of the ycgym wire protocol, version 1 (see ``docs/protocol.md``).

One :class:`Client` owns one ``DEALER`` socket. Every request carries a client-chosen integer ``id``
that the server echoes, so several requests can be in flight at once (:meth:`Client.send` /
:meth:`Client.recv`); the blocking helpers (:meth:`Client.reset`, :meth:`Client.step`, ...) are a
send followed by a receive. Each request has a deadline: when no reply arrives in time a
:class:`TimeoutError` is raised (a late reply is discarded when it eventually arrives). Error replies
are raised as :class:`ProtocolError` with the server's ``code`` and ``message``.

A request interrupted while waiting (``KeyboardInterrupt``, a timeout) is abandoned: its reply, when it comes,
is dropped, so the next request gets its own reply. (The server may still have executed it. An interrupt that lands
in the instant a reply is being taken off the socket loses that reply instead: its id then stays in the client's set of
abandoned ids, a few bytes, and nothing else changes.) When the client
knows how to tell that its server process has exited (``liveness``, set for the local server a
:class:`ycgym.LocalServer` runs), calls fail within a fraction of a second with :class:`ServerExitedError`
instead of waiting for the timeout.

A client is safe to share between threads (an internal lock serialises socket access), but the usual
pattern is one client per thread or one per environment.
"""

from __future__ import annotations

import collections
import enum
import functools
import heapq
import itertools
import math
import numbers
import operator
import re
import reprlib
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NoReturn, cast, overload

import numpy as np
import zmq

from . import _json
from ._binary import BatchArrays, decode_batch_arrays
from ._protocol import (
    CREATING_OPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    GAVE_UP_KEPT,
    MAX_BATCH,
    MAX_CLIENT_QUEUED_BYTES,
    MAX_CLIENT_QUEUED_REQUESTS,
    MAX_SESSION_ID_CHARS,
    ChatMessage,
    EnvSnapshot,
    HelloResult,
    Observation,
    ResetResult,
    Status,
    StepInfo,
    StepResult,
    TimeSeries,
    ToolResult,
    TurnInfo,
    TurnResetResult,
    TurnRestoreResult,
    TurnSnapshot,
    TurnStepResult,
)
from ._spin import resolve_spin_us, spin
from ._version import PROTOCOL_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "BatchArrays",
    "Client",
    "ProtocolError",
    "ServerExitedError",
    "ChatMessage",
    "EnvSnapshot",
    "Observation",
    "Status",
    "TimeSeries",
    "TurnSnapshot",
    "StepInfo",
    "StepResult",
    "ResetResult",
    "HelloResult",
    "ToolResult",
    "TurnInfo",
    "TurnResetResult",
    "TurnRestoreResult",
    "TurnStepResult",
]

# The wire types (Status, Observation, StepResult, HelloResult, TurnInfo, ...) are generated from the TypeScript
# contract (src/protocol, schema/protocol.schema.json) into _protocol.py by scripts/gen/python.ts.

RequestId = int | str

StepEntry = tuple[str, str | int] | list[str | int] | np.ndarray | Mapping[str, str | int]
"""One entry of a ``step_batch``: a ``(session, action)`` pair (a tuple, a list or a numpy row of two) or a mapping
with ``session`` and ``action``; one batch may mix them (:func:`_entries` reads each)."""


class _Default(enum.Enum):
    TOKEN = 0


DEFAULT = _Default.TOKEN
"""Sentinel: use the client's default timeout."""

Timeout = float | None | _Default

MAX_TIMEOUT_S = 2_000_000
"""The longest timeout in seconds (about 23 days: ZeroMQ's waits are 32-bit milliseconds); ``None`` waits forever."""


def check_timeout(value: object, *, allow_zero: bool = False) -> float | None:
    """``value`` as a timeout: None, or a real number of seconds in ``(0, MAX_TIMEOUT_S]`` (0 too with ``allow_zero``,
    for a single call); anything else (a bool, NaN, infinity, a string) raises ValueError."""
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        t = float(value)
        if (t > 0 or (allow_zero and t == 0)) and t <= MAX_TIMEOUT_S:
            return t
    raise ValueError(f"timeout must be a positive number of seconds up to {MAX_TIMEOUT_S}, or None (wait forever), got {value!r}")


class ProtocolError(Exception):
    """An error reply from the server (``{"ok": false, "error": {"code", "message"}}``).

    ``code`` is one of the protocol's error codes (``unknown_session``, ``invalid_request``,
    ``episode_over``, ...). ``index`` is set for a failed entry of :meth:`Client.step_batch`.
    """

    def __init__(self, code: str, message: str, *, request_id: RequestId | None = None, index: int | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.index = index

    def __str__(self) -> str:
        where = f" (batch entry {self.index})" if self.index is not None else ""
        return f"[{self.code}] {self.message}{where}"

    def __repr__(self) -> str:
        return f"ProtocolError({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as it is (``args`` and every field), not through a constructor: a subclass's takes other arguments
        # (EpisodeOverError's index, VectorStepError's errors), and fields set after construction (``index``) travel.
        return (_restored_error, (type(self), self.args, dict(self.__dict__)))


def _restored_error(cls: type[ProtocolError], args: tuple[Any, ...], state: dict[str, Any]) -> ProtocolError:
    """A pickled :class:`ProtocolError` (of class ``cls``) back, with its ``args`` and fields."""
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e


class EpisodeOverError(ProtocolError, AssertionError):
    """A vector env in ``DISABLED`` autoreset mode asked to step while sub-environment ``index``'s episode is over
    (raised before anything is sent: no sub-environment is stepped).

    Both what Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` raise there (an ``AssertionError``, but raised under
    ``python -O`` too) and what a single ycgym env raises when stepped past its end (a :class:`ProtocolError` with code
    ``episode_over``), so an ``except`` written for either catches it. Reset the ended sub-environments with
    ``reset(options={"reset_mask": mask})``.
    """

    def __init__(self, index: int, autoreset_mode: str = "disabled", reason: str | None = None) -> None:
        # ``reason``: why the sub-environment is due for a reset when its episode did not end (a step whose reply could
        # not be read, a step or a reset stopped midway, ...): the message says that instead of "episode is over".
        what = f"sub-environment {index}'s episode is over" if reason is None else f"sub-environment {index} is due for a reset ({reason})"
        super().__init__(
            "episode_over",
            f"{what} (autoreset mode {autoreset_mode.upper()}): reset it first (reset(options={{'reset_mask': mask}}))",
            index=index,
        )


class VectorStepError(ProtocolError):
    """A vector env's ``step`` in which some sub-environments failed while the others went on (raised by
    :class:`ycgym.YCBenchVectorEnv` and :class:`ycgym.YCBenchDiscreteVectorEnv`; docs/vector.md).

    The server steps each entry of a ``step_batch`` on its own: when one fails (its session was lost, its automatic
    reset was refused, ...), the others have stepped. Their results are taken into the env (observations, ended
    episodes, automatic resets) as a step that returned would take them, so the env stays in step with the server, and
    the step's return value for them is here.

    Attributes:
        code, message, index: those of the first failure (lowest sub-environment index): an ``except ProtocolError``
            sees what it saw before this class existed.
        errors: ``{sub-environment index: ProtocolError}``, every failure of the step.
        result: the ``(observations, rewards, terminations, truncations, infos)`` the step would have returned: the
            rows of the sub-environments in ``stepped`` are their step's (with SAME_STEP's reset observation and
            ``final_obs``/``final_info`` where it reset them); every other one keeps its last observation, reward 0,
            both flags false and no info (its ``_key`` masks false).
        stepped: ``bool`` array of ``num_envs``: the sub-environments whose action the server took in this step.

    A sub-environment that failed is as it was before the step (one whose session was lost: reset it with
    ``reset(options={"reset_mask": ...})``, which makes a new session), except one whose reply could not be read
    (``bad_reply``: the server may have run its step): it is due for a reset (the next step resets it; DISABLED refuses
    to step it until it is reset). An automatic reset that was due (NEXT_STEP)
    or failed (SAME_STEP) is not kept: that sub-environment stays due, and the next step resets it (its action
    ignored, reward 0, as NEXT_STEP does) with the seed this one drew.
    """

    def __init__(self, errors: Mapping[int, ProtocolError], result: tuple[Any, ...], stepped: Any) -> None:
        if not errors:
            raise ValueError("a VectorStepError needs at least one error")
        self.errors: dict[int, ProtocolError] = dict(sorted(errors.items()))
        i, first = next(iter(self.errors.items()))
        n = len(stepped)
        more = f"; {len(self.errors) - 1} more failed (errors)" if len(self.errors) > 1 else ""
        super().__init__(
            first.code,
            f"sub-environment {i} of {n}: {first.message}{more}; the step results of the {int(sum(stepped))} that stepped are in .result",
            request_id=first.request_id,
            index=i,
        )
        self.result = result
        self.stepped = stepped

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class ServerExitedError(ConnectionError):
    """The server process behind this client has exited, so no reply will come (its sessions are gone)."""


_ARRAYS = "\x00arrays"
"""Key of a received binary reply's array frames in its decoded dict (the reply envelope's own keys are v, id, ok, result, error)."""

_LIVENESS_POLL_MS = 200
"""While waiting for a reply, how often a client with ``liveness`` checks that its server still runs."""

_LIVENESS_RECHECK_S = 0.05
"""Before sending, ``liveness`` is asked again only when it last said "running" longer ago than this (seconds): a
request sent to a server that exited since is still caught by the check while waiting (``_LIVENESS_POLL_MS``). Asking
on every request cost a ``waitpid`` system call (``Popen.poll``) per lockstep step of ``YCBenchEnv``."""


_REQ_HEAD = b'{"v":%d,"id":' % PROTOCOL_VERSION
# The head every server reply begins with (docs/protocol.md, Replies): the id of the request it answers, and for a
# successful reply naming a session first (what reset, restore, turn_reset and turn_restore answer) that session, read
# from a reply whose rest cannot be read. Only this client's integer ids are taken; anything else reads as no head.
_REPLY_HEAD = re.compile(rb'\{"v":%d,"id":(0|[1-9][0-9]{0,15}),"ok":(?:false|true(?:,"result":\{"session":("(?:[^"\\]|\\.){1,400}")[,}])?)' % PROTOCOL_VERSION)


class _UnreadableReply(ProtocolError):
    """A reply that cannot be read (``bad_reply``): ``request_id`` is the id its head names (None when its head cannot
    be read either), ``session`` the session its head names (a creating op's), else None."""

    session: str | None = None
"""The start of every request's JSON (the envelope's keys in send's order: v, id, op, then the fields)."""
_STEP_SESSION = b',"op":"step","session":'
_STEP_ACTION = b',"action":'


_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)


def _has_input(sock: zmq.Socket[bytes]) -> int:
    """Whether ``sock`` has a message to receive (``ZMQ_EVENTS`` & ``POLLIN``). The constants are plain ints so that
    the ``&`` is an int's: of pyzmq's enums it builds a ``PollEvent`` flag object (a poll measured 3.9 us against 2.5;
    pyzmq 27). The call is not free of enums all the same: ``Socket.get`` looks its option up as a ``SocketOption``
    member on every call, whatever it is given (about 0.5 us of the 2.0 us the ``get`` costs); ``zmq.zmq_poll`` of the
    socket with timeout 0 would skip it (1.5 us, one ``poll`` system call more), but a poll's cost only sets how often
    the spin looks (``_spin.spin`` yields the CPU between polls), not how much CPU a wait takes."""
    return cast(int, sock.get(_EVENTS)) & _POLLIN


def _as_z85(key: str | bytes | None) -> bytes | None:
    if key is None:
        return None
    return key.encode("ascii") if isinstance(key, str) else bytes(key)



BATCH_PART_ENTRIES = 16
"""A split ``step_batch`` (:meth:`Client.send_step_batch`) over a ``pipe://`` endpoint has parts of at least this many
entries ..."""
BATCH_PART_ENTRIES_ZMQ = 64
"""... over ZeroMQ, of at least this many (its messages cost more each: smaller parts measured no faster there) ..."""
BATCH_MAX_PARTS = 4
"""... and at most this many parts."""

_SPLIT_MAX_ACTION_CHARS = 1 << 18
"""A batch whose actions hold more characters than this (together) is sent whole: far below any server's message
limit even in parts, so that splitting can never turn a refused request into accepted ones."""


def _batch_parts(entries: list[dict[str, Any]], min_part: int = BATCH_PART_ENTRIES) -> int:
    """Into how many requests :meth:`Client.send_step_batch` cuts ``entries`` when it splits batches (1: none).

    Only a batch the server accepts as one request (every entry exactly a session id and a command line of the
    schema's types and lengths, at most ``MAX_BATCH`` entries, small) is cut: then each part is one too, the server runs
    them in order (one client's requests run in arrival order), and their results are those of the whole batch.
    """
    n = len(entries)
    parts = min(BATCH_MAX_PARTS, n // min_part)
    if parts < 2 or n > MAX_BATCH:
        return 1
    # Each check over the whole batch at once (C loops: map, set, min, max, sum).
    if set(map(len, entries)) != {2}:
        return 1
    try:
        sessions = list(map(_SESSION, entries))
        actions = list(map(_ACTION, entries))
    except KeyError:  # two keys, not these
        return 1
    if set(map(type, sessions)) != {str} or set(map(type, actions)) != {str}:
        return 1
    lengths = list(map(len, sessions))
    if min(lengths) < 1 or max(lengths) > MAX_SESSION_ID_CHARS:
        return 1
    return parts if sum(map(len, actions)) <= _SPLIT_MAX_ACTION_CHARS else 1


_SESSION = operator.itemgetter("session")
_ACTION = operator.itemgetter("action")


_PAIRS = "step_batch takes (session, action) pairs or mappings"


class _NotAnEntry(Exception):
    pass


def field_of(result: Any, op: str, key: str, kind: type) -> Any:
    """The field ``key`` of an ``op`` request's result, or ``ProtocolError("bad_reply")`` when the result is no object or
    that field is absent or not a ``kind``. For the ops that read (``snapshot``, ``turn_snapshot``, ``turn_messages``):
    the session is as it was. Shared by the client's methods of those ops and every env's snapshot and pickling."""
    value = result.get(key) if type(result) is dict else None
    if type(value) is not kind:
        got = "no object" if type(result) is not dict else f"no {key}" if key not in result else f"a {key} of type {type(value).__name__}"
        raise ProtocolError("bad_reply", f"a {op} reply is a malformed result ({got}; the session is unchanged)")
    return value


def snapshot_of(result: Any) -> dict[str, Any]:
    """The snapshot a ``snapshot`` request's result holds (an opaque ``EnvSnapshot``: an object), checked by
    :func:`field_of`."""
    snap: dict[str, Any] = field_of(result, "snapshot", "snapshot", dict)
    return snap


def _pair(s: Any) -> dict[str, Any]:
    """A ``(session, action)`` pair given as another sequence of two (a list, a numpy row)."""
    if not isinstance(s, (str, bytes, bytearray)):
        try:
            if len(s) == 2:
                return {"session": s[0], "action": s[1]}
        except TypeError:  # no len()
            pass
    raise _NotAnEntry


def _entries(steps: Iterable[Any]) -> list[dict[str, Any]]:
    """The request entries of ``step_batch`` steps: ``(session, action)`` pairs or mappings (a tuple of two is tested
    first: ``isinstance(s, Mapping)`` is an ABC check, the costliest part of the list for the vector envs' pairs).
    Anything else is a TypeError naming it (and its place), before anything is sent."""
    if isinstance(steps, (str, bytes, bytearray, Mapping)):
        raise TypeError(f"ycgym: {_PAIRS} (a list of them), got a {type(steps).__name__}")
    if type(steps) is not list:
        steps = list(steps)
    try:
        return [{"session": s[0], "action": s[1]} if type(s) is tuple and len(s) == 2 else dict(s) if isinstance(s, Mapping) else _pair(s) for s in steps]
    except _NotAnEntry:
        pass
    for i, s in enumerate(steps):
        if not isinstance(s, Mapping):
            try:
                _pair(s)
            except _NotAnEntry:
                raise TypeError(f"ycgym: {_PAIRS}; entry {i} is {reprlib.repr(s)}") from None
    raise AssertionError("unreachable: an entry failed and none fails again")  # pragma: no cover


def _unencodable(msg: Mapping[str, Any], e: Exception) -> str:
    """Which field of a request JSON refuses, and why."""
    for k, v in msg.items():
        try:
            _json.dumps(v)
        except (TypeError, ValueError) as fe:
            return f"its field {k!r} ({type(v).__name__}): {fe}"
    return str(e)


class Client:
    """A ``DEALER`` connection to a ycgym server.

    Args:
        endpoint: ZeroMQ endpoint, e.g. ``"tcp://127.0.0.1:5555"`` or ``"ipc:///tmp/ycgym.sock"``.
        timeout: default per-request timeout in seconds: a positive number up to ``MAX_TIMEOUT_S`` (about 23 days), or
            ``None`` to wait forever; a call's own ``timeout`` may be 0 as well. Over ZeroMQ a send that cannot be
            queued (no connection to the server, or too many requests waiting) also gives up after it (``TimeoutError``),
            and so does a send over a ``pipe://`` endpoint that the server does not read (it is stopped, or busy for
            longer); that request is then abandoned (the rest of it goes out before the next request, its reply is
            dropped).
        server_public_key: the server's CURVE public key (Z85, 40 characters). Enables CURVE.
        public_key, secret_key: this client's CURVE key pair (Z85). Generated when CURVE is enabled
            and they are not given.
        context: ZeroMQ context to use (default: the process-wide ``zmq.Context.instance()``).
        liveness: called while waiting for a reply: ``None`` while the server runs, else a sentence saying how
            it ended (then requests fail at once with :class:`ServerExitedError`).
        spin_us: how long a wait for a reply polls the socket before it sleeps (microseconds; default: the
            environment variable ``YCGYM_SPIN_US``, else 500 on a process allowed more than one CPU, else 0; see
            ``ycgym._spin``). A ``pipe://`` endpoint's is its ``LocalServer``'s ``spin_us``.
        split_batches: send a large :meth:`step_batch` as a few pipelined requests (:meth:`send_step_batch`): the
            same results, sooner (the server runs one part while this process decodes the last). Default: on, with
            parts of at least ``BATCH_PART_ENTRIES`` (16) entries over a ``pipe://`` endpoint and
            ``BATCH_PART_ENTRIES_ZMQ`` (64) over ZeroMQ.
        max_message_bytes: the largest request this client sends (bytes of its JSON); a larger one raises
            :class:`ProtocolError` ``message_too_large`` here, and nothing is sent. Default: a server's default limit
            (``DEFAULT_MAX_MESSAGE_BYTES``, 8 MiB; ``hello``'s ``limits.max_message_bytes`` says a server's own). Raise
            it for a server started with a larger ``--max-message-bytes``; ``None``: no check here.

    :meth:`send_all` and :meth:`request_all` keep at most ``SEND_WINDOW`` of their requests (``SEND_WINDOW_BYTES`` of
    JSON) unanswered: beyond it they read replies (kept for :meth:`gather`) before sending more, since a server keeps
    ``MAX_CLIENT_QUEUED_REQUESTS`` requests (``MAX_CLIENT_QUEUED_BYTES``) waiting for one client and answers more with
    ``capacity``.
    """

    SEND_WINDOW = MAX_CLIENT_QUEUED_REQUESTS // 2
    """Requests of one :meth:`send_all` sent ahead of their replies (half the server's per-client quota)."""
    SEND_WINDOW_BYTES = MAX_CLIENT_QUEUED_BYTES // 2
    """Their bytes (half the server's per-client quota)."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float | None = 30.0,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
        context: zmq.Context[Any] | None = None,
        liveness: Callable[[], str | None] | None = None,
        spin_us: int | None = None,
        split_batches: bool | None = None,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if max_message_bytes is not None and (isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) or max_message_bytes < 1):
            raise ValueError(f"max_message_bytes must be a positive integer or None, got {max_message_bytes!r}")
        self.max_message_bytes = max_message_bytes
        self.endpoint = endpoint
        self._sock: Any = None
        self.timeout = timeout
        self._split_batches = True if split_batches is None else bool(split_batches)
        # Over ZeroMQ each message costs more (and its I/O thread shares the cores): parts of 16 measured no faster
        # there, parts of 64 faster from 128 entries up (bench/bench_split.py).
        self._min_part = BATCH_PART_ENTRIES if endpoint.startswith("pipe://") else BATCH_PART_ENTRIES_ZMQ
        self._liveness = liveness
        self._spin_s = 0.0  # a pipe's connection spins itself
        if endpoint.startswith("pipe://"):
            if spin_us is not None:
                raise ValueError("spin_us of a pipe endpoint is its server's: LocalServer('pipe', spin_us=...)")
            # A local server child process over its pipes (ycgym._pipe): no ZeroMQ socket, no CURVE (only this
            # process holds the pipes).
            if server_public_key is not None or public_key is not None or secret_key is not None:
                raise ValueError("CURVE keys do not apply to a pipe endpoint (only this process can reach its server)")
            from ._pipe import connection_for

            self._ctx = None
            self._sock = connection_for(endpoint).open_socket()
            self.timeout = timeout  # now that there is a socket: its send timeout (the `timeout` setter)
            self._init_state()
            return
        self._spin_s = resolve_spin_us(spin_us) / 1e6
        self._ctx = context or zmq.Context.instance()
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        # Sessions belong to the connection's routing id: a random one of our own (not ZeroMQ's 5-byte counter)
        # keeps them ours across a reconnection after a network failure, and is not guessable.
        sock.setsockopt(zmq.ROUTING_ID, b"c" + secrets.token_hex(16).encode("ascii"))
        spk = _as_z85(server_public_key)
        if spk is not None:
            if not zmq.has("curve"):
                sock.close(0)
                raise RuntimeError("this libzmq was built without CURVE support")
            pk, sk = _as_z85(public_key), _as_z85(secret_key)
            if (pk is None) != (sk is None):
                sock.close(0)
                raise ValueError("give both public_key and secret_key, or neither")
            if pk is None or sk is None:
                pk, sk = zmq.curve_keypair()
            sock.curve_serverkey = spk
            sock.curve_publickey = pk
            sock.curve_secretkey = sk
        elif public_key is not None or secret_key is not None:
            sock.close(0)
            raise ValueError("client CURVE keys need server_public_key")
        try:
            sock.connect(endpoint)
        except zmq.ZMQError as e:
            sock.close(0)
            raise ValueError(
                f"ycgym: cannot connect to {endpoint!r}: {e} (an endpoint is tcp://HOST:PORT, ipc:///PATH, or the pipe:// "
                "endpoint of a LocalServer of this process)"
            ) from None
        self._sock = sock
        self.timeout = timeout  # now that there is a socket: its send timeout (the `timeout` setter)
        self._has_input = functools.partial(_has_input, sock)
        self._init_state()

    @property
    def timeout(self) -> float | None:
        """Default per-request timeout in seconds (``None`` waits forever)."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        check_timeout(value)
        self._timeout = value
        if self._sock is not None:
            # A ZeroMQ send waits while the socket has no room to queue the request (no connection, or SNDHWM
            # requests waiting), a pipe's while the server does not read it: at most this long, like the wait for a
            # reply (ZMQ_SNDTIMEO, in ms; -1 waits forever).
            self._sock.setsockopt(zmq.SNDTIMEO, -1 if value is None else max(0, round(value * 1000)))

    def _call_timeout(self, timeout: Timeout) -> float | None:
        """A call's timeout: the client's for ``DEFAULT``, else ``timeout`` checked (0 allowed)."""
        return self.timeout if isinstance(timeout, _Default) else check_timeout(timeout, allow_zero=True)

    def _init_state(self) -> None:
        self._rcvtimeo = -1  # the socket's ZMQ_RCVTIMEO (ms; -1 waits forever), set by _wait_for when it changes
        self._alive_at = float("-inf")  # time.monotonic() when liveness last said the server runs
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        # Replies received while waiting for another id; ids whose waiter gave up (timeout).
        self._stash: dict[RequestId, dict[str, Any]] = {}
        self._pending: dict[RequestId, str] = {}
        # Requests given up on whose replies may still come, in the order given up, each with its mark: the reply to a
        # request whose id is above the mark is one sent after it (:meth:`_give_up`, :meth:`_answered`).
        self._abandoned: dict[RequestId, int] = {}
        # Their marks, lowest first (a heap of (mark, n, id), n the order pushed): a reply forgets the abandoned requests
        # whose marks are below its id by popping from it, not by walking every one kept (up to GAVE_UP_KEPT) per reply.
        # An entry whose id is no longer kept with that mark (answered, forgotten, given up on again) is skipped.
        self._marks: list[tuple[int, int, RequestId]] = []
        self._marks_pushed = 0
        # The highest request id sent, and whether every send so far had a higher id than the ones before (ids are
        # drawn before the lock: threads may send them out of order).
        self._max_sent = 0
        self._sent_in_order = True
        # Requests that make a session the caller learns of only from their reply (a creating op naming no session),
        # while unanswered; those of them abandoned: their late replies' sessions are closed (nobody else can).
        self._anonymous: set[RequestId] = set()
        self._orphaned: set[RequestId] = set()
        # The hand-off slot: (request id, reply) of the reply last taken for its waiter, stored (one store, so the two
        # always match) before the request stops being pending or stashed. A waiter stopped (Ctrl-C) after its reply
        # was taken and before its caller held the result finds it here (gather). recv leaves it there (gather calls
        # recv, and the reply must stay in the slot until gather has appended it); the client's own callers empty it
        # once they hold the result (gather after its append, step, request, the step_batch calls, _await_reply once
        # the reply is in the stash again), so no reply is kept past its call; a reply of a direct recv stays until
        # the next one is taken.
        self._handed: tuple[RequestId, dict[str, Any]] | None = None

    @property
    def liveness(self) -> Callable[[], str | None] | None:
        """The check of the server's life this client makes (the ``liveness`` argument; None: none). Settable, e.g. to
        watch a local server this client was not made for: from then on a request to it fails at once
        (:class:`ServerExitedError`) once the check says it ended, and the next request asks it first."""
        return self._liveness

    @liveness.setter
    def liveness(self, check: Callable[[], str | None] | None) -> None:
        self._liveness = check
        self._alive_at = float("-inf")  # no "running" of this check yet: the next send asks it

    # ------------------------------------------------------------------ low level

    @property
    def closed(self) -> bool:
        return self._sock is None

    def _socket(self) -> zmq.Socket[bytes]:
        sock: zmq.Socket[bytes] | None = self._sock
        if sock is None:
            raise RuntimeError("the client is closed")
        return sock

    def _check_alive(self, op: str) -> None:
        if self._liveness is not None:
            gone = self._liveness()
            if gone is not None:
                raise ServerExitedError(f"ycgym: {gone}. No reply to {op!r} will come; its sessions are gone (reset() starts a new server).")
            self._alive_at = time.monotonic()

    def _exited(self, op: str, e: ServerExitedError) -> NoReturn:
        """The server's pipe closed: raise with how the process ended, once ``liveness`` knows (it soon does)."""
        if self._liveness is not None:
            until = time.monotonic() + 2.0
            while time.monotonic() < until:
                self._check_alive(op)  # raises once the exit is seen
                time.sleep(0.005)
        raise ServerExitedError(f"ycgym: {e}. No reply to {op!r} will come; its sessions are gone.") from None

    def send(self, op: str, **fields: Any) -> int:
        """Send one request without waiting; returns its id (pass it to :meth:`recv`)."""
        rid = next(self._ids)
        payload = self._request_bytes(rid, op, fields)
        self._note_anonymous(rid, op, fields)
        try:
            self._send_payload(rid, op, payload)
        except BaseException:
            with self._lock:  # not sent, or abandoned by _send_payload (then an orphan: see abandon)
                self._anonymous.discard(rid)
            raise
        return rid

    def _note_anonymous(self, rid: int, op: str, fields: Mapping[str, Any]) -> None:
        """Remember request ``rid`` when it makes a session nobody knows until its reply names it (see :meth:`abandon`)."""
        if op in CREATING_OPS and fields.get("session") is None:
            with self._lock:
                self._anonymous.add(rid)

    @staticmethod
    def _request_bytes(rid: int, op: str, fields: Mapping[str, Any]) -> bytes:
        msg: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": rid, "op": op}
        try:
            items = fields.items()
        except AttributeError:
            raise TypeError(f"ycgym: the fields of a {op!r} request are a mapping, got {type(fields).__name__}") from None
        for k, v in items:
            if v is not None:
                msg[k] = v
        try:
            return _json.dumps(msg)
        except (TypeError, ValueError) as e:  # a value JSON has no form for (bytes, a set, NaN, a lone surrogate)
            raise TypeError(f"ycgym: the {op!r} request cannot be sent as JSON: {_unencodable(msg, e)}") from None

    def request_all(self, op: str, requests: Iterable[Mapping[str, Any]], *, timeout: Timeout = DEFAULT, raise_errors: bool = True) -> list[Any]:
        """One ``op`` request per mapping of fields in ``requests``, pipelined, and their results in order: what
        ``gather([send(op, **f) for f in requests], ...)`` returns, except that an interrupt (Ctrl-C) landing anywhere,
        between two sends as well, abandons every request already sent (their replies are dropped when they come; the
        list comprehension loses the ids of those sent before it is interrupted, and their replies stay in the client)."""
        ids: list[int] = []
        try:
            self.send_all(op, requests, ids)
            return self.gather(ids, timeout=timeout, raise_errors=raise_errors)
        except BaseException:
            self.abandon(ids)  # those received, or never sent, are not pending: left alone
            raise

    def send_all(self, op: str, requests: Iterable[Mapping[str, Any]], ids: list[int] | None = None) -> list[int]:
        """Send one ``op`` request per mapping of fields in ``requests``, pipelined, without waiting; their ids, in
        order (collect the results with :meth:`gather`). Each id is appended to ``ids`` (when given) before its request
        goes out: hold that list in a ``try`` that abandons it, and an interrupt at any point, this call's return
        included, leaves no reply kept for nobody. An interrupt during the sends abandons those already sent."""
        out: list[int] = ids if ids is not None else []
        start = len(out)
        # Sent and not yet answered, oldest first, with their sizes: kept within the window by reading replies
        # (they wait in the stash for gather) before sending more.
        unanswered: collections.deque[tuple[int, int]] = collections.deque()
        unanswered_bytes = 0
        try:
            for fields in requests:
                rid = next(self._ids)
                payload = self._request_bytes(rid, op, fields)
                while unanswered and (len(unanswered) >= self.SEND_WINDOW or unanswered_bytes + len(payload) > self.SEND_WINDOW_BYTES):
                    oldest, size = unanswered.popleft()
                    unanswered_bytes -= size
                    self._await_reply(oldest)
                out.append(rid)
                self._note_anonymous(rid, op, fields)
                self._send_payload(rid, op, payload)
                unanswered.append((rid, len(payload)))
                unanswered_bytes += len(payload)
        except BaseException:
            self.abandon(out[start:])
            raise
        return out

    def _await_reply(self, request_id: RequestId) -> None:
        """Wait (up to the client's timeout) until the reply to ``request_id`` has come, and leave it for ``recv``."""
        with self._lock:
            if request_id in self._stash or request_id not in self._pending:
                return
            op = self._pending[request_id]
            anonymous = request_id in self._anonymous
            t = self.timeout
            reply = self._wait_for(self._socket(), request_id, None if t is None else time.monotonic() + t, t)
            self._stash[request_id] = reply
            self._pending[request_id] = op
            self._handed = None  # in the stash again, for recv
            if anonymous:  # still unread: abandoned now, its session is closed (see abandon)
                self._anonymous.add(request_id)

    def _send_step(self, session: str, action: str) -> int:
        """``send("step", session=session, action=action)`` with the request's bytes written from a fixed prefix and
        the two texts' JSON (no dict built and serialised per lockstep step). The same bytes: the codec's compact JSON
        of an object is its members' JSON joined in order (test_client.py compares the two for random texts)."""
        if type(session) is not str or type(action) is not str:
            return self.send("step", session=session, action=action)
        rid = next(self._ids)
        dumps = _json.dumps
        self._send_payload(rid, "step", b"%b%d%b%b%b%b}" % (_REQ_HEAD, rid, _STEP_SESSION, dumps(session), _STEP_ACTION, dumps(action)))
        return rid

    def _check_size(self, rid: int, op: str, payload: bytes) -> None:
        limit = self.max_message_bytes
        if limit is not None and len(payload) > limit:
            # Refused here, as the server would (over ZeroMQ a frame above 4x its limit is dropped with the connection,
            # and the request would time out): nothing is sent, and the client goes on.
            raise ProtocolError(
                "message_too_large",
                f"request {op!r} is {len(payload)} bytes; the limit is {limit} (the client's max_message_bytes); nothing was sent",
                request_id=rid,
            )

    def _send_payload(self, rid: int, op: str, payload: bytes) -> None:
        self._check_size(rid, op, payload)
        with self._lock:
            sock = self._socket()
            if self._liveness is not None and time.monotonic() - self._alive_at >= _LIVENESS_RECHECK_S:
                self._check_alive(op)
            # Pending before sending: an interrupt between the two must not leave a reply nobody expects.
            self._pending[rid] = op
            if rid > self._max_sent:
                self._max_sent = rid
            else:
                self._sent_in_order = False
            try:
                sock.send(payload, 0, copy=len(payload) < 65536)
            except ServerExitedError as e:
                self._pending.pop(rid, None)
                self._exited(op, e)
            except zmq.Again:
                self._pending.pop(rid, None)
                raise TimeoutError(
                    f"ycgym: could not send {op!r} (id {rid}) to {self.endpoint} within {self.timeout} s: ZeroMQ has no room "
                    "to queue it (no connection to the server, or too many requests waiting; is the server running and "
                    "reachable, with the CURVE keys it expects?)"
                ) from None
            except TimeoutError:
                # A pipe's server did not take the whole request in time (stopped, or busy for longer than the
                # timeout): the rest of it stays queued and goes out before the next request, so the stream stays
                # framed; abandoned, like an interrupted send.
                self.abandon([rid])
                raise TimeoutError(
                    f"ycgym: could not send {op!r} (id {rid}) to {self.endpoint} within {self.timeout} s: the server did not "
                    "read its pipe (is it stopped, or busy for longer than that?); the request is abandoned (what was not "
                    "written goes out before the next request, and its reply, if one comes, is dropped)"
                ) from None
            except BaseException:
                # Maybe sent (an interrupt lands once the send has returned as well as during it): abandoned, so a
                # reply, if one comes, is dropped rather than kept for nobody (if none comes, the id stays in the
                # abandoned set: a few bytes).
                self.abandon([rid])
                raise

    def abandon(self, request_ids: Iterable[RequestId]) -> None:
        """Give up on requests whose results nobody will read: their replies are dropped when they arrive.

        A request abandoned that makes a new session (``reset``, ``restore``, ``turn_reset``, ``turn_restore`` naming no
        session: a timeout, Ctrl-C while waiting for it) may have made it on the server, and nobody can know its id:
        the client closes that session (a ``close`` request, its reply dropped) as soon as the reply naming it is in
        hand (now, or when it arrives while this client waits for another reply). Until then it holds a place on the
        server; if this client is closed first, the server's idle timeout frees it."""
        with self._lock:
            for rid in request_ids:
                got = self._stash.pop(rid, None)
                if got is None and rid in self._pending:
                    self._give_up(rid)
                    if rid in self._anonymous:
                        self._orphaned.add(rid)
                elif got is not None and rid in self._anonymous:
                    self._close_orphan(got)
                self._anonymous.discard(rid)
                self._pending.pop(rid, None)

    def _give_up(self, rid: RequestId) -> None:
        """Note ``rid``, sent and not answered, as abandoned: its reply, if it comes, is dropped. Its mark: its own id
        while every request was sent in the order of its id (the usual case, one thread), else the highest id sent so
        far; a reply to an id above it is one to a request sent after it. Past ``GAVE_UP_KEPT`` ids the oldest is
        forgotten (a server that never answers makes the client hold no more)."""
        mark = rid if self._sent_in_order and type(rid) is int else self._max_sent
        self._abandoned[rid] = mark
        if len(self._abandoned) > GAVE_UP_KEPT:
            oldest = next(iter(self._abandoned))
            del self._abandoned[oldest]
            self._orphaned.discard(oldest)
        if len(self._marks) > 2 * len(self._abandoned) + 64:  # mostly stale: rebuilt from the ids kept
            self._marks = [(m, i, r) for i, (r, m) in enumerate(self._abandoned.items())]
            heapq.heapify(self._marks)
            self._marks_pushed = len(self._marks)
        heapq.heappush(self._marks, (mark, self._marks_pushed, rid))
        self._marks_pushed += 1

    def _answered(self, rid: RequestId) -> None:
        """The reply to this client's request ``rid`` came. The server answers a connection's requests in order, so
        every abandoned request sent before it has had its reply already (perhaps one that named no request) or never
        will (dropped unanswered): its id is forgotten, and no longer makes a reply that names no request ambiguous."""
        if type(rid) is int:
            marks, kept = self._marks, self._abandoned
            while marks and marks[0][0] < rid:
                mark, _, r = heapq.heappop(marks)
                if r in kept and kept[r] == mark:
                    del kept[r]
                    self._orphaned.discard(r)
            if not kept:
                marks.clear()

    def _close_orphan(self, reply: Mapping[str, Any]) -> None:
        """Close the session the reply ``reply`` to an abandoned request made (if it made one): best effort, its reply
        dropped (a failure to send is left to the server's idle timeout)."""
        res = reply.get("result") if reply.get("ok") else None
        session = res.get("session") if isinstance(res, dict) else None
        if type(session) is str:
            self._close_session(session)

    def _close_session(self, session: str) -> None:
        """Send ``close`` of ``session`` (one an abandoned or failed request made), its reply dropped: best effort (a
        failure to send is left to the server's idle timeout)."""
        if self._sock is None:
            return
        rid = next(self._ids)
        try:
            self._send_payload(rid, "close", self._request_bytes(rid, "close", {"session": session}))
        except Exception:  # noqa: BLE001 - best effort: the idle timeout frees it
            return
        finally:
            self.abandon([rid])

    def recv(self, request_id: RequestId, timeout: Timeout = DEFAULT) -> Any:
        """Wait for the reply to ``request_id`` and return its ``result``.

        Raises :class:`ProtocolError` for an error reply and :class:`TimeoutError` when no reply
        arrives within ``timeout`` seconds (default: the client's ``timeout``).
        """
        return self._result(self._recv_reply(request_id, self._call_timeout(timeout)), request_id)

    @staticmethod
    def _result(reply: dict[str, Any], request_id: RequestId) -> Any:
        """The result of ``reply`` (to ``request_id``), or its :class:`ProtocolError` raised (:meth:`recv`)."""
        if reply.get("ok"):
            frames = reply.get(_ARRAYS)
            if frames is not None:
                try:
                    return decode_batch_arrays(reply["result"], frames, ProtocolError)
                except (ValueError, TypeError, AttributeError) as e:
                    raise ProtocolError("bad_reply", f"malformed binary reply: {e}", request_id=request_id) from None
            return reply.get("result")
        err = reply.get("error") or {}
        raise ProtocolError(str(err.get("code", "internal")), str(err.get("message", "")), request_id=request_id)

    def _recv_reply(self, request_id: RequestId, timeout: float | None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            sock = self._socket()
            try:
                return self._wait_for(sock, request_id, deadline, timeout)
            except BaseException:
                handed = self._handed
                if handed is not None and handed[0] == request_id:
                    # Stopped once its reply was taken (the hand-off slot holds it): no longer pending or stashed, nor a
                    # session to close; a caller that keeps what it receives (gather) takes it from the slot.
                    self._stash.pop(request_id, None)
                    self._pending.pop(request_id, None)
                    self._anonymous.discard(request_id)
                else:
                    # Interrupted (Ctrl-C), timed out, or the server is gone: drop the reply if it still comes.
                    self.abandon([request_id])
                raise

    def _wait_for(self, sock: zmq.Socket[bytes], request_id: RequestId, deadline: float | None, timeout: float | None) -> dict[str, Any]:
        while True:
            got = self._stash.get(request_id)
            if got is not None:
                self._handed = (request_id, got)  # before it leaves the stash: an interrupt finds it in one or both
                del self._stash[request_id]
                self._pending.pop(request_id, None)
                if self._anonymous:
                    self._anonymous.discard(request_id)
                return got
            if deadline is None:
                wait_ms: int | None = None
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    op = self._pending.get(request_id, "request")
                    raise TimeoutError(
                        f"ycgym: no reply to {op!r} (id {request_id}) from {self.endpoint} within {timeout:g} s "
                        "(is the server running and reachable?)"
                    )
                wait_ms = max(1, int(remaining * 1000))
            # One blocking receive bounded by the socket's receive timeout (set only when it changes): in lockstep
            # the reply is not there yet right after the send; a poll followed by a non-blocking receive cost two
            # calls into libzmq and the Poller's Python wrapper per reply, and a failed non-blocking receive a
            # raised zmq.Again. zmq.Again now means only that the wait ran out.
            if self._liveness is not None:
                wait_ms = _LIVENESS_POLL_MS if wait_ms is None else min(wait_ms, _LIVENESS_POLL_MS)
            if self._spin_s > 0:
                # Poll first (ZMQ_EVENTS also runs the socket's pending commands: a reply the I/O thread has queued
                # shows up); the blocking receive below then returns at once, or waits for what remains.
                budget = self._spin_s if wait_ms is None else min(self._spin_s, wait_ms / 1000)
                if not spin(self._has_input, budget) and wait_ms is not None:
                    wait_ms = max(1, wait_ms - math.ceil(budget * 1000))
            timeo = -1 if wait_ms is None else wait_ms
            if timeo != self._rcvtimeo:
                sock.setsockopt(zmq.RCVTIMEO, timeo)
                self._rcvtimeo = timeo
            try:
                frames = sock.recv_multipart()
            except ServerExitedError as e:  # the pipe transport's end of file
                self._exited(self._pending.get(request_id, "request"), e)
            except zmq.Again:
                if self._liveness is not None:
                    self._check_alive(self._pending.get(request_id, "request"))
                continue
            try:
                reply = self._decode(frames)
            except _UnreadableReply as e:
                self._take_unreadable(e, request_id)  # raises when it answers request_id (or names no request)
                continue
            rid = reply.get("id")
            if rid == request_id:
                self._handed = (request_id, reply)
                self._pending.pop(request_id, None)
                if self._anonymous:
                    self._anonymous.discard(request_id)
                if self._abandoned:
                    self._answered(rid)
                return reply
            if type(rid) is not int:
                # No id of this client's (null: the server could not read the request's id, e.g. message_too_large).
                if self._take_unnamed(reply, request_id):
                    return reply
                continue
            if rid in self._abandoned:
                del self._abandoned[rid]
                if rid in self._orphaned:
                    self._orphaned.discard(rid)
                    self._close_orphan(reply)
                self._answered(rid)
                continue
            if rid in self._pending:  # another request's: kept until its waiter takes it
                self._stash[rid] = reply
                if self._abandoned:
                    self._answered(rid)
            # Else no request awaits it (an id never sent, a request already answered): dropped, not kept for nobody.

    @staticmethod
    def _decode(frames: list[bytes]) -> dict[str, Any]:
        # The reply is the first frame that is not an empty delimiter; a binary step_batch reply has its array
        # frames after it (kept under _ARRAYS, decoded by recv).
        h = 0
        while h < len(frames) - 1 and not frames[h]:
            h += 1
        # A reply that cannot be read is ``bad_reply`` (not the server's ``bad_json``, which refuses a request unread): the
        # request it answers may have run.
        try:
            reply = _json.loads(frames[h])
        except ValueError as e:
            raise Client._unreadable(frames[h], f"server reply is not JSON: {e}") from None
        if not isinstance(reply, dict):
            raise Client._unreadable(frames[h], "server reply is not a JSON object")
        if h < len(frames) - 1:
            res = reply.get("result")
            if reply.get("ok") and isinstance(res, dict) and res.get("encoding") == "binary":
                reply[_ARRAYS] = frames[h + 1 :]
        return cast("dict[str, Any]", reply)

    @staticmethod
    def _unreadable(frame: bytes, why: str) -> _UnreadableReply:
        """The ``bad_reply`` of reply ``frame`` that cannot be read (``why``), with the request id and the session its
        head names when the head can be read (``_REPLY_HEAD``)."""
        m = _REPLY_HEAD.match(frame)
        rid = int(m.group(1)) if m is not None else None
        session = None
        if m is not None and m.group(2) is not None:
            try:
                got = _json.loads(m.group(2))
            except ValueError:
                got = None
            if type(got) is str and 0 < len(got) <= MAX_SESSION_ID_CHARS:
                session = got
        e = _UnreadableReply("bad_reply", f"{why} (the request may have run)", request_id=rid)
        e.session = session
        return e

    def _take_unreadable(self, e: _UnreadableReply, request_id: RequestId) -> None:
        """Attribute the unreadable reply ``e`` (from :meth:`_decode`) while waiting for ``request_id``: raise it when it
        answers ``request_id``; keep it as the error of the pending request it answers, or drop it for an abandoned one,
        and return (the wait goes on). A reply whose head names no request fails every pending request of this client,
        raising for ``request_id``: any of them may be the one it answers. The session a creating request's reply names
        in its head is closed (its caller gets an error, not the session)."""
        rid = e.request_id
        if rid is None:
            others = [r for r in self._pending if r != request_id and r not in self._stash]
            note = f"; the {len(others)} other requests pending on this connection fail with this error too" if others else ""
            self._fail_pending(
                request_id,
                others,
                f"a server reply could not be read and its head names no request: it may answer this request ({e.message}){note}; "
                "a request it answers may have run",
            )
        made = e.session
        if rid is not None and self._abandoned and (rid == request_id or rid in self._pending or rid in self._abandoned):
            self._answered(rid)
        if rid == request_id or (rid in self._pending and rid not in self._stash):
            anonymous = rid in self._anonymous
            self._anonymous.discard(rid)
            if anonymous and made is not None:
                self._close_session(made)
                e.message += f"; the session it made ({made}) was closed"
                e.args = (e.code, e.message)
            if rid == request_id:
                self._pending.pop(rid, None)
                raise e
            self._stash[rid] = {"id": rid, "ok": False, "error": {"code": "bad_reply", "message": e.message}}
            return
        if rid in self._abandoned:
            del self._abandoned[rid]
            if rid in self._orphaned:
                self._orphaned.discard(rid)
                if made is not None:
                    self._close_session(made)
        # Else it answers no request of this client's that is waiting: dropped.

    def _take_unnamed(self, reply: dict[str, Any], request_id: RequestId) -> bool:
        """Attribute the reply ``reply`` whose id names no request (null, or no id this client sends) while waiting for
        ``request_id``: True when it is ``request_id``'s (the one request of this connection whose reply is still to
        come), else it is kept for (or dropped with) the one other such request, or dropped when there is none, and
        False (the wait goes on). With more than one it may answer any of them: every pending request fails with
        ``bad_reply`` naming the others, raised for ``request_id`` (their own replies, if they come, are dropped)."""
        waiting = [r for r in self._pending if r not in self._stash]
        if len(waiting) + len(self._abandoned) == 1:
            (only,) = waiting or self._abandoned
            if only == request_id:
                self._handed = (request_id, reply)
                self._pending.pop(request_id, None)
                self._anonymous.discard(request_id)
                return True
            if only in self._abandoned:
                del self._abandoned[only]
                if only in self._orphaned:
                    self._orphaned.discard(only)
                    self._close_orphan(reply)
            else:
                self._stash[only] = reply
            return False
        if not waiting and not self._abandoned:
            return False  # no request of this connection's awaits a reply: dropped
        err = reply.get("error")
        told = f"{err.get('code')}: {err.get('message')}" if isinstance(err, dict) else ("ok" if reply.get("ok") else "no error")
        outstanding = sorted(r for r in (*waiting, *self._abandoned) if type(r) is int)  # this client's ids are ints
        shown = ", ".join(map(str, outstanding[:16])) + (f" and {len(outstanding) - 16} more" if len(outstanding) > 16 else "")
        self._fail_pending(
            request_id,
            [r for r in waiting if r != request_id],
            f"a server reply names no request (id {'null' if reply.get('id') is None else repr(reply.get('id'))[:60]}; the server's reply: {told[:300]}) while {len(outstanding)} requests "
            f"of this connection await their replies (ids {shown}): it may answer any of them, so every one still pending fails "
            "with this error; a request it answers may have run",
        )
        return False  # not reached: _fail_pending raises

    def _fail_pending(self, request_id: RequestId, others: list[RequestId], msg: str) -> NoReturn:
        """Fail the pending requests ``others`` and ``request_id`` (raised) with ``bad_reply`` ``msg``: a reply that names
        no request may answer any of them. Their own replies, if they come, are dropped (a session made by a creating op
        closed: see :meth:`abandon`)."""
        for r in others:
            self._stash[r] = {"id": r, "ok": False, "error": {"code": "bad_reply", "message": msg}}
            self._give_up(r)
            if r in self._anonymous:
                self._anonymous.discard(r)
                self._orphaned.add(r)
        raise ProtocolError("bad_reply", msg, request_id=request_id)

    def request(self, op: str, *, timeout: Timeout = DEFAULT, **fields: Any) -> Any:
        """Send one request and wait for its result."""
        try:
            return self.recv(self.send(op, **fields), timeout)
        finally:
            self._handed = None  # the caller holds the result (or its error): the client keeps nothing of the reply

    # ------------------------------------------------------------------ protocol ops

    def hello(self, *, timeout: Timeout = DEFAULT) -> HelloResult:
        """Protocol handshake: server version, presets, limits and space descriptions."""
        return cast(HelloResult, self.request("hello", timeout=timeout))

    def reset(
        self,
        seed: int,
        preset: str = "default",
        *,
        session: str | None = None,
        options: Mapping[str, Any] | None = None,
        timeout: Timeout = DEFAULT,
    ) -> ResetResult:
        """Start an episode (in ``session`` when given, else in a new session)."""
        return cast(
            ResetResult,
            self.request(
                "reset", seed=int(seed), preset=preset, session=session, options=dict(options) if options else None, timeout=timeout
            ),
        )

    def step(self, session: str, action: str, *, timeout: Timeout = DEFAULT) -> StepResult:
        """Execute one agent command in ``session``."""
        try:
            return cast(StepResult, self.recv(self._send_step(session, action), timeout))
        finally:
            self._handed = None  # the caller holds the result (or its error): the client keeps nothing of the reply

    @overload
    def step_batch(
        self,
        steps: Iterable[StepEntry],
        *,
        raise_errors: Literal[True] = True,
        timeout: Timeout = DEFAULT,
    ) -> list[StepResult]: ...

    @overload
    def step_batch(
        self,
        steps: Iterable[StepEntry],
        *,
        raise_errors: bool,
        timeout: Timeout = DEFAULT,
    ) -> list[StepResult | ProtocolError]: ...

    def step_batch(
        self,
        steps: Iterable[StepEntry],
        *,
        raise_errors: bool = True,
        timeout: Timeout = DEFAULT,
    ) -> list[StepResult] | list[StepResult | ProtocolError]:
        """Step many sessions in one round trip. ``steps`` are ``(session, action)`` pairs (or dicts).

        Results come back in request order. A failed entry raises its :class:`ProtocolError` (with
        ``index`` set) when ``raise_errors`` is true; otherwise it is returned in place of the result.
        """
        entries = _entries(steps)
        t = self._call_timeout(timeout)
        deadline = None if t is None else time.monotonic() + t
        out: list[StepResult | ProtocolError] = []
        parts: list[tuple[int, int]] = []
        done = 0
        # Sent inside the try: an interrupt (Ctrl-C) at any call once the parts are out abandons them, so their replies
        # are dropped when they come instead of kept for nobody.
        try:
            self.send_step_batch(entries, parts)
            for rid, size in parts:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                out.extend(self.recv_step_batch(rid, size, len(out), remaining, alone=len(parts) == 1))
                done += 1
        except BaseException:  # timeout, interrupt, server gone: nobody will read the later part either
            self.abandon([rid for rid, _ in parts[done:]])
            raise
        if raise_errors:
            for r in out:
                if isinstance(r, ProtocolError):
                    raise r
        return out

    def send_step_batch(self, entries: list[dict[str, Any]], sent: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
        """Send ``step_batch`` requests for ``entries`` without waiting: ``(request id, number of entries)`` per request,
        in order (receive each with :meth:`recv_step_batch`). Each pair is appended to ``sent`` (when given) before its
        request goes out: hold that list in a ``try`` that abandons its ids, and an interrupt at any point, this call's
        return included, leaves no reply kept for nobody. An interrupt during the sends abandons those already sent.

        With ``split_batches`` (the default) a batch of at least two parts' worth of well-formed entries (32 over a
        ``pipe://`` endpoint, 128 over ZeroMQ) goes as up to ``BATCH_MAX_PARTS`` requests of consecutive entries,
        pipelined: while this process decodes one reply the server runs the next part, so the two sides work at the
        same time instead of in turn. The server runs one client's requests in arrival order, so the results are the
        same, in the same order. (One difference: the server's cap on a ``step_batch`` reply, 64 MiB by default,
        applies to each part, so a batch whose whole reply would pass it, whose later entries would fail with
        ``message_too_large`` unrun, runs further in parts.) Any other batch goes as one request.
        """
        out: list[tuple[int, int]] = sent if sent is not None else []
        start = len(out)
        n = len(entries)
        parts = _batch_parts(entries, self._min_part) if self._split_batches else 1
        # Under the client's lock: no request another thread sends on this client comes between the parts (its steps
        # run before or after the whole batch, as with one request).
        with self._lock:
            # Every part made (and checked against max_message_bytes) before the first is sent: a part refused here
            # would leave the ones before it run on the server, their results abandoned.
            payloads: list[tuple[int, int, bytes]] = []
            for k in range(parts):
                lo, hi = n * k // parts, n * (k + 1) // parts
                rid = next(self._ids)
                payload = self._request_bytes(rid, "step_batch", {"steps": entries if parts == 1 else entries[lo:hi]})
                self._check_size(rid, "step_batch", payload)
                payloads.append((rid, hi - lo, payload))
            try:
                for rid, size, payload in payloads:
                    out.append((rid, size))
                    self._send_payload(rid, "step_batch", payload)
            except BaseException:
                self.abandon([rid for rid, _ in out[start:]])
                raise
        return out

    def recv_step_batch(
        self, request_id: RequestId, size: int, base: int = 0, timeout: Timeout = DEFAULT, *, alone: bool = True
    ) -> list[StepResult | ProtocolError]:
        """The ``size`` entries of a ``step_batch`` request sent by :meth:`send_step_batch`: each a result or its
        :class:`ProtocolError` (``index``: its place in the whole batch, ``base`` + its place in the request).

        A request refused as a whole (an error reply: no entry of it ran) raises its :class:`ProtocolError` when it
        held the whole batch (``alone``), as a single ``step_batch`` request does; a part of a split batch (``alone``
        false) fails each of its entries with that error instead (other parts may have run: e.g. the server's queue
        was full for this one)."""
        try:
            res = self.recv(request_id, timeout)
            return self._unpack_batch(res, False, base, size)
        except ProtocolError as e:
            if alone:
                raise
            return [ProtocolError(e.code, e.message, request_id=request_id, index=base + k) for k in range(size)]
        finally:
            self._handed = None  # the caller holds the results: the client keeps nothing of the reply

    def step_batch_arrays(
        self,
        steps: Iterable[StepEntry],
        *,
        raise_errors: bool = True,
        timeout: Timeout = DEFAULT,
    ) -> BatchArrays:
        """:meth:`step_batch` with the binary reply encoding: the numbers as numpy arrays, one row per entry.

        One round trip; the reply's array frames are wrapped with ``numpy.frombuffer`` (read-only, no copy) and no
        per-entry dict is built. There is no status block (use :meth:`step_batch` when you need it). Discrete sessions
        of one frame shape give ``obs`` and ``mask``; an entry of another shape fails alone. A failed entry raises its
        :class:`ProtocolError` (``index`` set) when ``raise_errors`` is true, else it is in ``errors`` (its rows are zeros).
        A reply that cannot be read (its frames do not fit its header, it has no arrays or not one row per entry) raises
        ``ProtocolError("bad_reply")``: the server may have run every entry.
        """
        entries = _entries(steps)
        rid = self.send("step_batch", steps=entries, encoding="binary")
        try:
            got = self.recv(rid, timeout)
        finally:
            self._handed = None  # the result is held here: the client keeps nothing of the reply
        if not isinstance(got, BatchArrays) or got.n != len(entries):
            what = f"{got.n} rows" if isinstance(got, BatchArrays) else "no arrays"
            raise ProtocolError("bad_reply", f"the binary step_batch reply has {what} for {len(entries)} entries (they may have run)", request_id=rid)
        if raise_errors:
            got.raise_first()
        return got

    @staticmethod
    def _unpack_batch(res: Any, raise_errors: bool, base: int = 0, size: int | None = None) -> list[StepResult | ProtocolError]:
        """The entries of a ``step_batch`` result (``size``: how many the request had). A result that is not a list of
        that many entries raises ``ProtocolError("bad_reply")`` (none of them can be placed; they may have run); an
        entry that is not a result or an error is that entry's ``bad_reply``."""
        entries = res.get("results") if isinstance(res, dict) else None
        if not isinstance(entries, list) or (size is not None and len(entries) != size):
            got = f"{len(entries)} results" if isinstance(entries, list) else "no list of results"
            raise ProtocolError("bad_reply", f"the step_batch reply has {got} for {size} entries (they may have run)")
        # Every entry succeeded (the usual batch): their results in one pass; anything else (an error entry, a
        # malformed one) takes the loop below, which says what it is.
        try:
            every: list[StepResult | ProtocolError] = [r["result"] for r in entries if r["ok"] is True]
            if len(every) == len(entries) and set(map(type, every)) <= {dict}:
                return every
        except (KeyError, TypeError):
            pass
        out: list[StepResult | ProtocolError] = []
        for i, r in enumerate(entries, base):
            if not isinstance(r, dict) or (r.get("ok") and not isinstance(r.get("result"), dict)):
                pe = ProtocolError("bad_reply", f"step_batch reply entry {i - base} is neither a result nor an error (it may have run)", index=i)
                if raise_errors:
                    raise pe
                out.append(pe)
            elif r.get("ok"):
                out.append(cast(StepResult, r["result"]))
            else:
                err = r.get("error") or {}
                pe = ProtocolError(str(err.get("code", "internal")), str(err.get("message", "")), index=i)
                if raise_errors:
                    raise pe
                out.append(pe)
        return out

    def snapshot(self, session: str, *, timeout: Timeout = DEFAULT) -> dict[str, Any]:
        """Exact, opaque JSON snapshot of ``session`` (pass it to :meth:`restore`; its shape: ``EnvSnapshot``)."""
        return snapshot_of(self.request("snapshot", session=session, timeout=timeout))

    def restore(
        self,
        snapshot: Mapping[str, Any],
        session: str | None = None,
        *,
        timeout: Timeout = DEFAULT,
    ) -> ResetResult:
        """Continue from ``snapshot`` in ``session`` (overwritten) or in a new session."""
        return cast(ResetResult, self.request("restore", snapshot=snapshot, session=session, timeout=timeout))

    # ------------------------------------------------------------------ turn protocol ops

    def turn_reset(
        self,
        seed: int,
        preset: str = "default",
        *,
        session: str | None = None,
        options: Mapping[str, Any] | None = None,
        tools: str | None = None,
        detail: bool = False,
        timeout: Timeout = DEFAULT,
    ) -> TurnResetResult:
        """Start a run of the paper's turn protocol (a ``TurnEnv`` session; ``docs/turn-protocol.md``).

        ``options``: ``max_turns``, ``history_keep_rounds``, ``auto_advance_after_turns``,
        ``max_episodes``, ``system_prompt``, ``accept_unprefixed``, ``fixes``, ``start_date``,
        ``company_name``, ``horizon_years``. ``tools``: ``"run_command"`` (default, the reference's
        only tool), ``"verbs"`` (one tool per command) or ``"all"``. The result carries the first
        ``messages`` to send, the ``tools`` and ``tool_choice``; ``detail=True`` adds the status block.
        """
        return cast(
            TurnResetResult,
            self.request(
                "turn_reset",
                seed=int(seed),
                preset=preset,
                session=session,
                options=dict(options) if options else None,
                tools=tools,
                detail=True if detail else None,
                timeout=timeout,
            ),
        )

    def turn_step(
        self, session: str, action: Mapping[str, Any] | Sequence[str], *, detail: bool = False, timeout: Timeout = DEFAULT
    ) -> TurnStepResult:
        """Play one agent turn: ``{"tool_calls": [{"id", "name", "arguments"}], "content": ..., "reasoning_content": ...}``
        (the model's reply) or a list of command strings (``run_command`` calls)."""
        if isinstance(action, str):
            raise TypeError("turn_step takes a list of commands or a {'tool_calls': ...} mapping, not one string")
        act: dict[str, Any] = {"commands": list(action)} if not isinstance(action, Mapping) else dict(action)
        return cast(
            TurnStepResult, self.request("turn_step", session=session, action=act, detail=True if detail else None, timeout=timeout)
        )

    def turn_messages(self, session: str, *, timeout: Timeout = DEFAULT) -> list[dict[str, Any]]:
        """The chat to send to the LLM on the next call (system prompt with scratchpad, kept history; ``ChatMessage``s)."""
        return cast("list[dict[str, Any]]", field_of(self.request("turn_messages", session=session, timeout=timeout), "turn_messages", "messages", list))

    def turn_snapshot(self, session: str, *, timeout: Timeout = DEFAULT) -> dict[str, Any]:
        """Exact snapshot of a turn session (``format: "ycgym-turns"``; world, chat and counters; shape ``TurnSnapshot``)."""
        return cast("dict[str, Any]", field_of(self.request("turn_snapshot", session=session, timeout=timeout), "turn_snapshot", "snapshot", dict))

    def turn_restore(
        self,
        snapshot: Mapping[str, Any],
        session: str | None = None,
        *,
        detail: bool = False,
        timeout: Timeout = DEFAULT,
    ) -> TurnRestoreResult:
        """Continue a turn run from ``snapshot`` in ``session`` (overwritten) or in a new session."""
        return cast(
            TurnRestoreResult,
            self.request("turn_restore", snapshot=snapshot, session=session, detail=True if detail else None, timeout=timeout),
        )

    def turn_time_series(self, session: str, *, timeout: Timeout = DEFAULT) -> dict[str, Any]:
        """The reference's ``extract_time_series`` of the session's current world (rollout JSON ``time_series``; shape ``TimeSeries``)."""
        return cast("dict[str, Any]", self.request("turn_time_series", session=session, timeout=timeout)["time_series"])

    def close(self, session: str | None = None, *, timeout: Timeout = DEFAULT) -> Any:
        """With ``session``: the protocol's ``close`` op (frees that session on the server).

        Without: close this client's socket (idempotent). Sessions it opened stay on the server until
        closed or idle-timed-out.
        """
        if session is not None:
            return self.request("close", session=session, timeout=timeout)
        with self._lock:
            if self._sock is not None:
                self._sock.close(0)
                self._sock = None
                self._stash.clear()
                self._pending.clear()
                self._abandoned.clear()
                self._marks.clear()
                self._anonymous.clear()
                self._orphaned.clear()
                self._handed = None
        return None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - GC timing
        try:
            if self._sock is not None:
                self._sock.close(0)
        except Exception:  # noqa: BLE001 - best effort while collected
            pass

    def __repr__(self) -> str:
        return f"Client({self.endpoint!r}{', closed' if self.closed else ''})"

    # ------------------------------------------------------------------ pipelining helpers

    def gather(
        self, request_ids: Sequence[RequestId], *, timeout: Timeout = DEFAULT, raise_errors: bool = True, received: list[Any] | None = None
    ) -> list[Any]:
        """Receive the results of several pipelined requests, in the order of ``request_ids``.

        With ``raise_errors=False`` an error reply is returned as a :class:`ProtocolError` in place.
        The first error is raised only after every reply has been collected (so none is left behind).
        ``received`` (when given) gets each result (or error, in place) as it is received, and is the list
        returned: when the gather is stopped (a timeout, Ctrl-C, the server gone) it holds the results of the requests
        received before it stopped (the others are abandoned), e.g. to learn the sessions their replies made; the
        list is returned (with whatever it held before, followed by the results).

        An interrupt (Ctrl-C: Python raises it between any two bytecodes) that lands once a reply was taken off the
        socket or the stash loses nothing: the reply is put in the client's hand-off slot before its request stops
        being pending, and when the gather stops, a reply taken and not yet in ``received`` is put there. What remains:
        an interrupt between the socket's receive returning and that store (the reply's decoding and id check) loses
        the reply (its request is abandoned: a session it made stays open until the server's idle timeout); a second
        interrupt inside the handler that puts the reply in place or abandons the rest loses what it had not done; and
        the slot is the client's, so another thread receiving on this client in between can replace it (or empty it) first.
        """
        out: list[Any] = received if received is not None else []
        start = len(out)
        first: ProtocolError | None = None
        before = self._handed  # a reply taken before this call is none of its own (see the handler below)
        # Everything inside the try, the clock reads too: an interrupt at any call abandons the requests not yet
        # received (timeout, interrupt, server gone: nobody will read the later replies either).
        try:
            t = self._call_timeout(timeout)
            deadline = None if t is None else time.monotonic() + t
            for i, rid in enumerate(request_ids):
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    out.append(self.recv(rid, remaining))
                except ProtocolError as e:
                    e.index = i
                    out.append(e)
                    if first is None:
                        first = e
                self._handed = None  # in place: the slot's reply is no longer needed (see _init_state)
        except BaseException:
            self._abandon_gather(request_ids, out, start, before)
            raise
        if raise_errors and first is not None:
            raise first
        return out

    def _abandon_gather(self, request_ids: Sequence[RequestId], out: list[Any], start: int, before: tuple[RequestId, dict[str, Any]] | None) -> None:
        """A :meth:`gather` into ``out`` (from ``start``) stopped: the next request's reply, when it was taken (the
        hand-off slot holds it, taken during this gather: not ``before``) but not yet in ``out`` (an interrupt between
        the receive and the append, or in ``recv``'s decoding), goes into ``out`` as ``recv`` would have returned it
        (its result, or its error); the requests after it are abandoned."""
        i = len(out) - start
        handed = self._handed
        if handed is not None and handed is not before and i < len(request_ids) and handed[0] == request_ids[i] and handed[0] not in request_ids[:i]:
            try:
                got: Any = self._result(handed[1], handed[0])
            except ProtocolError as e:
                e.index = i
                got = e
            out.append(got)
            i += 1
        self.abandon(request_ids[i:])
