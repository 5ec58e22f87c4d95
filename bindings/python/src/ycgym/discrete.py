"""``YCBenchDiscreteEnv`` (``gymnasium.make("ycgym/YCBench-Discrete-v0")``): masked integer actions for RL libraries.

Every action is one concrete agent command built from what the agent can see (templates x slots: accept the
k-th visible market task, assign employees to / dispatch / cancel the j-th open task, ``sim resume``). The
server computes the action table, the mask of the actions valid now and the fixed-size numeric observation
(``src/env/discrete.ts``; docs/discrete.md has the tables); this module only wraps them in Gymnasium spaces:

* ``action_space``: ``Discrete(N)``, N = 1 + K + T * (3 + E) (K market slots, T task slots, E employees).
* ``observation_space``: ``Box(spec.obs_low, spec.obs_high, (obs_size,), float32)``; with ``dict_obs=True``
  ``Dict({"observations": that Box, "action_mask": Box(0, 1, (N,), int8)})`` (the RLlib / torchrl convention).
* The mask: ``info["action_mask"]`` (``bool`` array) after every reset and step, and :meth:`action_masks`
  (what sb3-contrib's ``MaskablePPO`` calls); ``action_space.sample(mask=info["action_mask"].astype(np.int8))``
  draws a valid one (Gymnasium's ``Discrete.sample`` takes int8 masks). A masked-out action is refused: an ordinary
  step that changes nothing in the simulation (``info["ok"]`` false, reward 0; it counts toward ``max_steps`` and the
  stall rule). An index outside ``[0, N)`` raises :class:`ycgym.ProtocolError` (code ``invalid_request``) and is no
  step.
* ``info["action_text"]``: the command an action stood for. ``env.discrete_spec``: feature and action names.

Episodes end by default: ``terminated`` on bankruptcy or the horizon, ``truncated`` after ``max_steps`` (default
none) or after ``stall_steps`` consecutive steps that do not advance simulated time (default 200, the server's
rule; 0 disables it).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ._backend import SessionAccess, connection, open_backend, options_dict, reopen, seed_arg, snapshot_sessions
from ._protocol import DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, MAX_SLOTS
from ._replies import (
    _INFO_COUNTS,
    BAD_REPLY_WHY,
    MALFORMED,
    check_info_counts,
    check_info_texts,
    failed_reset_why,
    malformed_result,
    named_session,
    step_flags,
)
from .client import ProtocolError, ResetResult, StepResult
from .spaces import _NUMBER_TYPES

__all__ = ["YCBenchDiscreteEnv", "DEFAULT_MARKET_SLOTS", "DEFAULT_TASK_SLOTS", "discrete_options", "frame_arrays"]

# Keys of the server's info dict kept in ``info`` (the status block and the spec are left out: the vector env
# batches infos every step).
_INFO_KEYS = ("reward_cents", "step", "funds_cents", "terminal_reason", "action_text")


def discrete_options(market_slots: int, task_slots: int, max_steps: int | None, stall_steps: int | None, reset_options: Mapping[str, Any] | None, text: bool = False) -> dict[str, Any]:
    """The reset options of a Discrete session (``reset_options`` first; one asking for another action frame is refused). The output text is
    off (reset option ``text: false``: the server does not render it) unless ``text`` or ``reset_options`` asks for it:
    the Discrete observation does not include it; only ``render_mode="ansi"`` shows it."""
    for name, v, lo in (("market_slots", market_slots, 1), ("task_slots", task_slots, 1)):
        if int(v) != v or not lo <= v <= MAX_SLOTS:
            raise ValueError(f"{name} must be an integer in [1, {MAX_SLOTS}], got {v!r}")
    if max_steps is not None and (int(max_steps) != max_steps or max_steps < 1):
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if stall_steps is not None and (int(stall_steps) != stall_steps or stall_steps < 0):
        raise ValueError(f"stall_steps must be a non-negative integer (0 disables the rule), got {stall_steps!r}")
    opts = options_dict("reset_options", reset_options)
    frame = {"actions": "discrete", "market_slots": int(market_slots), "task_slots": int(task_slots)}
    check_frame("reset_options", frame, opts)
    if not text:
        opts.setdefault("text", False)
    opts.update(frame)
    if max_steps is not None:
        opts["max_steps"] = int(max_steps)
    if stall_steps is not None:
        opts["stall_steps"] = int(stall_steps)
    return opts


def merged_discrete_options(base: Mapping[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options of one reset of a Discrete env: the env's own (``base``, from :func:`discrete_options`), then the
    reset's ``options`` (``split`` among them: the caller maps the seed); options that ask for another action frame
    are refused (:func:`check_frame`)."""
    opts = dict(base)
    extra = options_dict("options", options)
    if extra:
        check_frame("options", base, extra)
        opts.update(extra)
        opts.update(actions="discrete", market_slots=base["market_slots"], task_slots=base["task_slots"])  # as ints
    return opts


