"""The benchmark's score as the paper reports it, and one run of the turn protocol that the adapters share.

The paper (arXiv 2604.01212) reports each model's **final funds** in dollars against the **$200K starting
capital** (the horizontal line of its Figures 1 and 7; "5x profit" = five times that capital). The adapters'
episode reward is that comparison as one number, :func:`funds_multiple` = final funds / starting funds:
1.0 is break-even, 6.35 is Claude Opus 4.6's $1.27M, below 0 is bankrupt. It is computed from integer cents
and the preset's own starting funds (info ``funds_cents`` at reset), so it does not assume $200K.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from .._backend import Backend, attach_finalizer
from .._replies import MALFORMED, check_turn_result, due_if_not_taken_in, malformed_result, named_session
from ..client import Client, ProtocolError, TurnResetResult, TurnStepResult

__all__ = ["funds_multiple", "TurnRun"]

_log = logging.getLogger(__name__)

CLOSE_WAIT_S = 60.0
"""How long :meth:`TurnRun.close` waits by default for a request of the run still running in another thread (twice the
default request timeout: a step that times out has ended by then)."""


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

    :meth:`close` may be called from another thread while a request of the run (:meth:`reset`, :meth:`step`,
    :meth:`messages`) still runs, as when an asyncio task awaiting ``asyncio.to_thread(run.step, ...)`` is cancelled
    and its cleanup closes the run: close waits for that request to end (at most ``close_wait`` seconds), then closes
    the session and the connection. Past the wait it returns, logging a warning (logger ``ycgym.integrations.score``),
    and leaves the close to the request, which closes the run when it ends; either way nothing is closed under it.
    Once close is called, a request of the run raises ``RuntimeError`` and sends nothing.

    Args:
        endpoint: ycgym server endpoint; ``None`` uses the process's shared local server.
        preset: preset name. options: ``turn_reset`` options (``max_turns``, ``auto_advance_after_turns``, ...).
        tools: ``"run_command"`` (the reference's single tool), ``"verbs"`` or ``"all"``.
        timeout: per-request timeout in seconds.
        close_wait: how long :meth:`close` waits for a request of the run running in another thread (seconds).
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        preset: str = "default",
        options: Mapping[str, Any] | None = None,
        tools: str = "run_command",
        timeout: float | None = 30.0,
        close_wait: float = CLOSE_WAIT_S,
    ) -> None:
        if not close_wait >= 0:
            raise ValueError(f"close_wait must be a number of seconds >= 0, got {close_wait!r}")
        self.close_wait = float(close_wait)
        # Requests of the run running now (`_request`), whether close was called, whether a close waits for them to
        # end (past `close_wait`), and whether the session and connection were closed: all under `_ops`.
        self._ops = threading.Condition(threading.Lock())
        self._running = 0
        self._closing = False
        self._close_left = False
        self._released = False
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

    @contextlib.contextmanager
    def _request(self, call: str) -> Iterator[None]:
        """Around a request of the run: refused once :meth:`close` was called; counted while it runs, so that close waits
        for it (and, past its wait, leaves the close to the last one to end)."""
        with self._ops:
            if self._closing:
                raise RuntimeError(f"the run is closed: {call} was not sent")
            self._running += 1
        try:
            yield
        finally:
            with self._ops:
                self._running -= 1
                release = self._running == 0 and self._close_left and not self._released
                if release:
                    self._released = True
                self._ops.notify_all()
            if release:
                try:
                    self._release()
                except Exception as e:  # noqa: BLE001 - best effort, the request's own outcome goes on
                    _log.warning("ycgym: closing the run after its last request failed: %s", e)

    @property
    def client(self) -> Client:
        """The protocol client (for ops this class does not wrap, e.g. ``turn_snapshot``)."""
        return self._backend.client

    def reset(self, seed: int, *, options: Mapping[str, Any] | None = None) -> TurnResetResult:
        """Start a fresh run (the previous session, if any, is closed); ``options`` override the defaults. A local
        server that has exited is replaced by a new one, as the Gym envs' resets do."""
        with self._request("reset()"):
            return self._reset(seed, options)

    def _reset(self, seed: int, options: Mapping[str, Any] | None) -> TurnResetResult:
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
        with self._request("step()"):
            return self._step(action)

    def _step(self, action: Mapping[str, Any] | Sequence[str]) -> TurnStepResult:
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
        with self._request("messages()"):
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
        """Close the session and the connection (and release the shared server). Idempotent. A request of the run still
        running in another thread is waited for (at most :attr:`close_wait` seconds; past that, a warning is logged and
        the request closes the run when it ends)."""
        with self._ops:
            self._closing = True
            if not self._ops.wait_for(lambda: self._running == 0, timeout=self.close_wait):
                self._close_left = True
                _log.warning(
                    "ycgym: closing a run while %d of its requests are still running in another thread after %g s: "
                    "the session %s is closed when they end",
                    self._running,
                    self.close_wait,
                    self.session,
                )
                return
            if self._released:
                return
            self._released = True
        self._release()

    def _release(self) -> None:
        try:
            self._close_session()
        finally:
            self._finalizer()

    def __enter__(self) -> TurnRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
