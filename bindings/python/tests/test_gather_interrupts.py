"""An interrupt (Ctrl-C) at every bytecode of a pipelined gather leaks no session and receives nothing twice.

Python raises a KeyboardInterrupt between any two bytecodes. Before: one that landed once ``recv`` had taken a reply and
returned, and before ``gather`` appended it to ``received``, lost it (its request was no longer pending, so abandoning
it did nothing): the session a ``reset`` made stayed open on the server (counting against ``--max-sessions``) and the
vector envs, which learn their new sessions from ``received``, could not close it.

Each test runs the code under ``sys.settrace`` with opcode events and raises KeyboardInterrupt at the k-th opcode event
inside the client's receive path (k = 1, 2, ... until a run completes), against a real server; after each run it asks
the server about every session the replies named (a socket tap records every reply read): each is either received
(it closes) or was closed by the client (``unknown_session``), and none is received twice.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from types import CodeType, FrameType
from typing import Any

import pytest

from ycgym import Client, LocalServer, ProtocolError, vector
from ycgym.vector import gather_resets

N = 3  # pipelined resets per run
MAX_RUNS = 400  # injection points per test at most (spread over the run's opcodes)


class _Tap:
    """The client's socket, recording every reply frame read (the sessions the server made)."""

    def __init__(self, sock: Any, seen: list[bytes]) -> None:
        self._sock = sock
        self._seen = seen

    def recv_multipart(self, *a: Any, **k: Any) -> list[bytes]:
        frames: list[bytes] = self._sock.recv_multipart(*a, **k)
        self._seen.extend(frames)
        return frames

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _codes(*fns: Any) -> set[CodeType]:
    return {f.__code__ for f in fns if f is not None}


# The receive path: gather and what it calls, and recv's result. _wait_for only from the moment the reply it waits for
# is in the client's hand-off slot (before, its request is pending: an interrupt abandons it, and the late reply's
# session is closed; between the socket's receive and that store, the reply can still be lost: gather's docstring).
_where: list[Any] = []  # where the last interrupt was injected (printed when a check fails)
RECEIVE = _codes(Client.gather, Client.recv, Client._recv_reply, getattr(Client, "_result", None))
WAIT = Client._wait_for.__code__


def _traced(run: Callable[[], Any], codes: set[CodeType], client: Client, at: int) -> tuple[int, bool]:
    """Run ``run()`` raising KeyboardInterrupt at the ``at``-th opcode event in a frame of ``codes`` (0: never).
    Returns (opcode events seen, whether it was interrupted)."""
    count = 0
    fired = False

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count, fired
        if event == "opcode" and not fired:
            if frame.f_code is WAIT:
                handed = getattr(client, "_handed", None)
                if handed is None or handed[0] != frame.f_locals.get("request_id"):
                    return local
            count += 1
            if count == at:
                fired = True
                _where[:] = [frame.f_code.co_name, frame.f_lineno, frame.f_lasti]
                raise KeyboardInterrupt
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        if fired or (frame.f_code not in codes and frame.f_code is not WAIT):
            return None
        frame.f_trace_opcodes = True
        return local

    sys.settrace(call)
    try:
        run()
    except KeyboardInterrupt:
        if not fired:
            raise
    finally:
        sys.settrace(None)
    return count, fired


def _sessions_named(frames: list[bytes]) -> list[str]:
    out = []
    for f in frames:
        try:
            r = json.loads(f)
        except ValueError:
            continue
        res = r.get("result") if isinstance(r, dict) and r.get("ok") else None
        if isinstance(res, dict) and isinstance(res.get("session"), str):
            out.append(res["session"])
    return out


def _check(client: Client, seen: list[bytes], kept: list[str]) -> None:
    """Every session the server made (a reply named) is in ``kept`` once (then closed here) or closed already."""
    client.hello()  # the abandoned requests' replies are read: their sessions closed (requests sent now)
    client.hello()  # ... and those closes have run (one connection's requests run in order)
    made = _sessions_named(seen)
    assert len(made) == len(set(made)), made
    assert len(kept) == len(set(kept)), f"received twice: {kept}"
    assert set(kept) <= set(made), (kept, made)
    for sid in made:
        if sid in kept:
            client.close(sid)  # received: still open, the caller's to close
        else:
            with pytest.raises(ProtocolError) as e:
                client.close(sid)
            assert e.value.code == "unknown_session", f"session {sid} leaked: neither received nor closed"