def check_frame(name: str, frame: Mapping[str, Any], options: Mapping[str, Any]) -> None:
    """Refuse ``options`` (the argument ``name``) that ask for another action frame than ``frame`` (``actions``,
    ``market_slots``, ``task_slots``: they fix the spaces, so no reset may change them; the same value is accepted)."""
    for key in ("actions", "market_slots", "task_slots"):
        if key in options and options[key] != frame[key]:
            raise ValueError(
                f"{name}[{key!r}] = {options[key]!r}: a Discrete env's {key} is fixed by its spaces ({frame[key]!r});"
                " make another env for another action frame"
            )


def frame_arrays(result: ResetResult | StepResult) -> tuple[np.ndarray, np.ndarray]:
    """The numeric observation (float32) and the mask (bool) of a Discrete reply."""
    d = result["observation"]["discrete"]
    return np.asarray(d["obs"], dtype=np.float32), np.asarray(d["mask"], dtype=np.bool_)


_INT_KEYS = _INFO_COUNTS
"""The info's counts and amounts, int64 integers (the Discrete vector env's info columns)."""
_BOOL_TYPE = frozenset({bool})


def frame_fields(r: Any, obs_shape: tuple[int, ...], mask_shape: tuple[int, ...], text: bool) -> tuple[np.ndarray, np.ndarray, str | None]:
    """A Discrete step or reset result's frame (float32), mask (bool) and, when ``text``, its text, checked before an env
    takes any of it in (KeyError, TypeError or ValueError for a result whose fields are wrong: the env fails it as
    ``bad_reply``): the frame a list of numbers of shape ``obs_shape``, the mask a list of booleans of shape
    ``mask_shape`` (numpy would take ``"5"``, null or true for a number and anything for a boolean), ``ok`` a boolean,
    the info an object whose counts and amounts are int64 integers, with a ``terminal_reason``, its ``action_text`` a
    string and its ``admissible_commands`` a list of strings where present (:func:`ycgym._replies.check_info_texts`).
    Shared by both Discrete envs."""
    d = r["observation"]["discrete"]
    frame, flags = d["obs"], d["mask"]
    if type(frame) is not list or type(flags) is not list or not set(map(type, frame)) <= _NUMBER_TYPES or not set(map(type, flags)) <= _BOOL_TYPE:
        raise TypeError("its frame is not a list of numbers or its mask not a list of booleans")
    try:
        obs, mask = frame_arrays(r)
    except OverflowError:
        raise ValueError("its frame holds an integer past a float's range") from None
    if obs.shape != obs_shape or mask.shape != mask_shape:
        raise ValueError(f"its frame has shape {obs.shape} and its mask {mask.shape}, not this env's")
    info, o = r["info"], r["observation"]
    if type(info) is not dict or "terminal_reason" not in info or not isinstance(o["ok"], bool):
        raise TypeError("its info or observation is not of its type")
    for key in _INT_KEYS:
        if type(info[key]) is not int:
            raise TypeError(f"info[{key!r}] must be an integer")
    check_info_counts(info)
    check_info_texts(info)
    out = None
    if text:
        out = o["text"]
        if type(out) is not str:
            raise TypeError("its text must be a string")
    return obs, mask, out


def spaces_of(spec: Mapping[str, Any], dict_obs: bool) -> tuple[spaces.Space[Any], spaces.Discrete]:
    """Observation and action spaces of a spec."""
    box = spaces.Box(np.asarray(spec["obs_low"], dtype=np.float32), np.asarray(spec["obs_high"], dtype=np.float32), dtype=np.float32)
    n = int(spec["n_actions"])
    obs: spaces.Space[Any] = box
    if dict_obs:
        obs = spaces.Dict({"observations": box, "action_mask": spaces.Box(0, 1, (n,), dtype=np.int8)})
    return obs, spaces.Discrete(n)


