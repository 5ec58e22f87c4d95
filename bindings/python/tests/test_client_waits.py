"""``liveness`` is asked before a send only when its last "running" is older than ``_LIVENESS_RECHECK_S`` (not once
per request), and an exited server is still noticed: at the next send once liveness has said so, or while waiting."""

from __future__ import annotations

import time

import pytest
import zmq

from ycgym import Client
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
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)  # a server that never answers
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    state: dict[str, str | None] = {"gone": None}
    c = Client(f"tcp://127.0.0.1:{port}", timeout=30, liveness=lambda: state["gone"])
    try:
        c._check_alive("hello")  # "running" just now
        state["gone"] = "the test's server exited"
        t = time.monotonic()
        with pytest.raises(ServerExitedError, match="the test's server exited"):
            c.hello()
        assert time.monotonic() - t < 3
        # Now that liveness said gone, a send fails before sending.
        t = time.monotonic()
        with pytest.raises(ServerExitedError):
            c.hello()
        assert time.monotonic() - t < 0.1
        assert not c._pending
    finally:
        c.close()
        router.close(0)
