"""``YCBenchEnv``: the ycgym environment as a :class:`gymnasium.Env` (one step = one CLI command)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, SupportsFloat

import gymnasium as gym

from ._backend import (
    SessionAccess,
    connection,
    open_backend,
    options_dict,
    reopen,
    restore_sessions,
    seed_arg,
    snapshot_sessions,
    snapshot_start,
    status_time,
)
from ._replies import BAD_REPLY_WHY, check_info_counts, check_info_texts, failed_reset_why, named_session, step_flags
from .client import ResetResult, StepResult
from .spaces import (
    MAX_TEXT_LENGTH,
    action_space,
    action_text,
    check_max_text_length,
    check_observation,
    checked_observation,
    encode_observation,
    observation_space,
)

__all__ = ["YCBenchEnv", "make_info"]

ObsType = dict[str, Any]


def make_info(result: ResetResult | StepResult, session: str | None, max_text_length: int = MAX_TEXT_LENGTH) -> dict[str, Any]:
    """The ``info`` dict of a reset/step: the server's info plus the status block and the session.

    ``status`` is the observation's status block as sent (events included), with ``prestige``,
    ``trust`` and ``runway_months`` values as ``float``. When the observation's text is longer than
    ``max_text_length`` (so the observation holds only its beginning), ``text_truncated`` is true and
    ``text_length`` is the full length. ``recording_stopped`` is the server's note, once, that it stopped the
    session's recording at its byte budget (``ycgym serve --record-client-mib``, ``--record-max-mib``).
    """
    return _info_into(dict(result["info"]), dict(result["observation"]["status"]), result, session, max_text_length)


def _info_into(info: dict[str, Any], st: dict[str, Any], result: ResetResult | StepResult, session: str | None, max_text_length: int) -> dict[str, Any]:
    """:func:`make_info`'s dict, built in ``info`` (the server's info, or a copy) with ``st`` (the status block, or a
    copy) as its ``status``. The single env's step passes the reply's own two objects, which nothing else holds (the
    client keeps nothing of a reply it handed over), so that a step copies neither."""
    stopped = result.get("recording_stopped")
    if stopped is not None:
        info["recording_stopped"] = dict(stopped)
    obs = result["observation"]
    if len(obs["text"]) > max_text_length:
        info["text_truncated"] = True
        info["text_length"] = len(obs["text"])
    # JSON from JavaScript writes 1.0 as 1: give the float fields their float type back (Gymnasium's
    # vector info batching picks an array dtype from the first value it sees).
    st["prestige"] = {k: float(v) for k, v in st["prestige"].items()}
    st["trust"] = {k: float(v) for k, v in st["trust"].items()}
    if st.get("runway_months") is not None:
        st["runway_months"] = float(st["runway_months"])
    info["status"] = st
    info["command"] = obs.get("command")
    info["session"] = session
    return info


def _check_info(r: ResetResult | StepResult) -> None:
    """The checks of a result's info (:meth:`YCBenchEnv._checked`)."""
    info = r["info"]
    if type(info) is not dict:
        raise TypeError("its info is not an object")
    check_info_counts(info)
    check_info_texts(info)