def discrete_action(action: Any) -> int:
    """A Discrete action as an ``int``: what ``spaces.Discrete`` holds (``int``, a numpy integer, an integer array of
    one element; also any other object with ``__index__``, e.g. a one-element integer tensor). Anything else, a float
    or a bool or a string, raises ``TypeError`` (``int()`` would take ``1.5`` as 1 and ``"3"`` as 3)."""
    if isinstance(action, np.ndarray) and action.size == 1 and action.ndim > 0:
        action = action.reshape(())
    if not isinstance(action, (bool, np.bool_)):
        try:
            return operator.index(action)
        except TypeError:
            pass
    raise TypeError(f"ycgym: a Discrete action is an integer index, got {type(action).__name__}: {action!r}")


def discrete_actions(actions: Any, n: int, n_actions: int) -> list[int]:
    """The ``n`` actions of a Discrete vector env step as ints: an integer array-like of ``n`` (any shape that
    flattens to ``n``); another dtype (float, bool, strings, objects) raises ``TypeError``. An index outside
    ``[0, n_actions)`` raises ``ProtocolError`` (``invalid_request``, ``index`` the sub-environment) here, before
    anything is sent: the server would refuse that entry of the batch but step the others."""
    acts = np.asarray(actions)
    if acts.dtype.kind not in "iu":
        raise TypeError(f"ycgym: Discrete actions are integer indices, got an array of {acts.dtype} ({actions!r:.80})")
    acts = acts.reshape(-1)
    if acts.shape[0] != n:
        raise ValueError(f"expected {n} actions, got {acts.shape[0]}")
    out: list[int] = acts.tolist()
    if acts.size and (int(acts.min()) < 0 or int(acts.max()) >= n_actions):
        i = next(i for i, a in enumerate(out) if not 0 <= a < n_actions)
        raise ProtocolError("invalid_request", f"action must be an integer in [0, {n_actions - 1}], got {out[i]}", index=i)
    return out


