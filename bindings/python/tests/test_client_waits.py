"""``liveness`` is asked before a send only when its last "running" is older than ``_LIVENESS_RECHECK_S`` (not once
per request), and an exited server is still noticed: at the next send once liveness has said so, or while waiting."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from helpers import fake_server
from ycgym import Client, LocalServer, _pipe, _spin
from ycgym import client as client_mod
from ycgym import server as server_mod
from ycgym.client import _LIVENESS_RECHECK_S, ServerExitedError


def test_liveness_is_asked_before_a_send_only_when_its_answer_is_old(endpoint: str) -> None:
    asked = 0

    def liveness() -> str | None:
        nonlocal asked
        asked += 1
        return None

    c = Client(endpoint, liveness=liveness)
    try:
        sess = c.reset(1, options={"stall_steps": 0})["session"]
        asked = 0
        t = time.monotonic()
        n = 300
        for _ in range(n):
            c.step(sess, "company status")
        took = time.monotonic() - t
        # One ask per _LIVENESS_RECHECK_S of requests (and none while waiting: every reply came within the poll period).
        assert asked <= took / _LIVENESS_RECHECK_S + 2, (asked, took)
        assert asked < n
    finally:
        c.close()


def test_an_exited_server_is_noticed_at_the_next_send_or_while_waiting() -> None:
    """``gone`` is never remembered: once liveness reports it, the next request fails at once; a request sent while the
    last "running" was recent fails while waiting, within the liveness poll."""
    state: dict[str, str | None] = {"gone": None}
    # A server that never answers.
    with fake_server(timeout=30, liveness=lambda: state["gone"]) as (c, _router):
        c._check_alive("hello")  # "running" just now
        state["gone"] = "the test's server exited"
        t = time.monotonic()
        with pytest.raises(ServerExitedError, match="the test's server exited"):
            c.hello()
        assert time.monotonic() - t < 3
        # Now that liveness said gone, a send fails before sending: nothing reaches the socket (before: a bound of 0.1 s
        # on the call, which a loaded machine can exceed while descheduled).
        real, sent = c._sock, []

        class Counting:
            def send(self, *args: Any, **kwargs: Any) -> Any:
                sent.append(args)
                return real.send(*args, **kwargs)

            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

        c._sock = Counting()
        try:
            with pytest.raises(ServerExitedError):
                c.hello()
        finally:
            c._sock = real
        assert sent == []
        assert not c._pending


def test_a_zeromq_client_polls_for_its_replies_and_gets_the_same_ones(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with a spin budget finds its replies by polling the socket (ZMQ_EVENTS) before any blocking receive,
    and gets what a client that sleeps at once gets."""
    found: list[bool] = []
    real = _spin.spin  # what the client module calls by its name `spin`

    def counted(ready: Any, budget: float) -> bool:
        found.append(real(ready, budget))
        return found[-1]

    monkeypatch.setattr(client_mod, "spin", counted)
    spinning, sleeping = Client(endpoint, spin_us=_spin.MAX_SPIN_US), Client(endpoint, spin_us=0)
    try:
        assert spinning._spin_s == 1.0 and sleeping._spin_s == 0
        got = []
        for c in (spinning, sleeping):
            sess = c.reset(5, options={"stall_steps": 0})["session"]
            got.append([c.step(sess, a) for a in ("company status", "market browse --limit 3", "sim resume", "task list")])
        assert got[0] == got[1]
        # Only the spinning client polled (reset and 4 steps), and each reply was there within its second.
        assert len(found) == 5 and all(found)
    finally:
        spinning.close()
        sleeping.close()