@pytest.fixture(params=["tcp", "pipe"])
def tapped(request: pytest.FixtureRequest) -> Iterator[tuple[Client, list[bytes]]]:
    with LocalServer("tcp://127.0.0.1:0" if request.param == "tcp" else "pipe") as srv, Client(srv.endpoint, timeout=30) as c:
        seen: list[bytes] = []
        c._sock = _Tap(c._sock, seen)
        yield c, seen


def _every_injection(client: Client, seen: list[bytes], once: Callable[[Client, list[int], list[Any]], Any], codes: set[CodeType], kept: Callable[[list[Any]], list[str]]) -> int:
    """Run ``once(client, ids, out)`` over ``N`` pipelined new-session resets, interrupted at each injection point in
    turn, checking after each run; returns the number of interrupted runs."""
    seeds = [{"seed": 1 + k, "preset": "fast_test"} for k in range(N)]

    def run(at: int) -> tuple[int, bool]:
        seen.clear()
        ids = client.send_all("reset", seeds)
        out: list[Any] = []
        count, fired = _traced(lambda: once(client, ids, out), codes, client, at)
        try:
            _check(client, seen, kept(out))
        except BaseException:
            print(f"interrupt injected at opcode event {at} (function, line, offset: {_where}); kept {kept(out)}, made {_sessions_named(seen)}")
            raise
        return count, fired

    total, fired = run(0)
    assert not fired and total > 0
    points = range(1, total + 1, max(1, total // MAX_RUNS))
    interrupted = 0
    for at in points:
        _, fired = run(at)
        interrupted += fired
    assert interrupted == len(points)  # every injection point was reached (the same path each run)
    print(f"{interrupted} runs interrupted, of {total} opcode events")
    return interrupted


def _received_sessions(out: list[Any]) -> list[str]:
    return [r["session"] for r in out if isinstance(r, dict)]


def test_gather_interrupted_anywhere_keeps_every_received_session(tapped: tuple[Client, list[bytes]]) -> None:
    client, seen = tapped

    def once(c: Client, ids: list[int], out: list[Any]) -> None:
        try:
            c.gather(ids, raise_errors=False, received=out)
        except BaseException:
            c.abandon(ids[len(out) :])  # stopped before gather's own try: the caller's to abandon (as request_all does)
            raise

    _every_injection(client, seen, once, RECEIVE, _received_sessions)


def test_gather_resets_interrupted_anywhere_adopts_every_received_session(tapped: tuple[Client, list[bytes]]) -> None:
    """The vector envs' gather (``gather_resets``): every session a reply named is adopted, whatever stopped it."""
    client, seen = tapped
    adopted: dict[int, str] = {}

    def once(c: Client, ids: list[int], out: list[Any]) -> None:
        adopted.clear()
        try:
            gather_resets(c, ids, lambda k, sid: adopted.__setitem__(k, sid))
        except BaseException:
            c.abandon(ids)  # as the envs' callers do (those received are not pending: left alone)
            raise
        finally:
            out.extend(adopted.values())

    codes = RECEIVE | _codes(gather_resets, getattr(vector, "_adopt_named", None))
    _every_injection(client, seen, once, codes, lambda out: list(out))


@pytest.mark.parametrize("transport", ["tcp", "pipe"])
def test_a_reply_is_not_kept_once_its_caller_has_it(transport: str) -> None:
    """The hand-off slot holds a reply only while its waiter has not handed it over: once ``step``, ``step_batch``,
    ``step_batch_arrays`` or ``request`` has returned (or raised), or ``gather`` has put it in place, the client keeps
    nothing of it (before: the last reply stayed in the slot until the next one came, a whole ``step_batch`` reply with
    its status blocks)."""
    import gc
    import tracemalloc

    with LocalServer("tcp://127.0.0.1:0" if transport == "tcp" else "pipe") as srv, Client(srv.endpoint, timeout=30) as c:
        sessions = [c.reset(seed, options={"stall_steps": 0})["session"] for seed in range(16)]
        entries = [(sid, "company status") for sid in sessions]
        c.step_batch(entries)  # warm
        c.hello()
        assert c._handed is None
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            c.step_batch(entries)  # its results dropped at once
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert kept < 16 * 1024, kept  # a 16-entry reply's objects are tens of KB
        assert c._handed is None
        step = c.step(sessions[0], "company status")
        assert c._handed is None and step["observation"]["status"]
        got = c.gather([c.send("hello") for _ in range(3)])
        assert c._handed is None and len(got) == 3
        ids = c.send_all("hello", [{}] * 3)
        with pytest.raises(ProtocolError):
            c.step("s-none", "company status")
        assert c._handed is None
        c.step_batch_arrays(entries)
        assert c._handed is None
        assert len(c.gather(ids)) == 3 and c._handed is None