class YCBenchDiscreteEnv(SessionAccess, gym.Env[Any, np.int64]):
    """YC-Bench with masked integer actions (see the module docstring).

    Args:
        preset: server preset name.
        endpoint: server endpoint; ``None`` starts (or reuses) a local server child process.
        market_slots: K, visible market tasks offered for accept (default 10).
        task_slots: T, open owned tasks addressable (default 4).
        dict_obs: observations as ``{"observations", "action_mask"}``.
        max_steps: truncate after this many steps (default none).
        stall_steps: truncate after this many steps without simulated time advancing (default: the server's 200).
        reset_options: other reset options (``start_date``, ``company_name``, ``horizon_years``, ``admissible_commands``,
            ``split``: every reset plays the seed of that split drawn from its reset seed, as :class:`ycgym.YCBenchEnv`).
        timeout, server_public_key, public_key, secret_key: as for :class:`ycgym.YCBenchEnv`.

    Building the env opens its first session (seed 0) to read the frame's spec; ``reset`` reuses it.
    The env pickles like :class:`ycgym.YCBenchEnv` (the copy continues the current episode exactly).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}
    action_space: spaces.Discrete  # what spaces_of makes (gym.Env annotates a Space): `env.action_space.n` type-checks

    def __init__(
        self,
        preset: str = "default",
        endpoint: str | None = None,
        market_slots: int = DEFAULT_MARKET_SLOTS,
        task_slots: int = DEFAULT_TASK_SLOTS,
        dict_obs: bool = False,
        max_steps: int | None = None,
        stall_steps: int | None = None,
        reset_options: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        timeout: float | None = 30.0,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.preset = preset
        self.dict_obs = bool(dict_obs)
        self.render_mode = render_mode
        self.max_steps = max_steps
        self._opts = discrete_options(market_slots, task_slots, max_steps, stall_steps, reset_options, text=render_mode == "ansi")
        self._connect = connection(endpoint, server_public_key, public_key, secret_key, timeout)
        self._backend, self._finalizer, self.params = open_backend(self, **self._connect, preset=preset)
        # The first session (for the frame's spec); a `split` reset option is mapped by each reset(), not sent.
        r = self._backend.client.reset(0, preset, options={k: v for k, v in self._opts.items() if k != "split"})
        try:  # taken in like any reply: a malformed one is bad_reply (a session it names is closed with the backend)
            session = named_session(r)
            if session is None:
                raise TypeError("it has no session id")
            self._session: str | None = session
            self._backend.sessions.add(session)
            self.discrete_spec: dict[str, Any] = dict(r["info"]["discrete_spec"])
            self.observation_space, self.action_space = spaces_of(self.discrete_spec, self.dict_obs)
            self._mask = np.zeros(int(self.discrete_spec["n_actions"]), dtype=np.bool_)
            self._obs_shape: tuple[int, ...] = np.shape(self.discrete_spec["obs_low"])
        except MALFORMED as e:
            raise malformed_result("the first reset reply (the frame's spec)", e, "the reset may have been made") from None
        self._ready = False
        self._last_text = ""
        self._last_seed: int | None = None

    # ------------------------------------------------------------------ properties

    # ------------------------------------------------------------------ gym API

    def _frame_taken(self, result: ResetResult | StepResult, session: str | None) -> tuple[Any, dict[str, Any], np.ndarray, str]:
        """A result's observation, info, mask and text, checked first (:func:`frame_fields`, as the Discrete vector env
        checks a result) and built without changing the env (see :meth:`_taken`)."""
        obs, mask, text = frame_fields(result, self._obs_shape, self._mask.shape, self.render_mode is not None)
        info: dict[str, Any] = {k: result["info"][k] for k in _INFO_KEYS if k in result["info"]}  # type: ignore[literal-required]
        if "admissible_commands" in result["info"]:
            info["admissible_commands"] = list(result["info"]["admissible_commands"])
        info["action_mask"] = mask.copy()
        info["ok"] = result["observation"]["ok"]
        info["session"] = session
        stopped = result.get("recording_stopped")
        if stopped is not None:  # the server stopped this session's recording at its budget (told once)
            info["recording_stopped"] = dict(stopped)
        if self.dict_obs:
            return {"observations": obs, "action_mask": mask.astype(np.int8)}, info, mask, text or ""
        return obs, info, mask, text or ""

    def _reset_taken(self, result: ResetResult) -> tuple[Any, dict[str, Any], np.ndarray, str]:
        if named_session(result) is None:
            raise TypeError("it has no session id")
        return self._frame_taken(result, result["session"])

    def _accept(self, result: ResetResult | StepResult, taken: tuple[Any, dict[str, Any], np.ndarray, str]) -> tuple[Any, dict[str, Any]]:
        """Take in a result that :meth:`_frame_taken` passed (``taken``: what it gave)."""
        obs, info, self._mask, self._last_text = taken
        return obs, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._check_open()
        seed = seed_arg(seed)
        with self._np_random_kept():  # a refused reset changes nothing
            super().reset(seed=seed)
            r, taken = self._seeded_reset(seed, merged_discrete_options(self._opts, options), self._reset_taken)
            self._session = r["session"]
            self._ready = True
            self._due = None
        return self._accept(r, taken)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if not self._ready or self._session is None:
            self._check_open()
            raise gym.error.ResetNeeded("call reset() before step()")
        self._check_not_due()
        index, session = discrete_action(action), self._session

        def taken(r: StepResult) -> tuple[tuple[float, bool, bool], tuple[Any, dict[str, Any], np.ndarray, str]]:
            return step_flags(r), self._frame_taken(r, session)

        r, (flags, got) = self._taken("the step reply", "it may have run", lambda e: BAD_REPLY_WHY, lambda: self._step_request(session, index), taken)
        obs, info = self._accept(r, got)
        return (obs, *flags, info)

    def action_masks(self) -> np.ndarray:
        """The actions valid now (``bool``, length N): sb3-contrib ``MaskablePPO``'s hook."""
        return self._mask.copy()

    def render(self) -> str | None:
        """``"ansi"``: the last command's output text."""
        return self._last_text if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._session = None
        self._ready = False
        self._finalizer()

    # ------------------------------------------------------------------ snapshots and pickling

    def snapshot(self) -> dict[str, Any]:
        """Exact snapshot of the current episode (for :meth:`restore`)."""
        if self._session is None or not self._ready:
            self._check_open()
            raise gym.error.ResetNeeded("call reset() before snapshot()")
        return self._backend.client.snapshot(self._session)

    def restore(self, snapshot: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Continue exactly from a snapshot of a Discrete episode."""
        r, taken = self._taken("the restore reply", "the restore may have been made", failed_reset_why, lambda: self._restore_session(snapshot), self._reset_taken, adopt=True)
        self._ready = True
        self._due = None
        return self._accept(r, taken)

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_backend", "_finalizer")}
        state["_session"] = None
        state["_episode"] = snapshot_sessions(self._backend, [self._session if self._ready else None])[0]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episode = state.pop("_episode")
        self.__dict__.update(state)
        self._backend, self._finalizer = reopen(self, self._connect, self.preset, self.params)
        self._session = None
        if episode is not None:
            self.restore(episode)

    def __repr__(self) -> str:
        return f"<YCBenchDiscreteEnv preset={self.preset!r} n_actions={int(self.discrete_spec['n_actions'])} session={self._session!r}>"