@pytest.mark.parametrize("transport", ["zeromq", "pipe"])
def test_a_spin_counts_against_the_timeout(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait that polls first (with a second's budget: the pipe's from its LocalServer, ZeroMQ's from the client) still
    times out when the request's timeout says, not after the budget."""
    if transport == "pipe" and os.name != "posix":
        pytest.skip("the pipe transport needs POSIX")
    pipe = transport == "pipe"
    with server_mod.LocalServer("pipe", spin_us=_spin.MAX_SPIN_US) if pipe else server_mod.LocalServer() as srv:
        c = Client(srv.endpoint, timeout=10) if pipe else Client(srv.endpoint, timeout=10, spin_us=_spin.MAX_SPIN_US)
        sess = c.reset(1, options={"stall_steps": 0})["session"]
        budgets: list[float] = []

        def recorded(ready: Any, budget: float) -> bool:
            budgets.append(budget)
            return _spin.spin(ready, budget)

        monkeypatch.setattr(_pipe if pipe else client_mod, "spin", recorded)  # the name each transport's wait calls
        os.kill(srv.pid, signal.SIGSTOP)
        try:
            t = time.monotonic()
            with pytest.raises(TimeoutError):
                c.step(sess, "company status", timeout=0.3)
            took = time.monotonic() - t
            # The second's budget is cut to the 0.3 s timeout, not added to it: each spin had at most what was left
            # of the timeout. Checked on the budgets themselves: the old bound on the wait's length (< 0.9 s, against
            # >= 1 s for a wait that spins its whole second) failed once on a loaded machine with no defect, a starved
            # process waking late. The wait still ends by the request's timeout, not the client's 10 s.
            assert budgets and max(budgets) <= 0.3, budgets
            assert 0.3 <= took < 5, took
        finally:
            os.kill(srv.pid, signal.SIGCONT)
        assert c.step(sess, "employee list")["observation"]["command"] == "employee list"
        c.close()


def test_spin_us_is_checked_and_belongs_to_the_pipes_server(endpoint: str) -> None:
    for bad in (-1, 2.5, True, _spin.MAX_SPIN_US + 1):
        with pytest.raises(ValueError, match="spin_us must be a whole number of microseconds"):
            Client(endpoint, spin_us=bad)  # type: ignore[arg-type]
    with server_mod.LocalServer("pipe") as srv, pytest.raises(ValueError, match="LocalServer"):
        Client(srv.endpoint, spin_us=10)


def test_a_liveness_check_set_on_a_client_made_without_one_is_asked(endpoint: str) -> None:
    """``Client.liveness`` (what ``Backend.serve_from`` sets): a client made without a check gets one; its next request
    asks it first and fails at once (ServerExitedError) when it says the server ended; set back to None, none is
    asked."""
    c = Client(endpoint)
    try:
        assert c.liveness is None
        c.hello()
        asked: list[str | None] = []
        state: dict[str, str | None] = {"gone": None}

        def check() -> str | None:
            asked.append(state["gone"])
            return state["gone"]

        c.liveness = check
        assert c.liveness is check
        c.hello()
        assert asked == [None]
        state["gone"] = "the test says the server exited"
        c.liveness = check  # set anew: its last "running" is forgotten, the next send asks it
        with pytest.raises(ServerExitedError, match="the test says the server exited"):
            c.hello()
        c.liveness = None
        asked.clear()
        c.hello()
        assert asked == []
    finally:
        c.close()


@pytest.mark.parametrize("what", [KeyboardInterrupt, TimeoutError])
def test_a_stopped_gather_leaves_the_results_received_in_received(what: type[BaseException]) -> None:
    """``gather(..., received=got)``: stopped (Ctrl-C, a timeout) after 2 of 4 replies came, ``got`` holds those 2
    results (new sessions here: the caller can take them as its own) and the 2 others are abandoned; not stopped, it is
    the list returned, after what it held."""
    with LocalServer("pipe") as srv, Client(srv.endpoint, timeout=30) as c:
        ids = c.send_all("reset", [{"seed": s} for s in range(4)])
        recv = c.recv
        seen: list[Any] = []

        def stopped(request_id: Any, timeout: Any = None) -> Any:
            if len(seen) == 2:
                c.abandon([request_id])  # as the real wait does when it is stopped
                raise what("stopped")
            seen.append(request_id)
            return recv(request_id, timeout)

        c.recv = stopped  # type: ignore[method-assign]
        got: list[Any] = []
        with pytest.raises(what):
            c.gather(ids, received=got)
        del c.recv
        assert len(got) == 2 and all(isinstance(r, dict) and type(r["session"]) is str for r in got)
        assert all(r not in c._pending for r in ids)  # the others abandoned
        for r in got:
            c.close(session=r["session"])
        more = [None]
        assert c.gather(c.send_all("hello", [{}]), received=more) is more and more[0] is None and len(more) == 2