def merged_options(reset_options: Mapping[str, Any], max_steps: int | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options of one reset of a text env: the env's ``reset_options``, its ``max_steps``, then the reset's own."""
    opts = dict(reset_options)
    if max_steps is not None:
        opts["max_steps"] = int(max_steps)
    opts.update(options_dict("options", options))
    return opts


def text_option(obs_text: str, reset_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``reset_options`` with the ``text`` reset option ``obs_text`` stands for (``"full"``: as given; ``"none"``: off)."""
    if obs_text not in ("full", "none"):
        raise ValueError(f'obs_text must be "full" or "none", got {obs_text!r}')
    opts = options_dict("reset_options", reset_options)
    if obs_text == "none":
        opts["text"] = False
    return opts


class YCBenchEnv(SessionAccess, gym.Env[ObsType, str]):
    """YC-Bench as a Gymnasium environment, backed by a ycgym server.

    One step is one command of the reference CLI (``"market browse"``, ``"task accept --task-id ..."``,
    ``"sim resume"``...). The reward is the change in funds caused by the step, in dollars
    (``info["reward_cents"]`` has the exact cents). ``terminated`` once funds are negative or the
    horizon is reached; ``truncated`` after ``max_steps`` steps. An invalid command is an ordinary
    step (error text in the observation, reward 0). An action is a ``str`` (``bytes`` are decoded as UTF-8).

    Args:
        preset: server preset name (``"default"``, ``"multi"``, ``"corrected"``).
        endpoint: server endpoint; ``None`` starts (or reuses) a local server child process.
        max_steps: truncate episodes after this many steps (the server enforces it).
        server_public_key, public_key, secret_key: CURVE keys (Z85) for a remote server.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the last text) or ``"human"`` (``reset`` and ``step``
            print it, as Gymnasium's human mode renders without a call to ``render()``; ``render()`` prints it again).
        timeout: per-request timeout in seconds (a positive number up to ``ycgym.client.MAX_TIMEOUT_S``), or None to
            wait forever.
        reset_options: default ``options`` of every ``reset`` (``start_date``, ``company_name``,
            ``horizon_years``, ``record``, and ``split``: ``"train"``, ``"validation"`` or ``"test"`` plays
            the seed of that split drawn from the reset seed, see :mod:`ycgym.splits`); per-call ``options``
            override them.
        max_text_length: bound of the ``text`` observation (:data:`ycgym.spaces.MAX_TEXT_LENGTH`); longer
            texts are cut and flagged in ``info`` (``text_truncated``, ``text_length``).
        obs_text: ``"full"`` (default: the command output, what an LLM reads) or ``"none"``: the ``text``
            observation is always ``""`` and the server never renders the output (the reset option
            ``text: false``), for agents that read the numeric observation.

    The env pickles (``pickle``, ``cloudpickle``: ``AsyncVectorEnv``, multiprocessing, Ray): the copy connects
    to the same endpoint, or to a local server of its own process when ``endpoint`` was ``None``, and continues
    the current episode exactly (it carries a snapshot of it). Its CURVE keys travel with it.

    With the local server, a server that has exited makes calls fail at once with
    :class:`ycgym.client.ServerExitedError`; the next :meth:`reset` starts a new server.

    A reply that cannot be read, or whose values are not of their protocol types, raises
    ``ProtocolError("bad_reply")`` before the env takes any of it in (as the vector envs fail such an entry); the server
    ran that step (or made that reset), so the env is then due for a reset: ``step`` raises ``gym.error.ResetNeeded``
    saying why until :meth:`reset` (or :meth:`restore`). :class:`ycgym.YCBenchDiscreteEnv` does the same.

    Observations are described in :mod:`ycgym.spaces`; ``info`` holds ``reward_cents``, ``step``,
    ``funds_cents``, ``terminal_reason``, ``status`` (the raw status block with wake ``events``),
    ``command`` and ``session``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        preset: str = "default",
        endpoint: str | None = None,
        max_steps: int | None = None,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
        render_mode: str | None = None,
        timeout: float | None = 30.0,
        reset_options: Mapping[str, Any] | None = None,
        max_text_length: int = MAX_TEXT_LENGTH,
        obs_text: str = "full",
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if max_steps is not None and (int(max_steps) != max_steps or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.preset = preset
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.reset_options: dict[str, Any] = text_option(obs_text, reset_options)
        self.max_text_length = check_max_text_length(max_text_length)
        self._connect = connection(endpoint, server_public_key, public_key, secret_key, timeout)
        self._backend, self._finalizer, self.params = open_backend(self, **self._connect, preset=preset)
        self.observation_space = observation_space(self.params, self.max_text_length)
        self.action_space = action_space()
        self._session: str | None = None
        self._start: datetime | None = None
        self._last_text: str = ""
        self._last_seed: int | None = None

    # ------------------------------------------------------------------ properties

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[ObsType, dict[str, Any]]:
        self._check_open()
        seed = seed_arg(seed)
        with self._np_random_kept():  # a refused reset changes nothing
            super().reset(seed=seed)
            r, (start, out) = self._seeded_reset(seed, self._options(options), self._reset_taken)
        self._accept_reset(r, start)
        if self.render_mode == "human":  # Gymnasium's human mode: rendered by reset and step themselves
            self.render()
        return out

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        return merged_options(self.reset_options, self.max_steps, options)

    def _reset_taken(self, r: ResetResult, snapshot: Mapping[str, Any] | None = None) -> tuple[datetime, tuple[ObsType, dict[str, Any]]]:
        """A reset (or restore of ``snapshot``) result's episode start time, observation and info, checked first (see
        :meth:`_checked`) and built without changing the env."""
        if named_session(r) is None:
            raise TypeError("it has no session id")
        self._checked(r)
        start = status_time(r["observation"])
        if snapshot is not None:
            start = snapshot_start(snapshot, start)
        return start, (encode_observation(r["observation"], self.params, start, self.max_text_length), make_info(r, r["session"], self.max_text_length))

    def _checked(self, r: ResetResult | StepResult) -> None:
        """Check a result's info and observation as the vector env checks them before it takes a result in (the info's
        counts and amounts, its ``action_text`` and ``admissible_commands`` where present, the observation in full: :func:`ycgym.spaces.check_observation`); KeyError, TypeError or
        ValueError for a result whose fields are wrong (:meth:`_taken` makes it ``bad_reply``)."""
        _check_info(r)
        check_observation(r["observation"], self.params)

    def _accept_reset(self, r: ResetResult, start: datetime) -> None:
        """Take in a reset (or restore) result that :meth:`_reset_taken` passed."""
        self._session = r["session"]
        self._start = start
        self._last_text = r["observation"]["text"]
        self._due = None

    def step(self, action: str | bytes) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._session is None or self._start is None:
            self._check_open()
            raise gym.error.ResetNeeded("call reset() before step()")
        self._check_not_due()
        text, session, start = action_text(action), self._session, self._start

        def taken(r: StepResult) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
            # The checks of _checked, the observation's as it is encoded (checked_observation); the info built in the
            # reply's own objects (the observation is encoded from them first).
            reward, terminated, truncated = step_flags(r)
            _check_info(r)
            o = r["observation"]
            obs = checked_observation(o, self.params, start, self.max_text_length)
            # Both dicts: _check_info and checked_observation took them.
            return obs, reward, terminated, truncated, _info_into(r["info"], o["status"], r, session, self.max_text_length)  # type: ignore[arg-type]

        r, out = self._taken("the step reply", "it may have run", lambda e: BAD_REPLY_WHY, lambda: self._step_request(session, text), taken)
        self._last_text = r["observation"]["text"]
        if self.render_mode == "human":
            self.render()
        return out

    def render(self) -> str | None:
        """``"ansi"``: return the last observation text; ``"human"``: print it (``reset`` and ``step`` already do)."""
        if self.render_mode == "ansi":
            return self._last_text
        if self.render_mode == "human":
            print(self._last_text, flush=True)
        return None

    def close(self) -> None:
        """Close the session, the connection, and release the local server (idempotent)."""
        self._session = None
        self._finalizer()

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, Any]:
        """Exact, JSON-serialisable snapshot of the current episode (opaque; for :meth:`restore`)."""
        if self._session is None:
            self._check_open()
            raise gym.error.ResetNeeded("call reset() before snapshot()")
        return self._backend.client.snapshot(self._session)

    def restore(self, snapshot: Mapping[str, Any]) -> tuple[ObsType, dict[str, Any]]:
        """Continue exactly from ``snapshot`` (from this or any env of the same preset).

        Returns ``(observation, info)`` like :meth:`reset` (``text`` is empty); later steps are identical
        to those that followed the snapshot.
        """
        r, (start, out) = self._taken(
            "the restore reply",
            "the restore may have been made",
            failed_reset_why,
            lambda: self._restore_session(snapshot),
            lambda r: self._reset_taken(r, snapshot),
            adopt=True,
        )
        self._accept_reset(r, start)
        return out

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_backend", "_finalizer")}
        state["_session"] = None
        state["_episode"] = snapshot_sessions(self._backend, [self._session])[0]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episode = state.pop("_episode")
        self.__dict__.update(state)
        self._backend, self._finalizer = reopen(self, self._connect, self.preset, self.params)
        if episode is not None:
            self._session = restore_sessions(self._backend, [episode])[0]

    def __repr__(self) -> str:
        return f"<YCBenchEnv preset={self.preset!r} endpoint={self.endpoint!r} session={self._session!r}>"
