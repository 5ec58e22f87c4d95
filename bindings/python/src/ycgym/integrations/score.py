"""The benchmark's score as the paper reports it, and one run of the turn protocol that the adapters share.

The paper (arXiv 2604.01212) reports each model's **final funds** in dollars against the **$200K starting
capital** (the horizontal line of its Figures 1 and 7; "5x profit" = five times that capital). The adapters'
episode reward is that comparison as one number, :func:`funds_multiple` = final funds / starting funds:
1.0 is break-even, 6.35 is Claude Opus 4.6's $1.27M, below 0 is bankrupt. It is computed from integer cents
and the preset's own starting funds (info ``funds_cents`` at reset), so it does not assume $200K.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._backend import Backend, attach_finalizer
from .._replies import MALFORMED, check_turn_result, due_if_not_taken_in, malformed_result, named_session
from ..client import Client, ProtocolError, TurnResetResult, TurnStepResult

__all__ = ["funds_multiple", "TurnRun"]


def funds_multiple(final_funds_cents: int, start_funds_cents: int) -> float:
    """Final funds as a multiple of the starting funds (1.0 = break-even; negative = bankrupt). Both in cents."""
    if start_funds_cents <= 0:
        raise ValueError(f"starting funds must be positive, got {start_funds_cents} cents")
    return int(final_funds_cents) / int(start_funds_cents)


class TurnRun:
    """One run of the paper's turn protocol in a ``turn_*`` session of a ycgym server.

    The server owns the harness (prompts, history window, auto-advance, terminal rule); this object only
    remembers the run's starting and latest funds so that :meth:`score` needs no text parsing.

    A turn whose reply could not be read (``bad_reply``), or that was stopped (a timeout, Ctrl-C) after it went out,
    was played on the server (or may have been) but never taken in here: the run's funds, :attr:`done` and terminal
    reason are then unknown, and the run is due for a reset (:attr:`due` says why), as a single Gym env is after such a
    step: :meth:`step` and :meth:`score` raise ``RuntimeError`` until :meth:`reset` (:meth:`messages`, the server's
    own, still answers).

    Args:
        endpoint: ycgym server endpoint; ``None`` uses the process's shared local server.
        preset: preset name. options: ``turn_reset`` options (``max_turns``, ``auto_advance_after_turns``, ...).
        tools: ``"run_command"`` (the reference's single tool), ``"verbs"`` or ``"all"``.
        timeout: per-request timeout in seconds.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        preset: str = "default",
        options: Mapping[str, Any] | None = None,
        tools: str = "run_command",
        timeout: float | None = 30.0,
    ) -> None:
        self.preset = preset
        self.options: dict[str, Any] = dict(options or {})
        self.tools_mode = tools
        self._backend = Backend(endpoint, timeout=timeout)
        self._finalizer = attach_finalizer(self, self._backend)
        self.session: str | None = None
        self.seed: int | None = None
        self.tools: list[dict[str, Any]] = []
        self.start_funds_cents = 0
        self.funds_cents = 0
        self.done = False
        self.terminal_reason: str | None = None
        self.last: TurnResetResult | TurnStepResult | None = None
        self._due: str | None = None

    @property
    def due(self) -> str | None:
        """Why the run is due for a reset (a turn played on the server that this object could not take in), or None."""
        return self._due

    def _mark_due(self, why: str) -> None:
        self._due = why

    def _check_not_due(self, call: str) -> None:
        if self._due is not None:
            raise RuntimeError(f"the run is due for a reset ({self._due}); call reset(seed) before {call}")

    @property
    def client(self) -> Client:
        """The protocol client (for ops this class does not wrap, e.g. ``turn_snapshot``)."""
        return self._backend.client

    def reset(self, seed: int, *, options: Mapping[str, Any] | None = None) -> TurnResetResult:
        """Start a fresh run (the previous session, if any, is closed); ``options`` override the defaults. A local
        server that has exited is replaced by a new one, as the Gym envs' resets do."""
        if self._backend.ensure_server():  # its sessions died with it
            self.session = None
        self._close_session()
        opts = {**self.options, **dict(options or {})}
        res = self.client.turn_reset(int(seed), self.preset, options=opts or None, tools=self.tools_mode)
        sid = named_session(res)
        if sid is not None:  # the backend's (closed with it) even when the rest of the result is malformed
            self._backend.sessions.add(sid)
        try:
            check_turn_result(res, reset=True)
        except MALFORMED as e:
            raise malformed_result("the turn_reset reply", e, "the run was made") from None
        self.session = sid
        self.seed = int(seed)
        self.tools = list(cast("list[dict[str, Any]]", res.get("tools", [])))
        self.start_funds_cents = self.funds_cents = int(res["info"]["funds_cents"])
        self.done = False
        self.terminal_reason = None
        self.last = res
        self._due = None
        return res

    def step(self, action: Mapping[str, Any] | Sequence[str]) -> TurnStepResult:
        """Play one agent turn (the model's ``{"tool_calls", "content", ...}`` or a list of commands)."""
        if self.session is None:
            raise RuntimeError("call reset(seed) before step()")
        self._check_not_due("step()")
        if self.done:
            raise RuntimeError(f"the run is over ({self.terminal_reason}); call reset(seed) to start another")
        with due_if_not_taken_in(self._mark_due, "its last turn's reply could not be read (bad_reply): the server may have played it"):
            res = self.client.turn_step(self.session, action)
        try:
            check_turn_result(res, reset=False)
        except MALFORMED as e:
            self._due = "its last turn's reply was a malformed result (bad_reply): the server played it"
            raise malformed_result("the turn_step reply", e, "the turn was played") from None
        self.funds_cents = int(res["info"]["funds_cents"])
        self.done = bool(res["done"])
        self.terminal_reason = res["terminal_reason"]
        self.last = res
        return res

    def messages(self) -> list[dict[str, Any]]:
        """The chat to send to the model on the next call (exactly the reference harness's)."""
        if self.session is None:
            raise RuntimeError("call reset(seed) before messages()")
        return self.client.turn_messages(self.session)

    def score(self) -> float:
        """:func:`funds_multiple` of the latest funds (the final funds once :attr:`done`)."""
        if self.session is None:
            raise RuntimeError("call reset(seed) before score()")
        self._check_not_due("score()")
        return funds_multiple(self.funds_cents, self.start_funds_cents)

    def _close_session(self) -> None:
        if self.session is not None and not self._backend.closed:
            sid, self.session = self.session, None
            self._backend.sessions.discard(sid)
            try:
                self.client.close(sid)
            except (ProtocolError, TimeoutError):  # already reaped by the server: nothing of ours is lost
                pass

    def close(self) -> None:
        """Close the session and the connection (and release the shared server). Idempotent."""
        self._close_session()
        self._finalizer()

    def __enter__(self) -> TurnRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
