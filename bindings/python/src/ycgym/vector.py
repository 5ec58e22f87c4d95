"""``YCBenchVectorEnv``: N ycgym sessions stepped together in one ``step_batch`` round trip.

Implements Gymnasium 1.x's :class:`gymnasium.vector.VectorEnv` API with the three
:class:`gymnasium.vector.AutoresetMode` semantics of :class:`gymnasium.vector.SyncVectorEnv`:

* ``NEXT_STEP`` (default): the step after a sub-environment terminates or truncates ignores its
  action and returns that sub-environment's reset observation, reward 0, ``terminated`` and
  ``truncated`` false, and the reset's info.
* ``SAME_STEP``: a terminating step resets at once; the returned observation is the reset one and
  ``info["final_obs"]`` / ``info["final_info"]`` (masked by ``info["_final_obs"]`` /
  ``info["_final_info"]``) hold the last observation and info of the finished episode.
* ``DISABLED``: no automatic reset; reset finished sub-environments with
  ``reset(options={"reset_mask": mask})``. A step while one's episode is over raises
  :class:`ycgym.EpisodeOverError` (an ``AssertionError``, as ``SyncVectorEnv`` raises, and a ``ProtocolError`` with
  code ``episode_over``, as a single env stepped past its end) and steps none.

Results are bit-for-bit those of ``SyncVectorEnv([lambda: YCBenchEnv(...)] * N)`` with the same
seeds, in one network round trip per step instead of N. Observations are dicts of numpy arrays with
a leading ``num_envs`` axis (``text`` and ``command`` are tuples of ``str``); infos are dicts of
arrays with ``_key`` masks. Sub-environment seeds: ``reset(seed=s)`` seeds sub-environment ``i`` with
``s + i``; later automatic resets draw each seed from that sub-environment's own generator, as
``YCBenchEnv.reset()`` does.

When some sub-environments fail in a step (a lost session, a refused automatic reset, a refused part of the batch),
the others' results are taken in and :class:`ycgym.VectorStepError` (a ``ProtocolError``) is raised with them
(``result``, ``errors``, ``stepped``); an automatic reset of that step is not kept (its sub-environment stays due: the
next step resets it with the same seed), so the env always holds what the server holds and a retried ``step`` goes
on. A ``reset`` refused (or stopped) for some sub-environments marks those the server did (or may have) reset due for
the reset asked for (its seeds and options). See docs/vector.md.

Like :class:`ycgym.YCBenchEnv` it pickles (every sub-environment's episode travels as a snapshot) and, with the
local server, fails fast when that server has exited and restarts it on the next :meth:`reset`; the env's sessions were
that server's, so a masked reset makes new ones for the sub-environments it covers only, and :meth:`step` refuses
("call reset() before step()", naming the others) until a reset covers them.
Actions are ``str`` (``bytes`` are decoded as UTF-8); all are checked before any is sent.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from itertools import repeat
from typing import Any, NamedTuple, cast

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._backend import (
    Backend,
    BackendAccess,
    ServerSource,
    connection,
    generators_kept,
    open_backend,
    options_dict,
    pickled_connection,
    reopen,
    restore_generators,
    restore_sessions,
    save_generators,
    session_limit_hint,
    snapshot_sessions,
    status_time,
    take_snapshots,
)
from ._replies import (
    BAD_REPLY_WHY,
    UNREAD,
    check_info_counts,
    check_info_texts,
    failed_reset_why,
    malformed_result,
    named_session,
    step_flags,
    stopped_step_why,
)
from .client import EpisodeOverError, ProtocolError, ResetResult, StepResult, VectorStepError
from .env import YCBenchEnv, make_info, merged_options, text_option
from .spaces import (
    DOMAINS,
    MAX_TEXT_LENGTH,
    SpaceParams,
    _float_rows,
    _values_of,
    action_space,
    action_text,
    check_max_text_length,
    check_observation,
    encode_batch,
    encode_observation,
    observation_space,
)
from .splits import MAX_SEED, server_splits, split_seed

__all__ = ["YCBenchVectorEnv"]

_TEXT = operator.itemgetter("text")
_STR_OR_NONE = {str, type(None)}


_INFO = operator.itemgetter("info")
_OBSERVATION = operator.itemgetter("observation")
_STATUS = operator.itemgetter("status")
_DICT = {dict}
_STR = {str}


def _dict_keys(ds: Sequence[Any]) -> tuple[str, ...] | None:
    """The keys of the first item of ``ds`` (not empty) when every item is a dict with as many keys, else None. Such
    dicts have the keys of the first (in any order) exactly when each has every key of the first: the caller reads
    them by those keys (:func:`_columns`, ``_float_rows``), a KeyError where one lacks one. The vector info of dicts
    with the same keys in other orders follows the first's order, on the direct path as on the general one
    (Gymnasium's ``_add_info`` folded over them), so this asks for the same keys, not for the same order."""
    if set(map(type, ds)) != _DICT:
        return None
    keys = tuple(ds[0])
    return keys if len(set(map(len, ds))) == 1 else None


def _columns(ds: Sequence[Any]) -> dict[str, tuple[Any, ...]] | None:
    """The columns of the dicts ``ds`` (not empty), the first's keys in its order, each with its values in the order of
    ``ds``; None unless every item is a dict with as many keys as the first (:func:`_dict_keys`); KeyError when one of
    them lacks a key of the first. The values are read in C (``itemgetter``, ``zip``), not a key at a time."""
    keys = _dict_keys(ds)
    if keys is None:
        return None
    return dict(zip(keys, zip(*map(_values_of(keys), ds))))


VectorSeed = int | np.integer[Any] | Sequence[int | np.integer[Any] | None] | np.ndarray | None
"""What a vector env's ``reset(seed=...)`` takes (:func:`reset_arguments` checks it): None, an integer (a Python or
numpy one), or one seed (an integer or None) per sub-environment, as a sequence or a numpy array."""


def reset_arguments(n: int, seed: VectorSeed, options: Mapping[str, Any] | None) -> tuple[list[int | None], list[int], dict[str, Any]]:
    """A vector ``reset``'s arguments checked as Gymnasium's vector envs check them: the seed of each sub-environment
    (``seed + i`` for an int), the indices to reset (``options["reset_mask"]``, a bool array of shape ``(n,)``;
    default all) and the remaining options."""
    if seed is None:
        seeds: list[int | None] = [None] * n
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seeds = [int(seed) + i for i in range(n)]
    elif isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, (str, bytes)):
        given: list[Any] = list(seed)
        if not all(s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool)) for s in given):
            raise TypeError(f"seed must be an int, a sequence of {n} ints (or None) or None, got {type(seed).__name__}: {seed!r}")
        seeds = [None if s is None else int(s) for s in given]
    else:
        raise TypeError(f"seed must be an int, a sequence of {n} ints (or None) or None, got {type(seed).__name__}: {seed!r}")
    if len(seeds) != n:
        raise ValueError(f"If seeds are passed as a list the length must match num_envs={n} but got length={len(seeds)}.")
    rest = options_dict("options", options)
    reset_mask = rest.pop("reset_mask", None)
    if reset_mask is None:
        return seeds, list(range(n)), rest
    if not isinstance(reset_mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(reset_mask)}")
    if reset_mask.shape != (n,):
        raise ValueError(f"`options['reset_mask']` must have shape `({n},)`, got {reset_mask.shape}")
    if reset_mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {reset_mask.dtype}")
    if not np.any(reset_mask):
        raise ValueError(f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={reset_mask}")
    return seeds, [i for i in range(n) if reset_mask[i]], rest


def draw_seed(rngs: list[Any], i: int, seed: int | None) -> int:
    """The simulation seed of sub-environment ``i``, drawn exactly as ``YCBenchEnv.reset(seed=seed)`` would
    (a given seed reseeds its generator ``rngs[i]``; none draws from it). Shared by both vector envs."""
    if seed is not None:
        rngs[i], _ = seeding.np_random(int(seed))
        return int(seed)
    rng = rngs[i]
    if rng is None:
        rng, _ = seeding.np_random()
        rngs[i] = rng
    return int(rng.integers(0, 2**31 - 1))

def reset_seeds(backend: Any, rngs: list[Any], indices: Sequence[int], seeds: Sequence[int | None], opts: Mapping[str, Any]) -> tuple[list[int], dict[str, Any]]:
    """The simulation seeds of resets of the sub-environments ``indices`` (reset seeds ``seeds``, drawn by
    :func:`draw_seed`; with a ``split`` option, that split's seeds of them, see :mod:`ycgym.splits`) and the options to
    send (``split`` taken out: the server does not know it). Raises (ValueError), with no generator changed, when a seed
    is not one the protocol carries or the split is unknown. Shared by both vector envs."""
    split = opts.get("split")
    sent = {k: v for k, v in opts.items() if k != "split"}
    with generators_kept(rngs, indices):
        sim_seeds = [draw_seed(rngs, i, s) for i, s in zip(indices, seeds)]
        if split is not None:
            ranges = server_splits(backend)
            sim_seeds = [split_seed(ranges, split, sd) for sd in sim_seeds]
        check_sim_seeds(indices, sim_seeds)
    return sim_seeds, sent


def check_sim_seeds(indices: Sequence[int], seeds: Sequence[int]) -> None:
    """Raise ValueError, before any reset is sent, when a simulation seed is not one the protocol carries (a safe
    integer): the server would refuse that reset after resetting the sub-environments before it."""
    for i, sd in zip(indices, seeds):
        if not -MAX_SEED <= sd <= MAX_SEED:
            raise ValueError(f"the seed of sub-environment {i}, {sd}, is not a protocol seed (at most 2**53 - 1 = {MAX_SEED})")


def text_actions(actions: Sequence[str | bytes] | np.ndarray, n: int) -> list[str]:
    """The ``n`` actions of a text vector env step, checked (all before any is sent) and decoded (:func:`action_text`)."""
    if isinstance(actions, (str, bytes)):
        raise TypeError(f"actions must be a sequence of {n} actions, one per sub-environment, got a single {type(actions).__name__}")
    if type(actions) is tuple or type(actions) is list:
        acts = list(actions)
        # Plain ASCII strings (the usual actions): action_text gives each as it is.
        if set(map(type, acts)) == _STR and all(map(str.isascii, acts)):
            if len(acts) != n:
                raise ValueError(f"expected {n} actions, got {len(acts)}")
            return acts
    acts = [action_text(a) for a in actions]
    if len(acts) != n:
        raise ValueError(f"expected {n} actions, got {len(acts)}")
    return acts


Owed = tuple[int | None, Mapping[str, Any] | None, str]
"""The reset a sub-environment that is due for one for another reason than its episode's end owes (both vector envs
keep them, ``_owed``, by index): the seed and the options of the ``reset`` call that left it due (None, None: a seed
drawn from its generator, the env's options), and why it is due (``EpisodeOverError``'s message)."""


def owe(owed: dict[int, Owed], due: np.ndarray, indices: Sequence[int], seeds: Sequence[int | None], options: Mapping[str, Any] | None, why: str) -> None:
    """Mark the sub-environments ``indices`` due for a reset that makes the episodes of seeds ``seeds`` (None: drawn from
    the generator) and options ``options`` (None: the env's), for the reason ``why``."""
    for i, sd in zip(indices, seeds):
        due[i] = True
        owed[i] = (sd, options, why)


def owed_groups(owed: Mapping[int, Owed], indices: Sequence[int]) -> list[tuple[list[int], list[int | None], Mapping[str, Any] | None]]:
    """The automatic resets of the sub-environments ``indices`` grouped by the options they owe (one group per
    ``reset`` call that left some due, one for the env's options), in order of their first index: each group's indices,
    seeds and options."""
    groups: dict[int, tuple[list[int], list[int | None], Mapping[str, Any] | None]] = {}
    for i in indices:
        sd, opts, _ = owed.get(i, (None, None, ""))
        g = groups.setdefault(id(opts), ([], [], opts))
        g[0].append(i)
        g[1].append(sd)
    return list(groups.values())


def why_due(owed: Mapping[int, Owed], i: int) -> str | None:
    got = owed.get(i)
    return None if got is None else got[2]


def entry_error(e: ProtocolError, i: int) -> ProtocolError:
    """The error of sub-environment ``i``'s entry in a ``step_batch`` request refused as a whole (``e``: none of its
    entries ran). Shared by both vector envs."""
    return ProtocolError(e.code, e.message, request_id=e.request_id, index=i)


def _step_fields(sr: Any) -> tuple[dict[str, Any], float, bool, bool]:
    """A step result's observation, reward and flags as the text vector env takes them in, checked first for their
    shape (raises KeyError, TypeError or ValueError for a result whose fields are wrong: the caller fails its entry,
    ``bad_reply``, before taking any of it in): the observation's top-level fields only, a few type tests. Its status
    block is not checked here (a full :func:`check_observation` of every entry cost an eighth of a step): the step's
    encoding of the batch finds one that cannot be read, and only then are the entries checked in full
    (:meth:`YCBenchVectorEnv._fail_malformed`)."""
    obs, info = sr["observation"], sr["info"]
    if type(obs) is not dict or type(info) is not dict:
        raise TypeError("its observation or info is not an object")
    # Indexed, not .get: a field missing raises KeyError (a bad_reply as well), a method call less per entry.
    if type(obs["status"]) is not dict or type(obs["text"]) is not str or type(obs["ok"]) is not bool or type(obs["exit_code"]) is not int:
        raise TypeError("its status, text, ok or exit_code is not of its type")
    command = obs.get("command")
    if command is not None and type(command) is not str:
        raise TypeError("its command is not a string")
    check_info_counts(info)
    check_info_texts(info)  # two key lookups when the reply has neither
    return (obs, *step_flags(sr))


def _batch_entry(parts: Sequence[tuple[int, int]], k: int) -> tuple[int, int]:
    """The request id of the ``step_batch`` part (of ``parts``: id, size) that holds a step's ``k``-th entry, and the
    entry's index in it."""
    for rid, size in parts:
        if k < size:
            return rid, k
        k -= size
    raise IndexError(k)


def malformed_entry(k: int, e: BaseException, request_id: int | None = None) -> ProtocolError:
    """The ``bad_reply`` of ``step_batch`` reply entry ``k``, a result whose fields are wrong (``e`` says how): the server
    ran it, or may have. Shared by both vector envs."""
    return malformed_result(f"step_batch reply entry {k}", e, "it may have run", request_id)


def unread_reset(r: Any, i: int, check: Any) -> Any:
    """A reset reply ``r`` of sub-environment ``i`` as the vector envs take it in: ``r`` itself when it is a
    :class:`ProtocolError` or a result ``check`` passes (it raises KeyError, TypeError, ValueError or AttributeError for
    one whose fields are wrong), else ``ProtocolError("bad_reply")``: the server made that reset (or may have), its
    result is unknown. Shared by both vector envs."""
    if isinstance(r, ProtocolError):
        return r
    try:
        if named_session(r) is None:
            raise TypeError("it has no session id")
        check(r)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return malformed_result(f"the reset reply of sub-environment {i}", e, "the reset may have been made", index=i)
    return r


def refused_or_unread(indices: Sequence[int], results: Sequence[Any], lost: Any) -> tuple[list[int], tuple[int, ProtocolError] | None]:
    """The sub-environments of ``indices`` whose reset the server made or may have made (a result, or a reply that
    could not be read: ``bad_reply``), and the first failure to raise (None when every failure is a lost session,
    ``lost(i, error)``, that a new session replaces). Shared by both vector envs."""
    made = [i for i, r in zip(indices, results) if not isinstance(r, ProtocolError) or r.code == UNREAD]
    failed = next(((i, r) for i, r in zip(indices, results) if isinstance(r, ProtocolError) and not lost(i, r)), None)
    return made, failed


def gather_resets(client: Any, ids: Sequence[int], adopt: Any) -> list[Any]:
    """Gather the pipelined ``reset`` requests ``ids`` (errors in place, as ``gather(raise_errors=False)``): every reply
    received that names a session (one a reset asking for none made) has ``adopt(k, session)`` called, ``k`` its position
    in ``ids``, before this returns or raises, whatever stops it (a timeout, Ctrl-C, the server gone, after some replies
    came): those sessions become the env's (closed with it) instead of staying open on the server, unknown. The requests
    not received are abandoned (see ``Client.abandon``: a late reply's new session is closed). Shared by both vector
    envs."""
    got: list[Any] = []
    # The adoption inside the try, and again in the handler (adopting twice sets the same): an interrupt (Ctrl-C) at any
    # bytecode up to the return leaves every session received adopted (a finally's body on the normal path is not
    # itself protected: one landing before its call would adopt none). Only a second interrupt, in the handler, can.
    try:
        client.gather(ids, raise_errors=False, received=got)
        _adopt_named(got, adopt)
    except BaseException:
        client.abandon(ids[len(got) :])  # those gather had not abandoned yet (stopped before it took them over)
        _adopt_named(got, adopt)
        raise
    return got


def _adopt_named(got: Sequence[Any], adopt: Any) -> None:
    """``adopt(k, session)`` for each reply of ``got`` that names a session (:func:`gather_resets`)."""
    for k, r in enumerate(got):
        sid = named_session(r)
        if sid is not None:
            adopt(k, sid)


def new_sessions(client: Any, preset: str, seeds: Sequence[int], options: Mapping[str, Any] | None, adopt: Any) -> list[Any]:
    """Reset ``len(seeds)`` new sessions (a lost session's replacements: no session named) with the simulation seeds
    ``seeds`` and ``options``, pipelined (one round trip): the requests ``client.reset(seed, preset, options=options)``
    sends, and their results (errors in place). Every session a reply names is adopted as :func:`gather_resets` says.
    Shared by both vector envs."""
    ids: list[int] = []
    try:
        client.send_all("reset", [{"seed": int(sd), "preset": preset, "options": dict(options) if options else None} for sd in seeds], ids)
    except BaseException:
        client.abandon(ids)  # an interrupt after send_all returned: nobody will read them (its own abandons the rest)
        raise
    return gather_resets(client, ids, adopt)


def replace_lost(
    backend: Any,
    preset: str,
    sessions: Sequence[str | None],
    indices: Sequence[int],
    seeds: Sequence[int],
    results: list[Any],
    options: Mapping[str, Any] | None,
    adopt: Any,
    check: Any,
    made: list[int],
) -> tuple[int, ProtocolError] | None:
    """Reset a new session in place of each lost one (closed, reaped) among the resets of ``indices``: ``results[k]`` a
    :class:`ProtocolError` (an ``unknown_session``: the caller raised every other failure) for sub-environment
    ``indices[k]``, whose session is ``sessions[indices[k]]``. Pipelined (:func:`new_sessions`), each with its seed
    ``seeds[k]``: the lost ids leave ``backend.sessions``, every session a reply names is adopted (``adopt(i,
    session)``), a new reset's result that ``check`` passes (:func:`unread_reset`) becomes ``results[k]``, and every
    sub-environment whose new reset the server made or may have made (``bad_reply``) is appended to ``made``. Returns
    the first failure, ``(i, error)`` in the order of ``indices``, for the env to raise (None: every lost one replaced);
    a sub-environment whose replacement failed keeps its lost id, so the next reset finds it lost again and tries
    anew. Shared by both vector envs."""
    lost = [k for k, r in enumerate(results) if isinstance(r, ProtocolError)]
    if not lost:
        return None
    for k in lost:
        backend.sessions.discard(sessions[indices[k]])
    got = new_sessions(backend.client, preset, [seeds[k] for k in lost], options, lambda j, sid: adopt(indices[lost[j]], sid))
    failed: tuple[int, ProtocolError] | None = None
    for k, r in zip(lost, got):
        i = indices[k]
        checked = unread_reset(r, i, check)
        if not isinstance(r, ProtocolError) or r.code == UNREAD:  # made, or maybe (in a session nobody knows): due
            made.append(i)
        if isinstance(checked, ProtocolError):
            failed = failed or (i, checked)
        else:
            results[k] = r
    return failed


def reset_needed(missing: Sequence[int], n: int) -> RuntimeError:
    """What a vector env of ``n`` sub-environments raises from :meth:`step`, before anything is sent, when it cannot
    step yet: "call reset() before step()", naming the sub-environments ``missing`` that have no session (none made
    since the env was made, or since its local server exited and a reset restarted it) when they are some of them (the
    first ten, and how many in all, when there are more)."""
    if not missing or len(missing) == n:
        return RuntimeError("call reset() before step()")
    names = ", ".join(map(str, missing[:10])) + (f", ... ({len(missing)} in all)" if len(missing) > 10 else "")
    one = len(missing) == 1
    return RuntimeError(
        f"call reset() before step(): sub-environment{'' if one else 's'} {names} {'has' if one else 'have'} no session "
        f"(no reset has covered {'it' if one else 'them'} since the env was made or its local server was restarted); reset "
        f"{'it' if one else 'them'}: reset(), or reset(options={{'reset_mask': mask}}) with {'it' if one else 'them'} in the mask"
    )


class ShardState(NamedTuple):
    """A vector env's own state that :class:`ycgym.ShardedVectorEnv` saves and puts back around a shard's step or
    reset (the env's live objects, not copies): the due flags (a sub-environment due for a reset), the resets owed
    (:data:`Owed`) and the per-sub-environment generators."""

    due: np.ndarray
    owed: dict[int, Owed]
    rngs: list[np.random.Generator | None]


class Shardable:
    """What :class:`ycgym.ShardedVectorEnv` needs of the vector env it holds as a shard, beyond the VectorEnv API
    (internal): both vector envs implement it, the one place the sharded env reaches into them."""

    num_envs: int
    autoreset_mode: AutoresetMode
    preset: str
    params: SpaceParams
    _backend: Backend
    _finalizer: Any
    _connect: dict[str, Any]
    _sessions: list[str | None]
    _owed: dict[int, Owed]
    _rngs: list[np.random.Generator | None]
    _UNPICKLED: tuple[str, ...] = ("_backend", "_finalizer")
    """The attributes a pickle leaves out: the connection and its finalizer (a subclass adds what it derives from the
    session ids, which a restore changes)."""

    def __getstate__(self) -> dict[str, Any]:
        """The env as a pickle holds it: its attributes, each session's snapshot instead of its id, and how to reach its
        server again (see :func:`pickled_connection`)."""
        state = {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}
        state["_sessions"] = [None] * self.num_envs
        state["_episodes"] = snapshot_sessions(self._backend, self._sessions)
        state["_connect"] = pickled_connection(self._connect, self._backend)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episodes = state.pop("_episodes")
        self.__dict__.update(state)
        self._backend, self._finalizer = reopen(self, self._connect, self.preset, self.params)
        self._sessions = restore_sessions(self._backend, episodes)
        self._restored()

    def _restored(self) -> None:
        """What an unpickled env derives from its restored sessions (nothing by default)."""

    def _due_flags(self) -> np.ndarray:
        """The env's array of due flags (the array itself)."""
        raise NotImplementedError

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options a reset with ``options`` (those of the call) sends: the env's, then these."""
        raise NotImplementedError

    def _shard_state(self) -> ShardState:
        return ShardState(self._due_flags(), self._owed, self._rngs)

    def _shard_ready(self) -> bool:
        """Whether :meth:`step` would step now (False: it raises "call reset() before step()")."""
        raise NotImplementedError

    def _refused_step(self) -> EpisodeOverError | None:
        """What :meth:`step` raises (after its checks of the env and the actions), before anything is sent, when it
        cannot step (None: it steps): DISABLED with a sub-environment due for a reset (the server would refuse the
        ended entries and step the others). An AssertionError as SyncVectorEnv's assert gives (but raised under
        `python -O` too) that is also the ProtocolError episode_over of a single env stepped past its end.
        :class:`ycgym.ShardedVectorEnv` asks every shard before it steps any."""
        due = self._due_flags()
        if self.autoreset_mode == AutoresetMode.DISABLED and due.any():
            i = int(np.flatnonzero(due)[0])
            return EpisodeOverError(i, reason=why_due(self._owed, i))
        return None

    def _every(self) -> list[int]:
        """Every sub-environment's index, in order (one list, rebuilt only when ``num_envs`` changes)."""
        every = self.__dict__.get("_every_cache")
        if every is None or len(every) != self.num_envs:
            every = self.__dict__["_every_cache"] = list(range(self.num_envs))
        return every

    def _without_session(self) -> list[int]:
        """The sub-environments with no session on the env's server (before their first reset, or since a reset
        restarted the env's local server without covering them): :meth:`step` refuses to step until they are reset."""
        raise NotImplementedError

    def _untouched_by_reset(self) -> Any:
        """The batch observation a reset that resets none of this env's sub-environments returns (a part of the
        sharded env's masked reset), the env then ready to step as after any reset."""
        raise NotImplementedError

    def _check_reset_seeds(self, indices: Sequence[int], seeds: Sequence[int | None], options: Mapping[str, Any] | None) -> None:
        """Raise what a reset of ``indices`` (of ``len(seeds)`` sub-environments; ``options`` the call's) raises before
        sending anything for its seeds: :func:`reset_seeds`' checks (a given seed that is not a protocol seed or a
        split's, the split unknown), made on throwaway generators (a seed drawn from a generator is always valid)."""
        opts = self._options(options)
        given = [i for i in indices if seeds[i] is not None]
        if given or opts.get("split") is not None:
            reset_seeds(self._backend, [None] * len(seeds), given, [seeds[i] for i in given], opts)

    def _ensure_server(self) -> None:
        """What :meth:`reset` does first: if the env's local server has exited, start a new one (every session of the
        env is then gone there; see :meth:`Backend.ensure_server`)."""
        raise NotImplementedError

    def _serve_from(self, source: ServerSource) -> None:
        """Take the local server of ``source`` as this env's (at its endpoint): see :meth:`Backend.serve_from`."""
        self._backend.serve_from(source)


class _Heterogeneous(Exception):
    """Sub-environment infos whose shapes differ (a key is a dict in one and not in another)."""


class YCBenchVectorEnv(Shardable, BackendAccess, VectorEnv[dict[str, Any], tuple[str, ...], np.ndarray]):
    """N YC-Bench sessions on one server, stepped with one ``step_batch`` request.

    Args:
        num_envs: number of sub-environments (sessions).
        preset, endpoint, max_steps, server_public_key, public_key, secret_key, timeout,
        reset_options, max_text_length, obs_text: as for :class:`ycgym.YCBenchEnv`.
        autoreset_mode: an :class:`gymnasium.vector.AutoresetMode` (or its value string).
        render_mode: as ``SyncVectorEnv`` of :class:`ycgym.YCBenchEnv` takes it: ``None``, ``"ansi"`` (``render()``
            returns the N last texts) or ``"human"`` (``reset`` and ``step`` print each sub-environment's text, in
            SyncVectorEnv's order; ``render()`` prints them again and returns N None).

    A step in which some sub-environments fail raises :class:`ycgym.VectorStepError` with the others' results, which
    the env has taken in (see the module docstring and docs/vector.md).
    """

    # SyncVectorEnv's: the single env's metadata and the autoreset mode.
    metadata: dict[str, Any] = {**YCBenchEnv.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        preset: str = "default",
        endpoint: str | None = None,
        max_steps: int | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
        render_mode: str | None = None,
        timeout: float | None = 30.0,
        reset_options: Mapping[str, Any] | None = None,
        max_text_length: int = MAX_TEXT_LENGTH,
        obs_text: str = "full",
    ) -> None:
        if int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode is not None and render_mode not in YCBenchEnv.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {YCBenchEnv.metadata['render_modes']} or None, got {render_mode!r}")
        if max_steps is not None and (int(max_steps) != max_steps or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.num_envs = int(num_envs)
        self.preset = preset
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.reset_options: dict[str, Any] = text_option(obs_text, reset_options)
        self.autoreset_mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.max_text_length = check_max_text_length(max_text_length)
        self._connect = connection(endpoint, server_public_key, public_key, secret_key, timeout)
        self._backend, self._finalizer, self.params = open_backend(self, **self._connect, preset=preset)
        self.single_observation_space = observation_space(self.params, self.max_text_length)
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        n = self.num_envs
        self._sessions: list[str | None] = [None] * n
        self._starts: list[datetime | None] = [None] * n
        self._obs: list[Mapping[str, Any] | None] = [None] * n
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._seeds_used: list[int | None] = [None] * n
        self._autoreset_envs = np.zeros(n, dtype=np.bool_)
        self._owed: dict[int, Owed] = {}  # the resets owed by sub-environments due for another reason than an ended episode

    # ------------------------------------------------------------------ properties

    @property
    def sessions(self) -> tuple[str | None, ...]:
        return tuple(self._sessions)

    @property
    def seeds_used(self) -> tuple[int | None, ...]:
        """The simulation seed of each sub-environment's current episode."""
        return tuple(self._seeds_used)

    # ------------------------------------------------------------------ reset

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        return merged_options(self.reset_options, self.max_steps, options)

    def _due_flags(self) -> np.ndarray:
        return self._autoreset_envs

    def _shard_ready(self) -> bool:
        return not any(s is None for s in self._sessions)

    def _without_session(self) -> list[int]:
        return [i for i, s in enumerate(self._sessions) if s is None]

    def _untouched_by_reset(self) -> Any:
        return self._batch_obs()

    def _ensure_server(self) -> None:
        if self._backend.ensure_server():  # the local server had exited: every session is gone
            self._sessions = [None] * self.num_envs

    def _kept(self, indices: Sequence[int]) -> tuple[Any, list[tuple[int, Any, Any, Any]]]:
        """What :meth:`_put_back` needs to put the sub-environments ``indices`` back as they are now: their generators in
        the same states, their last observations, start times and seeds."""
        return save_generators(self._rngs, indices), [(i, self._obs[i], self._starts[i], self._seeds_used[i]) for i in indices]

    def _put_back(self, kept: tuple[Any, list[tuple[int, Any, Any, Any]]]) -> None:
        saved, states = kept
        restore_generators(self._rngs, saved)
        for i, obs, start, sd in states:
            self._obs[i], self._starts[i], self._seeds_used[i] = obs, start, sd

    @contextlib.contextmanager
    def _undone_on_error(self, indices: Sequence[int]) -> Iterator[None]:
        """Put the sub-environments ``indices`` back as they were (:meth:`_kept`) when the body raises: a reset refused
        leaves them as if it had not been called (an automatic reset so undone is still due, and the next step draws the
        same seed for it). Sessions a reset had to make in place of lost ones stay the env's."""
        kept = self._kept(indices)
        try:
            yield
        except BaseException:
            self._put_back(kept)
            raise

    def _reset_many(self, indices: Sequence[int], seeds: Sequence[int | None], opts: dict[str, Any], asked: Mapping[str, Any] | None = None) -> list[ResetResult]:
        """Reset the given sub-environments, pipelined (one round trip); refused: each as it was. Those whose reset the
        server made, or may have made (a timeout, an interrupt after their requests went out), are marked due for the
        reset asked for (``seeds``; ``asked``: the options of the ``reset`` call, None for the env's own): their
        episodes there are new ones the env never returned."""
        ids: list[int] = []
        made: list[int] = []
        with self._undone_on_error(indices):
            try:
                sent = self._send_resets(indices, seeds, opts, ids)
            except BaseException as e:
                made[:] = indices[: len(ids)]  # those whose request may have gone out
                self._owe_resets(indices, seeds, asked, made, e)
                raise
            try:
                return self._finish_resets(*sent, made=made)
            except BaseException as e:
                self._owe_resets(indices, seeds, asked, made, e)
                raise

    def _owe_resets(self, indices: Sequence[int], seeds: Sequence[int | None], asked: Mapping[str, Any] | None, made: Sequence[int], e: BaseException) -> None:
        seed_of = dict(zip(indices, seeds))
        owe(self._owed, self._autoreset_envs, made, [seed_of[i] for i in made], asked, failed_reset_why(e))

    def _send_resets(
        self, indices: Sequence[int], seeds: Sequence[int | None], opts: dict[str, Any], ids: list[int] | None = None
    ) -> tuple[Sequence[int], list[int], list[int], dict[str, Any]]:
        """Send the resets of :meth:`_reset_many` without waiting (finish them with :meth:`_finish_resets`); their ids
        are put in ``ids`` (when given) as they go out (see ``Client.send_all``). The caller undoes the seeds' draws on
        an error (:meth:`_undone_on_error`)."""
        c = self._backend.client
        sim_seeds, opts = reset_seeds(self._backend, self._rngs, indices, seeds, opts)  # refused: no generator changed
        sent = c.send_all("reset", [{"seed": sd, "preset": self.preset, "session": self._sessions[i], "options": opts or None} for i, sd in zip(indices, sim_seeds)], ids)
        return indices, sim_seeds, sent, opts

    def _finish_resets(self, indices: Sequence[int], sim_seeds: list[int], ids: list[int], opts: dict[str, Any], made: list[int] | None = None) -> list[ResetResult]:
        """Take in the resets :meth:`_send_resets` sent. ``made`` gets the sub-environments whose reset the server made
        when it raises (every one sent when it is stopped: the server may have made them all); those are marked due."""
        made = [] if made is None else made
        refusal: list[BaseException] = []
        try:
            return self._take_resets(indices, sim_seeds, ids, opts, made, refusal)
        except BaseException as e:
            if not refusal or e is not refusal[0]:  # stopped (a timeout, Ctrl-C, a malformed reply): any may be made
                made[:] = indices
                self._autoreset_envs[list(indices)] = True
            raise

    def _adopt(self, i: int, sid: str) -> None:
        """Session ``sid`` (named by a reset reply) is sub-environment ``i``'s, and the backend's (closed with it): the
        backend's first, so that an interrupt between the two leaves it closed with the env, not open on the server."""
        self._backend.sessions.add(sid)
        self._sessions[i] = sid

    def _take_resets(self, indices: Sequence[int], sim_seeds: list[int], ids: list[int], opts: dict[str, Any], made: list[int], refusal: list[BaseException]) -> list[ResetResult]:
        c = self._backend.client
        # Every session these resets made is the env's (reused by its next reset, closed with it) before an error below
        # is raised (a malformed result's too, when it names one), and when the gather is stopped after some came.
        got = gather_resets(c, ids, lambda k, sid: self._adopt(indices[k], sid))
        # A reply that cannot be read (not JSON, a field missing or of the wrong type) is bad_reply: made, or maybe.
        results = [unread_reset(r, i, self._reset_fields) for i, r in zip(indices, got)]
        # Reset on the server, or maybe (bad_reply): due if the reset fails.
        made[:], refused = refused_or_unread(indices, results, lambda i, r: r.code == "unknown_session" and self._sessions[i] is not None)
        if refused is not None:
            refusal.append(self._reset_refused(*refused, made))
            raise refusal[0]
        failed = replace_lost(self._backend, self.preset, self._sessions, indices, sim_seeds, results, opts, self._adopt, self._reset_fields, made)
        if failed is not None:
            refusal.append(self._reset_refused(*failed, made))
            raise refusal[0]
        out: list[ResetResult] = []
        for i, sd, r in zip(indices, sim_seeds, results):
            self._starts[i] = status_time(r["observation"])
            self._obs[i] = r["observation"]
            self._seeds_used[i] = sd
            out.append(r)
        return out

    def _reset_fields(self, r: Mapping[str, Any]) -> None:
        """Check a reset result's fields as :meth:`_take_resets` takes it in (see :func:`unread_reset`)."""
        if type(r["info"]) is not dict:
            raise TypeError("its info is not an object")
        check_info_counts(r["info"])
        check_info_texts(r["info"])
        check_observation(r["observation"], self.params)

    def _reset_refused(self, i: int, e: ProtocolError, made: Sequence[int]) -> ProtocolError:
        """The error to raise for sub-environment ``i``'s refused reset (``e``, its ``index`` set to ``i``), raised before
        any observation of these resets is taken (the caller puts the sub-environments back as they were). Those whose
        reset the server made (``made``) are marked due for a reset first: their episodes there are new ones the env
        never returned, so the next step resets them again (the same seeds: the same worlds) instead of stepping them
        (DISABLED: refuses to step them)."""
        self._autoreset_envs[list(made)] = True
        e.index = i
        return session_limit_hint(e, self, self.num_envs, self._backend)

    def reset(
        self,
        *,
        seed: VectorSeed = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset all sub-environments (or those of ``options["reset_mask"]``); see the module docstring."""
        self._check_open()
        n = self.num_envs
        seeds, indices, options = reset_arguments(n, seed, options)
        self._ensure_server()
        opts = self._options(options)
        results = self._reset_many(indices, [seeds[i] for i in indices], opts, opts)
        if isinstance(seed, (int, np.integer)):  # once the resets are made: a refused reset changes nothing
            super().reset(seed=int(seed))
        self._autoreset_envs[indices] = False
        for i in indices:
            self._owed.pop(i, None)
        infos = self._batch_infos([(i, self._info(r, i)) for i, r in zip(indices, results)])
        self._show(indices)
        return self._batch_obs(), infos

    # ------------------------------------------------------------------ step

    def step(self, actions: Sequence[str | bytes] | np.ndarray) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment (see the module docstring). When some fail (a lost session, a refused automatic
        reset), the others' results are taken in and :class:`ycgym.VectorStepError` is raised with them."""
        n = self.num_envs
        acts = text_actions(actions, n)
        if self._backend.closed or any(s is None for s in self._sessions):
            self._check_open()
            raise reset_needed(self._without_session(), n)
        mode = self.autoreset_mode
        rewards = np.zeros(n, dtype=np.float64)
        terminations = np.zeros(n, dtype=np.bool_)
        truncations = np.zeros(n, dtype=np.bool_)
        env_infos: list[dict[str, Any] | None] = [None] * n

        due = self._autoreset_envs
        refused = self._refused_step()
        if refused is not None:
            raise refused
        # Due for a reset: NEXT_STEP, an episode that ended at the last step; SAME_STEP, one whose reset in that step
        # failed. Reset now, their actions ignored.
        to_reset: list[int] = np.flatnonzero(due).tolist() if due.any() else []
        to_step = [i for i in range(n) if not due[i]] if to_reset else self._every()
        # Each with the reset it owes (the seed and options of a `reset` call that left it due; else one drawn, the env's
        # options), a request list per options, in to_reset's order.
        groups = owed_groups(self._owed, to_reset) if to_reset else []
        to_reset = [i for g in groups for i in g[0]]

        c = self._backend.client
        # The ids of the batch's parts and of the resets sent behind it, each put here before its request goes out: an
        # interrupt (Ctrl-C) at any point abandons those not received yet.
        parts: list[tuple[int, int]] = []
        reset_ids: list[int] = []
        errors: dict[int, ProtocolError] = {}
        received = 0
        pending: list[Any] = []
        stepped: list[tuple[int, StepResult]] = []  # the results of the sub-environments that stepped, in order
        reset_results: list[ResetResult] = []  # those of to_reset, in order
        # The automatic resets are undone when the step fails anywhere (an entry, a reset, an interrupt): their
        # sub-environments keep their generators and stay due, so the next step draws the same seeds.
        kept = self._kept(to_reset)
        # What the sub-environments held before: a stepped one whose result turns out malformed is put back.
        before = self._obs.copy()
        base = 0  # the entries of to_step before it are taken in (their parts received)
        try:
            if to_step:
                # One request, or a few pipelined (Client.send_step_batch): each part's results are taken in below while
                # the server runs the next.
                c.send_step_batch([{"session": self._sessions[i], "action": acts[i]} for i in to_step], parts)
            for g_idx, g_seeds, g_opts in groups:  # pipelined behind the batch: still one round trip
                pending.append(self._send_resets(g_idx, g_seeds, self._options(None) if g_opts is None else dict(g_opts), reset_ids))
            for rid, size in parts:
                # A request refused as a whole fails each of its entries (none of them ran).
                step_results = c.recv_step_batch(rid, size, base, alone=False)
                received += 1
                for k, (i, sr) in enumerate(zip(to_step[base : base + size], step_results)):
                    if not isinstance(sr, ProtocolError):
                        try:
                            fields = _step_fields(sr)
                        except (KeyError, TypeError, ValueError, AttributeError) as e:
                            sr = malformed_entry(k, e, rid)
                    if isinstance(sr, ProtocolError):
                        sr.index = i
                        errors[i] = sr
                        if sr.code == UNREAD:  # maybe run, result unknown: reset before it plays on
                            owe(self._owed, due, [i], [None], None, BAD_REPLY_WHY)
                        continue
                    # Taken in as it comes: whatever happens next, the env holds what the server holds.
                    self._obs[i], rewards[i], terminations[i], truncations[i] = fields
                    due[i] = terminations[i] or truncations[i]
                    stepped.append((i, sr))
                base += size
            for p in pending:
                try:
                    reset_results += self._finish_resets(*p)
                except ProtocolError as e:
                    errors.setdefault(e.index if e.index is not None else p[0][0], e)
        except BaseException as e:  # e.g. Ctrl-C while waiting: late replies must not be taken for others'
            c.abandon([rid for rid, _ in parts[received:]] + reset_ids)  # those received are not pending: left alone
            self._put_back(kept)
            # The entries of the parts sent and not taken in ran (or will run) on the server unseen: reset them before
            # they play on (the reset goes after them: one client's requests run in order).
            unseen = to_step[base : sum(size for _, size in parts)]
            owe(self._owed, due, unseen, [None] * len(unseen), None, stopped_step_why(e))
            # Those taken in whose status block cannot be read are not kept either (the rare path: checked in full).
            self._fail_malformed(stepped, before, (rewards, terminations, truncations), errors, to_step, parts)
            raise

        # What the step returns, built once from what it took in; a stepped entry whose status block cannot be read
        # (the cheap check at intake lets it through) makes this raise: only then is each stepped entry checked in full,
        # the malformed ones put back as they were and failed (bad_reply, due), and the rest built again.
        try:
            built = self._built(mode, stepped, to_reset, reset_results, errors, terminations, truncations)
        except (KeyError, TypeError, ValueError, AttributeError):
            if not self._fail_malformed(stepped, before, (rewards, terminations, truncations), errors, to_step, parts):
                raise  # not a malformed result's doing
            built = self._built(mode, stepped, to_reset, reset_results, errors, terminations, truncations)
        batch, infos, stepped_infos, done, fobs = built

        if errors:
            self._put_back(kept)  # every automatic reset still due
            reset_results = []
            batch = None  # built before the automatic resets were undone
        else:
            due[to_reset] = False
            for i in to_reset:
                self._owed.pop(i, None)

        if infos is not None and batch is not None:
            # Every env stepped or (automatic reset) reset, none ends with a same-step reset: the vector info straight
            # from the results (the usual step).
            self._show(self._every())
            return batch, rewards, terminations, truncations, infos
        for i, info in stepped_infos:
            env_infos[i] = info
        for i, rr in zip(to_reset, reset_results):
            env_infos[i] = self._info(rr, i)

        final: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
        final_texts: dict[int, str] = {}
        if done:
            ftexts = [self._obs[i]["text"] for i in done]  # type: ignore[index]
            try:
                resets = self._reset_many(done, [None] * len(done), self._options(None))
            except ProtocolError as e:  # undone: they stay due (the next step resets them) with their last step's info
                errors[e.index if e.index is not None else done[0]] = e
            else:
                for i, fo, ft, rr in zip(done, fobs, ftexts, resets):
                    final.append((i, fo, env_infos[i]))  # type: ignore[arg-type]
                    final_texts[i] = ft
                    env_infos[i] = self._info(rr, i)
                due[done] = False
                batch = None  # built before these resets

        per_env: list[tuple[int, dict[str, Any]]] = []
        if not final and None not in env_infos:
            # Every env has its info and none ended with a same-step reset: nothing to merge (the infos are read, not
            # changed, by _batch_infos).
            per_env = list(enumerate(env_infos))  # type: ignore[arg-type]
        else:
            finals = {i: (fo, fi) for i, fo, fi in final}
            for i in range(n):
                merged: dict[str, Any] = {}
                if i in finals:
                    merged["final_obs"], merged["final_info"] = finals[i]
                ei = env_infos[i]
                if ei is not None:
                    merged.update(ei)
                if merged:
                    per_env.append((i, merged))
        vector_infos = self._batch_infos(per_env) if per_env else {}

        self._show([i for i, _ in per_env], final_texts)
        if batch is None:
            batch = self._batch_obs()
        if errors:
            was_stepped = np.zeros(n, dtype=np.bool_)
            was_stepped[[i for i, _ in stepped]] = True
            raise VectorStepError(errors, (batch, rewards, terminations, truncations, vector_infos), was_stepped)
        return batch, rewards, terminations, truncations, vector_infos

    def _built(
        self,
        mode: AutoresetMode,
        stepped: Sequence[tuple[int, StepResult]],
        to_reset: Sequence[int],
        reset_results: Sequence[ResetResult],
        errors: Mapping[int, ProtocolError],
        terminations: np.ndarray,
        truncations: np.ndarray,
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[tuple[int, dict[str, Any]]], list[int], list[dict[str, Any]]]:
        """What :meth:`step` builds from what it took in, before its automatic resets are kept or undone: the batch
        observation; the vector info when every env stepped or reset and none ends with a same-step reset (else None);
        otherwise the stepped ones' infos; the stepped ones to reset now (SAME_STEP: their episodes ended) and their
        final observations. Raises KeyError, TypeError, ValueError or AttributeError when a stepped result's status
        block cannot be read (the caller then finds it)."""
        batch = self._batch_obs()
        ended = mode == AutoresetMode.SAME_STEP and bool(terminations.any() or truncations.any())
        if not errors and not ended:
            by_env: list[Any] = [None] * self.num_envs
            for i, r in stepped:
                by_env[i] = r
            for i, rr in zip(to_reset, reset_results):
                by_env[i] = rr
            infos = self._step_infos(by_env, batch) if None not in by_env else None
            if infos is not None:
                return batch, infos, [], [], []
        stepped_infos = [(i, self._info(sr, i)) for i, sr in stepped]
        done = [i for i, _ in stepped if terminations[i] or truncations[i]] if ended else []
        fobs = [encode_observation(self._obs[i], self.params, self._starts[i], self.max_text_length) for i in done]  # type: ignore[arg-type]
        return batch, None, stepped_infos, done, fobs

    def _fail_malformed(
        self,
        stepped: list[tuple[int, StepResult]],
        before: Sequence[Mapping[str, Any] | None],
        flags: tuple[np.ndarray, np.ndarray, np.ndarray],
        errors: dict[int, ProtocolError],
        to_step: Sequence[int],
        parts: Sequence[tuple[int, int]],
    ) -> bool:
        """Check every stepped result's observation in full (:func:`check_observation`); fail each malformed one as
        :meth:`step`'s intake fails an entry whose fields are wrong: its sub-environment put back as it was (``before``,
        reward and flags zero, dropped from ``stepped``), its error ``bad_reply`` in ``errors``, due for a reset (the
        server ran it). True when one was found. The rare path: a usual step never calls this."""
        bad: list[tuple[int, Exception]] = []
        for i, sr in stepped:
            try:
                check_observation(sr["observation"], self.params)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                bad.append((i, e))
        if not bad:
            return False
        position = {i: k for k, i in enumerate(to_step)}
        due = self._autoreset_envs
        for i, why in bad:
            rid, k = _batch_entry(parts, position[i])
            self._obs[i] = before[i]
            for flag in flags:
                flag[i] = 0
            err = malformed_entry(k, why, rid)
            err.index = i
            errors[i] = err
            due[i] = False
        owe(self._owed, due, [i for i, _ in bad], [None] * len(bad), None, BAD_REPLY_WHY)
        failed = {i for i, _ in bad}
        stepped[:] = [(i, sr) for i, sr in stepped if i not in failed]
        return True

    # ------------------------------------------------------------------ helpers

    def _info(self, r: ResetResult | StepResult, i: int) -> dict[str, Any]:
        return make_info(r, self._sessions[i], self.max_text_length)

    def _add_info(self, vector_infos: dict[str, Any], env_info: dict[str, Any], env_num: int) -> dict[str, Any]:
        """:meth:`gymnasium.vector.VectorEnv._add_info`, same result, without its per-key allocations.

        (Gymnasium builds a fresh ``np.zeros`` mask for every key of every sub-environment even when
        the mask exists; with a nested status block that was 40% of a 64-session step.)
        """
        n = self.num_envs
        for key, value in env_info.items():
            if key == "final_obs":
                array = vector_infos.get("final_obs")
                if array is None:
                    array = np.full(n, fill_value=None, dtype=object)
                array[env_num] = value
            elif isinstance(value, dict):
                array = self._add_info(vector_infos.get(key, {}), value, env_num)
            else:
                array = vector_infos.get(key)
                if array is None:
                    t = type(value)
                    if t in (int, float, bool) or issubclass(t, np.number):
                        array = np.zeros(n, dtype=t)
                    elif isinstance(value, np.ndarray):
                        array = np.zeros((n, *value.shape), dtype=value.dtype)
                    else:
                        array = np.full(n, fill_value=None, dtype=object)
                array[env_num] = value
            mask_key = "_" + key
            mask = vector_infos.get(mask_key)
            if mask is None:
                mask = np.zeros(n, dtype=np.bool_)
            mask[env_num] = True
            vector_infos[key], vector_infos[mask_key] = array, mask
        return vector_infos

    def _batch_infos(self, entries: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
        """The vector info of per-sub-environment infos (in env order): equal to folding
        :meth:`_add_info` over them, built a column at a time."""
        try:
            return self._columnar(entries)
        except _Heterogeneous:
            infos: dict[str, Any] = {}
            for i, info in entries:
                infos = self._add_info(infos, info, i)
            return infos

    def _columnar(self, entries: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
        n = self.num_envs
        first_keys = entries[0][1].keys()
        uniform = all(info.keys() == first_keys for _, info in entries)  # the usual case
        all_idx = [i for i, _ in entries]
        if uniform and all_idx == self._every():
            full = self._columnar_full([info for _, info in entries])
            if full is not None:
                return full
        keys: dict[str, None] = {}
        if uniform:
            keys = dict.fromkeys(first_keys)
        else:
            for _, info in entries:
                for k in info:
                    keys.setdefault(k)
        out: dict[str, Any] = {}
        for key in keys:
            if uniform:
                idx = all_idx
                vals = [info[key] for _, info in entries]
            else:
                idx, vals = [], []
                for i, info in entries:
                    if key in info:
                        idx.append(i)
                        vals.append(info[key])
            types = set(map(type, vals))
            first = vals[0]
            if key == "final_obs":
                array: Any = np.full(n, fill_value=None, dtype=object)
                for i, v in zip(idx, vals):
                    array[i] = v
            elif types == {dict}:
                array = self._columnar(list(zip(idx, vals)))
            elif any(issubclass(t, dict) for t in types):
                raise _Heterogeneous
            else:
                t = type(first)
                if t in (int, float, bool) or issubclass(t, np.number):
                    array = np.zeros(n, dtype=t)
                    array[idx] = vals
                elif isinstance(first, np.ndarray):
                    array = np.zeros((n, *first.shape), dtype=first.dtype)
                    for i, v in zip(idx, vals):
                        array[i] = v
                else:
                    array = np.full(n, fill_value=None, dtype=object)
                    for i, v in zip(idx, vals):
                        array[i] = v
            mask = np.zeros(n, dtype=np.bool_)
            mask[idx] = True
            out[key] = array
            out["_" + key] = mask
        return out

    def _columnar_full(self, infos: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """:meth:`_columnar` when every sub-environment has an info with the same keys (every step
        without an autoreset): one ``np.array`` per column instead of a fill and a scatter, masks all
        true. None when a column is anything else than one scalar type, a dict of such columns or
        plain objects (``final_obs``, arrays, mixed types): the caller takes the general path."""
        out: dict[str, Any] = {}
        for key in infos[0]:
            if key == "final_obs":
                return None
            array = self._full_column([info[key] for info in infos])
            if array is None:
                return None
            out[key] = array
            out["_" + key] = self._all_true().copy()
        return out

    def _full_column(self, vals: Sequence[Any]) -> Any:
        """One column of :meth:`_columnar_full` (a value for every sub-environment): an array, or a dict of columns
        for dict values with the same keys; None for anything it does not build (see there)."""
        types = set(map(type, vals))
        if types <= _STR_OR_NONE:
            # Strings, None, or both (a command or terminal reason here and there): an object array, as the general path
            # and Gymnasium's `_add_info` make it (flat: np.array cannot mistake them for nested sequences).
            return np.array(vals, dtype=object)
        if len(types) != 1:
            return None
        t = types.pop()
        if t is dict:
            k0 = vals[0].keys()
            if not all(v.keys() == k0 for v in vals):
                return None
            return self._columnar_full(vals)
        if t in (int, float, bool) or issubclass(t, np.number):
            return np.array(vals, dtype=t)
        if issubclass(t, (dict, np.ndarray)):
            return None
        # Other objects (the status block's event lists): each one an item, as np.full and a store per item make it.
        return np.fromiter(vals, dtype=object, count=self.num_envs)

    def _step_infos(self, results: list[StepResult], batch: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The vector info of a step whose every sub-environment has one result (a step's, or a next-step autoreset's:
        its info has the same keys) and none ends with a same-step reset: what :meth:`_batch_infos`
        gives for their :func:`make_info` dicts, built a column at a time straight from the results (no info dict
        per sub-environment; prestige and trust converted by ``float`` a column at a time, as ``make_info`` does a
        value at a time). None whenever that is not certain (the infos' keys differ, a text is longer than
        ``max_text_length``, a result carries the server's ``recording_stopped``, a column is not of one plain type,
        a subclass builds its own infos, a malformed result): the caller then takes the general path (which raises
        what ``make_info`` raises).

        ``batch``: the step's batch observation (:meth:`_batch_obs`), or None. When it encodes these very observations
        (the env's, as a step's results are), their prestige and trust columns are copied from its ``prestige`` and
        ``trust`` arrays, where :func:`encode_batch` checked them (numbers only, every domain and client present) and
        converted them to float64 as ``float`` does, instead of being converted again."""
        if len(results) != self.num_envs or type(self)._info is not YCBenchVectorEnv._info:
            return None
        try:
            return self._step_infos_of(results, batch)
        except (KeyError, TypeError, ValueError, AttributeError):  # malformed: the general path says how
            return None

    def _step_infos_of(self, results: list[StepResult], batch: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if any(map(operator.contains, results, repeat("recording_stopped"))):  # a server's note for make_info's info
            return None
        # Plain mappings here: their keys are read as they come (the columns follow the first reply's keys).
        info_columns = _columns(list(map(_INFO, results)))
        obs = list(map(_OBSERVATION, results))
        if info_columns is None or max(map(len, map(_TEXT, obs))) > self.max_text_length:
            return None
        status_columns = _columns(list(map(_STATUS, obs)))
        if status_columns is None:
            return None
        # The batch encodes these observations (and is encode_batch's: no subclass encodes its own).
        encoded = batch is not None and type(self)._batch_obs is YCBenchVectorEnv._batch_obs and all(map(operator.is_, obs, self._obs))
        all_true = self._all_true()  # every column's mask: a copy of it
        status: dict[str, Any] = {}
        for key, vals in status_columns.items():
            if key == "prestige" or key == "trust":
                names = (DOMAINS if key == "prestige" else self.params.clients) if encoded else ()
                array = self._float_columns(vals, (batch[key], names) if encoded else None)  # type: ignore[index]
            elif key == "runway_months":
                array = self._full_column([None if v is None else float(v) for v in vals])
            else:
                array = self._full_column(vals)
            if array is None:
                return None
            status[key] = array
            status["_" + key] = all_true.copy()
        out: dict[str, Any] = {}
        columns = [(key, self._full_column(vals)) for key, vals in info_columns.items()]
        columns += [
            ("status", status),
            ("command", self._full_column(list(map(dict.get, obs, repeat("command"))))),
            ("session", self._full_column(list(self._sessions))),
        ]
        # A server info key that make_info sets again ("status", "command", "session") keeps its place and takes the
        # later value, as in make_info's dict.
        for key, array in columns:
            if array is None or key == "final_obs":
                return None
            out[key] = array
            out["_" + key] = all_true.copy()
        return out

    def _float_columns(self, dicts: Sequence[Any], encoded: tuple[np.ndarray, tuple[str, ...]] | None = None) -> dict[str, Any] | None:
        """The columns of ``{k: float(v) for k, v in d.items()}`` over ``dicts`` (the status block's prestige and trust
        as :func:`make_info` gives them) as :meth:`_full_column` builds them; None where it would not (KeyError where a
        dict lacks a key of the first, see :func:`_dict_keys`).

        ``encoded``: the float64 rows :func:`encode_batch` made of these dicts' values at the keys ``names`` (every dict
        has them, each value a number converted as ``float`` converts it) and ``names``. When the first dict's keys are
        those names, so are every dict's (each has as many keys as the first and all of ``names``): each column is then
        a copy of the matching column of the rows."""
        keys = _dict_keys(dicts)
        if keys is None or "final_obs" in keys:
            return None
        rows: np.ndarray | None = None
        if encoded is not None:
            matrix, names = encoded
            where = {name: j for j, name in enumerate(names)}
            if len(keys) == len(where) and all(map(where.__contains__, keys)):
                rows, keys_at = matrix, [where[k] for k in keys]
        if rows is None:
            rows = _float_rows(dicts, keys, self.num_envs)  # float() of every value, a row per dict (KeyError: one lacks a key)
            keys_at = list(range(len(keys)))
        out: dict[str, Any] = {}
        all_true = self._all_true()
        for k, j in zip(keys, keys_at):
            out[k] = rows[:, j].copy()
            out["_" + k] = all_true.copy()
        return out

    def _all_true(self) -> np.ndarray:
        """An all-true mask of ``num_envs`` (a template: copied for each column, a copy costs a tenth of ``np.ones``)."""
        t = self.__dict__.get("_all_true_cache")
        if t is None or len(t) != self.num_envs:
            t = self.__dict__["_all_true_cache"] = np.ones(self.num_envs, dtype=np.bool_)
        return t

    def _batch_obs(self) -> dict[str, Any]:
        return encode_batch(self._obs, self.params, self._starts, self.max_text_length)  # type: ignore[arg-type]

    def _texts(self) -> list[str]:
        return [(o or {}).get("text", "") for o in self._obs]

    def _show(self, indices: Sequence[int], final_texts: Mapping[int, str] | None = None) -> None:
        """``"human"``: print the texts of sub-environments ``indices`` as ``SyncVectorEnv`` of ``YCBenchEnv`` prints
        them (each sub-environment in turn; one whose episode ended in a same-step reset first its last step's text,
        ``final_texts``, then its reset's)."""
        if self.render_mode != "human":
            return
        texts = self._texts()
        for i in indices:
            if final_texts and i in final_texts:
                print(final_texts[i], flush=True)
            print(texts[i], flush=True)

    def render(self) -> tuple[Any, ...]:
        """As ``SyncVectorEnv.render`` of ``YCBenchEnv``: ``"ansi"``: each sub-environment's last text; ``"human"``: they
        are printed and the tuple is of None (as without a render mode)."""
        if self.render_mode == "ansi":
            return tuple(self._texts())
        if self.render_mode == "human":
            self._show(self._every())
        return (None,) * self.num_envs

    def snapshot(self) -> list[dict[str, Any]]:
        """Snapshots of every sub-environment (pipelined)."""
        self._check_open()
        return take_snapshots(self._backend.client, cast("list[str]", self._sessions))  # before a reset: refused as before

    def close_extras(self, **kwargs: Any) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"YCBenchVectorEnv(num_envs={self.num_envs}, preset={self.preset!r}, autoreset_mode={self.autoreset_mode.value})"
