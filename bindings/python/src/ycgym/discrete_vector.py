"""``YCBenchDiscreteVectorEnv`` (``gymnasium.make_vec("ycgym/YCBench-Discrete-v0", num_envs=N)``).

N Discrete sessions on one server, stepped with one ``step_batch`` round trip; observations ``(N, obs_size)``
float32 (or a dict of stacked arrays with ``dict_obs=True``), masks stacked ``(N, n_actions)`` bool in
``info["action_mask"]`` and :meth:`action_masks`. Infos are what ``SyncVectorEnv`` of ``YCBenchDiscreteEnv`` gives
(the tests compare them): the single env's ``reward_cents``, ``step``, ``funds_cents``, ``terminal_reason``,
``action_mask``, ``ok`` (false where the action was masked out: a refused no-op step), ``session``, ``action_text``
(where an action was taken) and ``admissible_commands`` (with that reset option), each with its ``_key`` mask; after a
masked reset only the sub-environments reset are set (the others' rows are zeros or None, their masks false: their
current masks are in :meth:`action_masks`). ``render_mode="ansi"``: :meth:`render` returns the sub-environments' last
texts (a tuple, as ``SyncVectorEnv``; a tuple of None without a render mode). Autoreset modes as Gymnasium's
(``autoreset_mode``):

* ``NEXT_STEP`` (default, as ``SyncVectorEnv``): the step after a sub-environment's episode ends ignores its action
  and returns its reset observation with reward 0.
* ``SAME_STEP``: the step that ends an episode resets that sub-environment at once; it returns the reset
  observation and info; the last observation and info of the episode are in ``info["final_obs"]`` (an object array)
  and ``info["final_info"]`` (a dict of batched arrays with ``_key`` masks, as Gymnasium's vector envs build it),
  masked by ``info["_final_obs"]`` / ``info["_final_info"]``.
* ``DISABLED``: no automatic reset; reset ended sub-environments with ``reset(options={"reset_mask": mask})``. A step
  while one's episode is over raises :class:`ycgym.EpisodeOverError` (an ``AssertionError``, as ``SyncVectorEnv``
  raises, and a ``ProtocolError`` with code ``episode_over``, as a single env stepped past its end) and steps none.

Sub-environment ``i`` of ``reset(seed=s)`` is seeded ``s + i``; later automatic resets draw seeds from that
sub-environment's own generator. ``reset(options=...)`` applies the options (besides ``reset_mask``) to the
sub-environments it resets, as ``SyncVectorEnv`` passes them to each ``YCBenchDiscreteEnv.reset``; automatic resets use
the constructor's ``reset_options``. A reset refused (a seed past ``2**53 - 1``, an option the server refuses, an
unknown ``split``) raises before any observation is taken, with every generator as it was; when the server made the
resets of some sub-environments before refusing another's (or a timeout or an interrupt stopped the reset after they
went out), those are marked due (the next step resets them again with the seeds and options of that reset; DISABLED
refuses to step them).

When some sub-environments fail in a step (a lost session, a refused automatic reset, a refused batch request), the
others' results are taken in and :class:`ycgym.VectorStepError` (a ``ProtocolError``) is raised with them
(``result``, ``errors``, ``stepped``); an automatic reset of that step is not kept (its sub-environment stays due: the
next step resets it with the same seed), so the env always holds what the server holds and a retried ``step`` goes
on. See docs/vector.md.

With the local server, a server that has exited fails the env's requests at once (:class:`ycgym.ServerExitedError`) and
the next ``reset`` starts a new one. The env's sessions were that server's (:attr:`sessions` then holds None for each):
the reset makes new ones for the sub-environments it covers (pipelined, as any reset), and a step refuses before
anything is sent ("call reset() before step()", naming the others) while a masked reset left some without one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._backend import (
    BackendAccess,
    connection,
    generators_kept,
    open_backend,
    restore_generators,
    save_generators,
    session_limit_hint,
)
from ._replies import BAD_REPLY_WHY, MALFORMED, UNREAD, failed_reset_why, malformed_result, named_session, step_flags, stopped_step_why
from .client import BatchArrays, ProtocolError, ResetResult, StepResult, VectorStepError
from .discrete import (
    _INT_KEYS,
    DEFAULT_MARKET_SLOTS,
    DEFAULT_TASK_SLOTS,
    YCBenchDiscreteEnv,
    discrete_actions,
    discrete_options,
    frame_arrays,
    frame_fields,
    merged_discrete_options,
    spaces_of,
)
from .vector import (
    Owed,
    Shardable,
    VectorSeed,
    gather_resets,
    malformed_entry,
    owe,
    owed_groups,
    refused_or_unread,
    replace_lost,
    reset_arguments,
    reset_needed,
    reset_seeds,
    unread_reset,
)
from .vector import entry_error as _entry_error

__all__ = ["YCBenchDiscreteVectorEnv"]

_REASONS = (None, "bankruptcy", "horizon_end", "max_steps", "stall")


def _unreadable_rows(arr: BatchArrays) -> list[int]:
    """The rows of a binary step reply holding a value the JSON result of that entry could not hold, and
    :func:`ycgym.discrete.frame_fields` refuses there: a count or amount (``reward_cents``, ``step``,
    ``funds_cents``: float64 columns of integers) that is not an integer within int64 (a fraction, NaN, infinity), or a
    flag or mask byte other than 0 and 1. The usual reply is told by three whole-array reductions (NaN fails each
    comparison); only a reply that fails them is looked at row by row."""
    n = arr.n
    counts = np.concatenate((arr.reward_cents, arr.step, arr.funds_cents))
    flags = [arr.terminated.view(np.uint8), arr.truncated.view(np.uint8), arr.ok.view(np.uint8)]
    if arr.mask is not None:
        flags.append(arr.mask.view(np.uint8).reshape(-1))
    if np.abs(counts).max() < 2.0**63 and (np.trunc(counts) == counts).all() and np.concatenate(flags).max() <= 1:
        return []
    rows = counts.reshape(3, n)
    bad = ~((np.abs(rows) < 2.0**63) & (np.trunc(rows) == rows)).all(axis=0)
    bad |= (flags[0] | flags[1] | flags[2]) > 1
    if arr.mask is not None:
        bad |= (arr.mask.view(np.uint8) > 1).any(axis=1)
    return np.flatnonzero(bad).tolist()


class _Rows:
    """The rows ``keep`` of a :class:`BatchArrays`' info columns (what :meth:`YCBenchDiscreteVectorEnv._infos` and
    ``_step_info`` read; a ``_Rows`` reads as one, so its rows can be taken again)."""

    def __init__(self, arr: BatchArrays, keep: Sequence[int]) -> None:
        k = np.asarray(keep, dtype=np.intp)
        self.reward_cents, self.step, self.funds_cents, self.ok = arr.reward_cents[k], arr.step[k], arr.funds_cents[k], arr.ok[k]
        self.terminal_reason, self.terminal_reasons = arr.terminal_reason[k], arr.terminal_reasons
        self._reasons = arr.reasons()[k]
        self.action_text = [arr.action_text[j] for j in keep]
        adm = arr.admissible_commands
        self.admissible_commands = None if adm is None else [adm[j] for j in keep]
        self.recording_stopped = {k: arr.recording_stopped[j] for k, j in enumerate(keep) if j in arr.recording_stopped}

    def reasons(self) -> np.ndarray:
        return self._reasons


class YCBenchDiscreteVectorEnv(Shardable, BackendAccess, VectorEnv[Any, np.ndarray, np.ndarray]):
    """N YC-Bench Discrete sessions stepped together (see the module docstring).

    Args: ``num_envs`` and the arguments of :class:`ycgym.YCBenchDiscreteEnv`; ``autoreset_mode`` (see the module
    docstring); ``encoding``: how step replies travel, ``"binary"`` (default: the frames, masks, rewards and flags
    as raw arrays decoded with ``numpy.frombuffer``, no per-step dicts) or ``"json"`` (the same values, slower);
    ``render_mode``: ``None`` or ``"ansi"`` (the server then renders each command's output text, for :meth:`render`).
    A step in which some sub-environments fail raises :class:`ycgym.VectorStepError` with the others' results, which the
    env has taken in (see the module docstring and docs/vector.md).
    """

    # SyncVectorEnv's: the single env's metadata and the autoreset mode.
    metadata: dict[str, Any] = {**YCBenchDiscreteEnv.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
    single_action_space: spaces.Discrete  # what spaces_of makes (VectorEnv annotates a Space)

    def __init__(
        self,
        num_envs: int,
        preset: str = "default",
        endpoint: str | None = None,
        market_slots: int = DEFAULT_MARKET_SLOTS,
        task_slots: int = DEFAULT_TASK_SLOTS,
        dict_obs: bool = False,
        max_steps: int | None = None,
        stall_steps: int | None = None,
        reset_options: Mapping[str, Any] | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        encoding: str = "binary",
        render_mode: str | None = None,
        timeout: float | None = 30.0,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
    ) -> None:
        if int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if encoding not in ("binary", "json"):
            raise ValueError(f'encoding must be "binary" or "json", got {encoding!r}')
        if render_mode is not None and render_mode not in YCBenchDiscreteEnv.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.encoding = encoding
        self.render_mode = render_mode
        self.autoreset_mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.num_envs = int(num_envs)
        self.preset = preset
        self.dict_obs = bool(dict_obs)
        self._opts = discrete_options(market_slots, task_slots, max_steps, stall_steps, reset_options, text=render_mode == "ansi")
        self._connect = connection(endpoint, server_public_key, public_key, secret_key, timeout)
        self._backend, self._finalizer, self.params = open_backend(self, **self._connect, preset=preset)
        c = self._backend.client
        n = self.num_envs
        # The first sessions (seed 0: the env's spec); a `split` reset option is mapped by each reset, not sent.
        probe = {k: v for k, v in self._opts.items() if k != "split"}
        first = c.request_all("reset", [{"seed": 0, "preset": preset, "options": probe}] * n, raise_errors=False)
        # The sessions made are the backend's (closed with it) before anything can fail (a malformed result's too, when
        # it names one): when some could not be made (the server's session limit), or a result is malformed, they are
        # closed now and the first error raised, so that nothing is left behind.
        named = [named_session(r) for r in first]
        self._backend.sessions.update(s for s in named if s is not None)
        failed = next((r for r in first if isinstance(r, ProtocolError)), None)
        if failed is not None:
            self._finalizer()
            raise session_limit_hint(failed, self, n, self._backend)
        try:  # taken in like any reply: a malformed one is bad_reply (as YCBenchDiscreteEnv's first reset)
            if None in named:
                raise TypeError("it has no session id")
            # None: no session on the env's server (a restart's reset left it out; see _ensure_server).
            self._sessions: list[str | None] = list(named)
            self.discrete_spec: dict[str, Any] = dict(first[0]["info"]["discrete_spec"])
            self.single_observation_space, self.single_action_space = spaces_of(self.discrete_spec, self.dict_obs)
            self.observation_space = batch_space(self.single_observation_space, n)
            self.action_space = batch_space(self.single_action_space, n)
            self._obs = np.zeros((n, int(self.discrete_spec["obs_size"])), dtype=np.float32)
            self._mask = np.zeros((n, int(self.discrete_spec["n_actions"])), dtype=np.bool_)
        except MALFORMED as e:
            self._finalizer()
            raise malformed_result("a first reset reply (the frame's spec)", e, "the resets were made") from None
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._owed: dict[int, Owed] = {}  # the resets owed by sub-environments due for another reason than an ended episode
        self._texts: list[str] = [""] * n  # the last output text of each (with render_mode "ansi")
        self._ready = False
        self._sessionless: set[int] = set()  # those whose session is None (what step refuses to step)

    @property
    def sessions(self) -> tuple[str | None, ...]:
        """Each sub-environment's server session; None for one that has none on the env's server (its local server
        exited, and the reset that restarted it did not cover that sub-environment: :meth:`step` refuses until one
        does)."""
        return tuple(self._sessions)

    def _adopt(self, i: int, sid: str) -> None:
        """Session ``sid`` (made by a reset) is sub-environment ``i``'s, and the backend's (closed with it). In this
        order, so that an interrupt anywhere leaves it the backend's (closed with the env) and :meth:`_adopt_new` sees
        an adoption it stopped (no session yet, or still sessionless) and does it again."""
        self._backend.sessions.add(sid)
        self.__dict__.pop("_session_cache", None)
        self._sessions[i] = sid
        self._sessionless.discard(i)

    def _adopt_new(self, i: int, sid: str) -> None:
        """:meth:`_adopt` when sub-environment ``i`` has no session (a reset named none: ``sid`` is a new one); a reset
        in its own session names that session, already the env's (an adoption an interrupt stopped is done again:
        ``i`` is still sessionless)."""
        if self._sessions[i] is None or i in self._sessionless:
            self._adopt(i, sid)

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        return merged_discrete_options(self._opts, options)

    def _due_flags(self) -> np.ndarray:
        return self._autoreset

    def _shard_ready(self) -> bool:
        return self._ready and not self._sessionless

    def _without_session(self) -> list[int]:
        return sorted(self._sessionless)

    def _untouched_by_reset(self) -> Any:
        self._ready = True  # the env steps after any reset
        return self._observation()

    def _ensure_server(self) -> None:
        # Every session of the env is then gone: none is held (None), so the resets ask for new sessions (pipelined, as
        # any reset), and a step refuses (naming them) while a sub-environment the reset did not cover has none.
        if self._backend.ensure_server():
            self._sessions = [None] * self.num_envs
            self._sessionless = set(range(self.num_envs))
            self.__dict__.pop("_session_cache", None)

    def _reset_many(self, idx: Sequence[int], seeds: Sequence[int | None], options: Mapping[str, Any] | None = None) -> list[ResetResult]:
        """Reset the sub-environments ``idx`` (pipelined) with the env's options, then ``options`` (those of a
        ``reset`` call, as ``YCBenchDiscreteEnv.reset`` merges them). Those whose reset the server made, or may have
        made (a timeout, an interrupt after their requests went out), when it fails are marked due for the reset asked
        for (``seeds``, ``options``): their episodes there are new ones the env never returned."""
        c = self._backend.client
        ids: list[int] = []
        made: list[int] = []
        with generators_kept(self._rngs, idx):  # refused: raised before any observation is taken, generators as they were
            sd, opts = reset_seeds(self._backend, self._rngs, idx, seeds, self._options(options))
            try:
                try:
                    c.send_all("reset", [{"seed": s, "preset": self.preset, "session": self._sessions[i], "options": opts} for i, s in zip(idx, sd)], ids)
                except BaseException:
                    made[:] = idx[: len(ids)]  # those whose request may have gone out
                    raise
                return self._take_all_resets(idx, sd, ids, opts, made)
            except BaseException as e:
                seed_of = dict(zip(idx, seeds))
                owe(self._owed, self._autoreset, made, [seed_of[i] for i in made], options, failed_reset_why(e))
                raise

    def _take_all_resets(self, idx: Sequence[int], sd: Sequence[int], ids: list[int], opts: Mapping[str, Any], made: list[int]) -> list[ResetResult]:
        """Gather the resets of ``idx`` sent as ``ids`` and take them (:meth:`_take_resets`). ``made`` gets those whose
        reset the server made when it raises (every one: when it is stopped, by a timeout, Ctrl-C, a malformed reply, the
        server may have made them all); those are marked due."""
        refusal: list[BaseException] = []
        try:
            # A session made for a sub-environment that had none (after a restart) is its own, and the backend's (closed
            # with it), even when the gather is stopped after its reply came (a timeout, Ctrl-C).
            got = gather_resets(self._backend.client, ids, lambda k, sid: self._adopt_new(idx[k], sid))
            return self._take_resets(idx, sd, got, opts, made, refusal)
        except BaseException as e:
            if not refusal or e is not refusal[0]:
                made[:] = idx
                self._autoreset[list(idx)] = True
            raise

    def _take_resets(
        self, idx: Sequence[int], sd: Sequence[int], got: Sequence[ResetResult | ProtocolError], opts: Mapping[str, Any], made: list[int], refusal: list[BaseException]
    ) -> list[ResetResult]:
        """The results of the resets of ``idx`` (seeds ``sd``; replies ``got``, errors in place): the first refusal is
        raised; the sessions the server lost (closed, reaped: ``unknown_session``) are replaced by new ones, reset alike,
        all in one round trip (when one fails, its lost id stays: the next reset finds it lost again and tries anew)."""
        # An error raised here names its sub-environment (`index`). The sub-environments whose reset the server made are
        # marked due for a reset first: their episodes there are new ones the env never returned (the caller takes none
        # of these resets in), so the next step resets them again (the same seeds: the same worlds) instead of stepping
        # them (DISABLED: refuses to step them).
        # A session made for a sub-environment that had none (after a restart) is its own, and the backend's (closed with
        # it), before an error below is raised (a malformed result's too, when it names one): the caller's gather
        # (gather_resets) adopted it.
        # A reply that cannot be read (not JSON, a field missing or of the wrong type) is bad_reply: made, or maybe.
        got = [unread_reset(r, i, self._frame_fields) for i, r in zip(idx, got)]
        made[:], refused = refused_or_unread(idx, got, lambda i, r: r.code == "unknown_session" and self._sessions[i] is not None)
        if refused is not None:
            self._autoreset[made] = True
            refused[1].index = refused[0]
            refusal.append(refused[1])
            raise refused[1]
        # Lost sessions: a new session in place of each, pipelined (one round trip), every one made the env's (closed
        # with it, even malformed); the sub-environments whose new reset the server made (or may have: bad_reply) are
        # made; then the first failure is raised.
        out = list(got)
        failed = replace_lost(self._backend, self.preset, self._sessions, idx, sd, out, opts, self._adopt, self._frame_fields, made)
        if failed is not None:
            i, e = failed
            self._autoreset[made] = True
            e.index = i
            refusal.append(e)
            raise e
        return cast("list[ResetResult]", out)

    def _step_fields(self, r: Any) -> tuple[np.ndarray, np.ndarray, float, bool, bool, str | None]:
        """A JSON step result's frame, mask, reward, flags and text (with a render mode) as :meth:`step` takes them in,
        checked first: KeyError, TypeError or ValueError for a result whose fields are wrong (the caller fails its
        entry, ``bad_reply``, before taking any of it in)."""
        obs, mask, text = self._frame_fields(r)
        reward, term, trunc = step_flags(r)
        return obs, mask, reward, term, trunc, text

    def _frame_fields(self, r: Any) -> tuple[np.ndarray, np.ndarray, str | None]:
        """A step or reset result's frame, mask and text (with a render mode), checked as :meth:`_step_fields` says
        (:func:`ycgym.discrete.frame_fields`: the frame a list of numbers, the mask a list of booleans, the info's
        counts and amounts int64 integers)."""
        return frame_fields(r, self._obs.shape[1:], self._mask.shape[1:], self.render_mode is not None)

    def _put(self, i: int, r: ResetResult | StepResult) -> None:
        self._obs[i], self._mask[i] = frame_arrays(r)
        if self.render_mode is not None:
            self._texts[i] = r["observation"]["text"]

    def _observation(self) -> Any:
        if self.dict_obs:
            return {"observations": self._obs.copy(), "action_mask": self._mask.astype(np.int8)}
        return self._obs.copy()

    def _infos(self, results: Sequence[ResetResult | StepResult | None], stepped: tuple[Sequence[int], BatchArrays] | None = None) -> dict[str, Any]:
        """Vector infos; a sub-environment whose entry is None (not reset by a masked reset) is masked out. ``stepped``:
        the indices and arrays of a binary step (their ``results`` entries are None)."""
        every = stepped is not None and len(stepped[0]) == self.num_envs  # a binary step of all: `results` is all None
        info = self._stepped_infos(stepped[1]) if stepped is not None and every else self._infos_of(results, stepped)
        # The server's note that it stopped a session's recording at its budget (rare: told once), folded as _add_info
        # folds the dict YCBenchDiscreteEnv puts in its info.
        if not every:
            for i, r in enumerate(results):
                if r is not None and r.get("recording_stopped") is not None:
                    self._add_info(info, {"recording_stopped": dict(r["recording_stopped"])}, i)
        if stepped is not None and stepped[1].recording_stopped:
            for k, note in stepped[1].recording_stopped.items():
                self._add_info(info, {"recording_stopped": note}, stepped[0][k])
        return info

    def _stepped_infos(self, arr: BatchArrays) -> dict[str, Any]:
        """``_infos`` of a binary step of every sub-environment (no reset among them): the columns as they are."""
        # every `_key` mask its own array (as _add_info makes them: clearing one must not clear the others)
        have = np.ones(self.num_envs, dtype=np.bool_)
        info: dict[str, Any] = {}
        for key in _INT_KEYS:
            info[key] = getattr(arr, key).astype(np.int64)
            info[f"_{key}"] = have.copy()
        info["terminal_reason"] = arr.reasons()
        info["_terminal_reason"] = have.copy()
        self._put_lists(info, arr.action_text, arr.admissible_commands)
        info["action_mask"] = self._mask.copy()
        info["_action_mask"] = have.copy()
        info["ok"] = arr.ok.copy()
        info["_ok"] = have.copy()
        info["session"] = self._session_column().copy()
        info["_session"] = have
        return info

    def _session_column(self) -> np.ndarray:
        """``self._sessions`` as an ``object`` array (a template, rebuilt when a session changes: copied for each info)."""
        column = self.__dict__.get("_session_cache")
        if column is None:
            column = self.__dict__["_session_cache"] = np.array(self._sessions, dtype=object)
        return column

    def _put_lists(self, info: dict[str, Any], action_text: list[str | None], admissible: Sequence[list[str] | None] | None) -> None:
        """``action_text`` and ``admissible_commands`` columns, as ``_add_info`` makes them: ``object`` arrays, None and
        mask false where a sub-environment's info has no such key, and no column when none has it."""
        n = self.num_envs
        missing = action_text.count(None)
        if missing < n:
            column = np.empty(n, dtype=object)
            column[:] = action_text  # element by element (a third of np.array's time on strings)
            info["action_text"] = column
            info["_action_text"] = np.ones(n, dtype=np.bool_) if not missing else np.array([t is not None for t in action_text], dtype=np.bool_)
        if admissible is not None and any(a is not None for a in admissible):
            column = np.full(n, None, dtype=object)
            for i, a in enumerate(admissible):
                column[i] = None if a is None else list(a)
            info["admissible_commands"] = column
            info["_admissible_commands"] = np.array([a is not None for a in admissible], dtype=np.bool_)

    def _infos_of(self, results: Sequence[ResetResult | StepResult | None], stepped: tuple[Sequence[int], BatchArrays] | None = None) -> dict[str, Any]:
        """``_infos`` computed entry by entry (any mix of results, binary rows and masked-out entries)."""
        have = np.asarray([r is not None for r in results], dtype=np.bool_)
        info: dict[str, Any] = {}
        cols = {key: np.asarray([0 if r is None else int(r["info"][key]) for r in results], dtype=np.int64) for key in _INT_KEYS}  # type: ignore[literal-required]
        reasons = np.asarray([None if r is None else r["info"]["terminal_reason"] for r in results] + [None], dtype=object)[:-1]
        ok = np.asarray([r is not None and bool(r["observation"]["ok"]) for r in results], dtype=np.bool_)
        texts: list[str | None] = [None if r is None else r["info"].get("action_text") for r in results]
        adm: list[list[str] | None] = [None if r is None else r["info"].get("admissible_commands") for r in results]
        if stepped is not None:
            idx, arr = stepped
            have[idx] = True
            for key in _INT_KEYS:
                cols[key][idx] = getattr(arr, key)
            reasons[idx] = arr.reasons()
            ok[idx] = arr.ok
            for k, i in enumerate(idx):
                texts[i] = arr.action_text[k]
                adm[i] = None if arr.admissible_commands is None else arr.admissible_commands[k]
        for key in _INT_KEYS:
            info[key] = cols[key]
            info[f"_{key}"] = have.copy()
        info["terminal_reason"] = reasons
        info["_terminal_reason"] = have.copy()
        self._put_lists(info, texts, adm)
        # As _add_info leaves them: the rows of sub-environments without an info (not reset by a masked reset) are zeros.
        info["action_mask"] = self._mask & have[:, None]
        info["_action_mask"] = have.copy()
        info["ok"] = ok
        info["_ok"] = have.copy()
        info["session"] = np.asarray([s if h else None for s, h in zip(self._sessions, have)] + [None], dtype=object)[:-1]
        info["_session"] = have
        return info

    def _single(self, i: int, r: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Sub-environment ``i``'s observation and info as ``YCBenchDiscreteEnv`` returns them (for ``final_obs``);
        ``r``: its step's ``info`` fields and ``ok``."""
        obs: Any = {"observations": self._obs[i].copy(), "action_mask": self._mask[i].astype(np.int8)} if self.dict_obs else self._obs[i].copy()
        info: dict[str, Any] = {key: int(r[key]) for key in _INT_KEYS}
        info["terminal_reason"] = r["terminal_reason"]
        if r.get("action_text") is not None:
            info["action_text"] = r["action_text"]
        if r.get("admissible_commands") is not None:
            info["admissible_commands"] = list(r["admissible_commands"])
        info["action_mask"] = self._mask[i].copy()
        info["ok"] = bool(r["ok"])
        info["session"] = self._sessions[i]
        return obs, info

    def reset(self, *, seed: VectorSeed = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-environments (or those of ``options["reset_mask"]``); see the module docstring."""
        self._check_open()
        seeds, indices, rest = reset_arguments(self.num_envs, seed, options)
        self._ensure_server()
        results: list[ResetResult | None] = [None] * self.num_envs
        for i, r in zip(indices, self._reset_many(indices, [seeds[i] for i in indices], rest)):
            self._put(i, r)
            results[i] = r
        self._autoreset[indices] = False
        for i in indices:
            self._owed.pop(i, None)
        self._ready = True
        return self._observation(), self._infos(results)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment (see the module docstring). When some fail (a lost session, a refused automatic
        reset), the others' results are taken in and :class:`ycgym.VectorStepError` is raised with them."""
        if not self._ready or self._sessionless:
            self._check_open()
            # before any reset; or a sub-environment without a session (its server restarted, the reset left it out)
            raise reset_needed(self._without_session() if self._ready else [], self.num_envs)
        n = self.num_envs
        acts = discrete_actions(actions, n, int(self.discrete_spec["n_actions"]))
        due = self._autoreset
        refused = self._refused_step()
        if refused is not None:
            raise refused
        c = self._backend.client
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=np.bool_)
        truncated = np.zeros(n, dtype=np.bool_)
        results: list[Any] = [None] * n
        errors: dict[int, ProtocolError] = {}
        # Due for a reset: NEXT_STEP, an episode that ended at the last step; SAME_STEP, one whose reset in that step
        # failed. Reset now, their actions ignored.
        if due.any():
            # Each with the reset it owes (the seed and options of a `reset` call that left it due; else one drawn, the
            # env's options), a request list per options, in `again`'s order.
            groups = owed_groups(self._owed, np.flatnonzero(due).tolist())
            again: list[int] = [i for g in groups for i in g[0]]
            live: list[int] = np.flatnonzero(~due).tolist()
        else:
            groups, again, live = [], [], self._every()
        stepped = live  # those whose step the server took (all of `live` unless some failed)
        # The resets go out first, pipelined behind the step; held in `rid` from before each is sent, so an interrupt
        # (or an error) anywhere until they are gathered abandons them (their replies are dropped, not kept).
        rid: list[int] = []
        # The automatic resets' seeds are drawn from their generators, put back as they were when the step fails anywhere
        # (an entry, a reset, an interrupt): those sub-environments stay due for a reset, and the next step draws the
        # same seeds.
        saved = save_generators(self._rngs, again)
        unseen: list[int] = []  # sent, and not taken in: if the step stops here, they ran (or will run) unseen
        drawn: list[tuple[list[int], list[int], dict[str, Any]]] = []  # each group's indices, seeds and options
        with generators_kept(self._rngs, again):  # refused (a seed, a split): no generator changed
            for g_idx, g_seeds, g_opts in groups:
                drawn.append((g_idx, *reset_seeds(self._backend, self._rngs, g_idx, g_seeds, self._options(g_opts))))
        try:
            for g_idx, g_sd, g_opts in drawn:
                c.send_all("reset", [{"seed": s, "preset": self.preset, "session": self._sessions[i], "options": g_opts} for i, s in zip(g_idx, g_sd)], rid)
            binary: tuple[Sequence[int], BatchArrays] | None = None
            unseen = live
            if not live:
                pass
            elif self.encoding == "binary":
                # One round trip (the resets are pipelined behind it); rows go straight into the batch arrays.
                sessions = cast("list[str]", self._sessions)  # every one held (a step refuses otherwise)
                try:
                    arr: BatchArrays | None = c.step_batch_arrays([(sessions[i], acts[i]) for i in live], raise_errors=False)
                except ProtocolError as e:  # refused as a whole: none of its entries ran
                    arr = None
                    errors.update((i, _entry_error(e, i)) for i in live)
                    stepped = []
                if arr is not None:
                    for failed in arr.errors:
                        failed.index = live[failed.index]
                        errors[failed.index] = failed
                    # A row holding what its JSON result could not (the JSON path's per-entry check refuses it) fails alone.
                    for k in _unreadable_rows(arr):
                        if live[k] not in errors:
                            errors[live[k]] = malformed_entry(k, ValueError("a count, amount, flag or mask value of its row is not of its type"))
                            errors[live[k]].index = live[k]
                    ok = [k for k in range(len(live)) if live[k] not in errors] if errors else None
                    obs, mask = arr.obs, arr.mask
                    framed = obs is not None and mask is not None and obs.shape[1] == self._obs.shape[1] and mask.shape[1] == self._mask.shape[1]
                    if ok != [] and obs is not None and mask is not None and framed:
                        if ok is not None:  # some failed: the rows of the others
                            stepped = [live[k] for k in ok]
                            rows: Any = np.asarray(ok, dtype=np.intp)
                            idx: Any = np.asarray(stepped, dtype=np.intp)
                        else:
                            rows = slice(None)
                            idx = slice(None) if not again else np.asarray(live, dtype=np.intp)
                        self._obs[idx] = obs[rows]
                        self._mask[idx] = mask[rows]
                        if self.render_mode is not None:
                            for i, text in zip(stepped, arr.text if ok is None else [arr.text[k] for k in ok]):
                                self._texts[i] = text
                        rewards[idx] = arr.reward[rows]
                        terminated[idx] = arr.terminated[rows]
                        truncated[idx] = arr.truncated[rows]
                        binary = (stepped if again or ok is not None else self._every(), arr if ok is None else _Rows(arr, ok))  # type: ignore[assignment]
                    else:
                        if ok != []:
                            # No frame of this env's shape: the entries that ran cannot be taken in. Each fails (bad_reply)
                            # and is marked due below.
                            msg = "the binary step reply has no Discrete frame of this env's shape (the step may have run)"
                            errors.update((i, ProtocolError(UNREAD, msg, index=i)) for i in live if i not in errors)
                        stepped = []
            else:
                try:
                    held = cast("list[str]", self._sessions)  # every one held (a step refuses otherwise)
                    got = c.step_batch([(held[i], acts[i]) for i in live], raise_errors=False)
                except ProtocolError as e:  # refused as a whole: none of its entries ran
                    got = [_entry_error(e, i) for i in live]
                for k, (i, r) in enumerate(zip(live, got)):
                    if not isinstance(r, ProtocolError):
                        try:
                            fields = self._step_fields(r)
                        except (KeyError, TypeError, ValueError, AttributeError) as e:
                            r = malformed_entry(k, e)
                    if isinstance(r, ProtocolError):
                        r.index = i
                        errors[i] = r
                        continue
                    results[i] = r
                    self._obs[i], self._mask[i], rewards[i], terminated[i], truncated[i], shown = fields
                    if shown is not None:
                        self._texts[i] = shown
                if errors:
                    stepped = [i for i in live if i not in errors]
            due[stepped] = terminated[stepped] | truncated[stepped]  # the env holds what the server holds
            # An entry whose reply could not be read may have run: reset it before it plays on (DISABLED: refused until).
            unread = [i for i, e in errors.items() if e.code == UNREAD]
            owe(self._owed, due, unread, [None] * len(unread), None, BAD_REPLY_WHY)
            unseen = []
            if again:
                got_resets = c.gather(rid, raise_errors=False)
                rid = []  # all received: none to abandon
                reset_results = []
                at = 0
                for g_idx, g_sd, g_opts in drawn:
                    try:
                        reset_results += self._take_resets(g_idx, g_sd, got_resets[at : at + len(g_idx)], g_opts, [], [])
                    except ProtocolError as e:
                        errors.setdefault(e.index if e.index is not None else g_idx[0], e)
                    at += len(g_idx)
                if not errors:
                    for i, rr in zip(again, reset_results):
                        results[i] = rr
                        self._put(i, rr)
                    due[again] = False
                    for i in again:
                        self._owed.pop(i, None)
        except BaseException as e:
            c.abandon(rid)
            restore_generators(self._rngs, saved)
            # A step stopped (a timeout, Ctrl-C) before its reply was taken in ran, or will run, on the server: reset
            # them before they play on (the reset goes after the step: one client's requests run in order).
            owe(self._owed, due, unseen, [None] * len(unseen), None, stopped_step_why(e))
            raise
        if errors:
            restore_generators(self._rngs, saved)  # every automatic reset still due
        ended = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            done = [int(i) for i in np.flatnonzero(ended)]
            finals = {i: self._single(i, self._step_info(i, results, binary)) for i in done}
            try:
                resets = self._reset_many(done, [None] * len(done))
            except ProtocolError as e:  # undone: they stay due (the next step resets them), with their last step's info
                errors[e.index if e.index is not None else done[0]] = e
                infos = self._infos(results, binary)
            else:
                for i, rr in zip(done, resets):
                    self._put(i, rr)
                    results[i] = rr
                due[done] = False
                if binary is not None:  # the ended ones are reset: their infos are the resets'
                    keep = [k for k, i in enumerate(binary[0]) if not ended[i]]
                    binary = ([binary[0][k] for k in keep], _Rows(binary[1], keep))  # type: ignore[assignment]
                infos = self._infos(results, binary)
                infos["final_obs"] = np.asarray([finals[i][0] if i in finals else None for i in range(n)] + [None], dtype=object)[:n]
                # As Gymnasium's vector envs build it: a dict of batched arrays with `_key` masks (VectorEnv._add_info).
                final_info: dict[str, Any] = {}
                for i in done:
                    final_info = self._add_info(final_info, finals[i][1], i)
                infos["final_info"] = final_info
                infos["_final_obs"] = ended.copy()
                infos["_final_info"] = ended.copy()
        else:
            infos = self._infos(results, binary)
        if errors:
            was_stepped = np.zeros(n, dtype=np.bool_)
            was_stepped[stepped] = True
            raise VectorStepError(errors, (self._observation(), rewards, terminated, truncated, infos), was_stepped)
        return self._observation(), rewards, terminated, truncated, infos

    @staticmethod
    def _step_info(i: int, results: Sequence[Any], binary: tuple[Sequence[int], BatchArrays] | None) -> Mapping[str, Any]:
        """The info fields of sub-environment ``i``'s step (from its JSON result or its row of the binary arrays)."""
        r = results[i]
        if r is not None:
            return {**r["info"], "ok": r["observation"]["ok"]}
        assert binary is not None
        k = list(binary[0]).index(i)
        arr = binary[1]
        adm = arr.admissible_commands
        return {key: getattr(arr, key)[k] for key in _INT_KEYS} | {
            "terminal_reason": arr.terminal_reasons[int(arr.terminal_reason[k])],
            "ok": arr.ok[k],
            "action_text": arr.action_text[k],
            "admissible_commands": None if adm is None else adm[k],
        }

    def action_masks(self) -> np.ndarray:
        """Stacked masks ``(num_envs, n_actions)`` of the actions valid now."""
        return self._mask.copy()

    def render(self) -> tuple[Any, ...]:
        """``"ansi"``: each sub-environment's last output text, as ``SyncVectorEnv.render`` returns its envs' renders (a
        tuple of None without a render mode)."""
        if self.render_mode == "ansi":
            return tuple(self._texts)
        return (None,) * self.num_envs

    def close_extras(self, **kwargs: Any) -> None:
        self._ready = False
        self._finalizer()

    _UNPICKLED = (*Shardable._UNPICKLED, "_session_cache")

    def _restored(self) -> None:
        self._sessionless = {i for i, s in enumerate(self._sessions) if s is None}
