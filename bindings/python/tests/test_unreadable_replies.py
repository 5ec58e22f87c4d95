"""A reply the client cannot read (``bad_reply``) is the error of the request it answers, read from the reply's head
(docs/protocol.md, Replies), not of whichever request the client waits for; a reply whose head names no request fails
every request pending on the connection. A creating request's unreadable reply whose head names the session it made
gets that session closed (nobody else can name it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fake_server
from ycgym import Client, ProtocolError
from ycgym.client import _REPLY_HEAD


@pytest.fixture()
def fake() -> Iterator[tuple[Client, zmq.Socket[bytes]]]:
    """A client and a fake ZeroMQ server (a ROUTER the test answers by hand)."""
    with fake_server() as f:
        yield f


def _requests(router: zmq.Socket[bytes], n: int) -> tuple[bytes, list[dict[str, Any]]]:
    got = [router.recv_multipart() for _ in range(n)]
    return got[0][0], [json.loads(frames[-1]) for frames in got]


def _ok(rid: int, result: Any) -> bytes:
    return json.dumps({"v": 1, "id": rid, "ok": True, "result": result}, separators=(",", ":")).encode()


def test_an_unreadable_reply_is_the_error_of_the_request_its_head_names(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """Two pipelined requests; the reply to the second comes first and cannot be read (its body is cut off). Waiting for
    the first used to raise that bad_reply against the first (whose good reply then stayed unread) and leave the second
    waiting for a reply that had come."""
    c, router = fake
    first, second = c.send("hello"), c.send("hello")
    ident, _ = _requests(router, 2)
    router.send_multipart([ident, _ok(second, {"x": 1})[:-5]])
    router.send_multipart([ident, _ok(first, {"n": 1})])
    assert c.recv(first) == {"n": 1}
    with pytest.raises(ProtocolError) as e:
        c.recv(second)
    assert e.value.code == "bad_reply" and e.value.request_id == second, e.value
    assert not c._pending and not c._stash and not c._abandoned


def test_an_unreadable_reply_that_names_no_request_fails_every_pending_request(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """A reply whose head cannot be read may answer any pending request: each of them fails with bad_reply saying so (it
    used to fail only the one waited for, and the others went on waiting, one of them for a reply that had come). Their
    own replies, if they come later, are dropped, and the client goes on."""
    c, router = fake
    ids = [c.send("hello") for _ in range(3)]
    ident, _ = _requests(router, 3)
    router.send_multipart([ident, b"\xff not json"])
    router.send_multipart([ident, _ok(ids[1], {"n": 1})])  # a late reply of one of them: dropped
    got = c.gather(ids, raise_errors=False)
    assert all(isinstance(g, ProtocolError) and g.code == "bad_reply" for g in got), got
    assert "may answer this request" in got[0].message and "2 other requests pending" in got[0].message, got[0]
    assert [g.request_id for g in got] == ids
    nxt = c.send("hello")
    ident, _ = _requests(router, 1)
    router.send_multipart([ident, _ok(ids[2], {"late": True})])  # dropped too
    router.send_multipart([ident, _ok(nxt, {"n": 2})])
    assert c.recv(nxt) == {"n": 2}
    assert not c._pending and not c._stash


def test_an_unreadable_reply_to_an_abandoned_request_is_dropped(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    c, router = fake
    gone, kept = c.send("hello"), c.send("hello")
    c.abandon([gone])
    ident, _ = _requests(router, 2)
    router.send_multipart([ident, _ok(gone, {"x": 1})[:-3]])
    router.send_multipart([ident, _ok(kept, {"n": 1})])
    assert c.recv(kept) == {"n": 1}
    assert not c._abandoned and not c._pending


def test_an_unreadable_reset_reply_of_a_pipelined_request_closes_the_session_its_head_names(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """A reset naming no session whose reply cannot be read, while the client waits for another request: the reset fails
    with bad_reply and the session its head names is closed (a close request goes out), since its caller never learns
    it."""
    c, router = fake
    other, reset = c.send("hello"), c.send("reset", seed=1)
    ident, _ = _requests(router, 2)
    body = _ok(reset, {"session": "sAbc", "observation": {"text": "x"}})
    router.send_multipart([ident, body[: body.index(b'"observation"') + 20]])
    router.send_multipart([ident, _ok(other, {"n": 1})])
    assert c.recv(other) == {"n": 1}
    with pytest.raises(ProtocolError) as e:
        c.recv(reset)
    assert e.value.code == "bad_reply" and "sAbc" in e.value.message
    _, (close,) = _requests(router, 1)
    assert close["op"] == "close" and close["session"] == "sAbc", close


@settings(max_examples=200, deadline=None)
@given(
    rid=st.integers(0, 2**53 - 1),
    ok=st.booleans(),
    session=st.one_of(st.none(), st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=64)),
    cut=st.integers(0, 400),
)
def test_the_reply_head_reads_what_the_server_writes(rid: int, ok: bool, session: str | None, cut: int) -> None:
    """The head of any reply as the server encodes it (compact JSON, ``v``, ``id``, ``ok`` first, a creating op's result
    naming its session first) gives back its id and session, however much of the rest is lost (a head cut short reads
    as no head, never as another id)."""
    result: dict[str, Any] = {} if session is None else {"session": session}
    result["observation"] = {"text": "\u00e9" * 5}
    reply = {"v": 1, "id": rid, "ok": ok, **({"result": result} if ok else {"error": {"code": "internal", "message": "m"}})}
    # The server's encoding: JSON.stringify (non-ASCII text as UTF-8, not escaped).
    frame = json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    e = Client._unreadable(frame[: len(frame) - 1], "cut")
    assert e.request_id == rid
    assert e.session == (session if ok else None)
    part = Client._unreadable(frame[:cut], "cut")
    if part.request_id is not None:
        assert part.request_id == rid
        assert _REPLY_HEAD.match(frame[:cut]) is not None


@pytest.mark.parametrize("op", ["reset", "turn_reset"])
def test_a_real_servers_unreadable_reset_reply_gets_its_session_closed(op: str, endpoint: str) -> None:
    """Against a real server: the reply to a reset (a turn_reset) naming no session is damaged past its head (a byte
    that is no UTF-8). The reset fails with bad_reply, and the session the server made is closed: the client used to
    keep nothing of it, and the session held a place until the server's idle timeout."""
    c = Client(endpoint, timeout=30)
    made: list[str] = []
    decode = c._decode

    def damaged(frames: list[bytes]) -> dict[str, Any]:
        reply = json.loads(frames[-1])
        if isinstance(reply.get("result"), dict) and "session" in reply["result"] and not made:
            made.append(reply["result"]["session"])
            frames = [*frames[:-1], frames[-1][:200] + b"\xff" + frames[-1][200:]]
        return decode(frames)

    c._decode = damaged  # type: ignore[method-assign]
    try:
        with pytest.raises(ProtocolError) as e:
            c.request(op, seed=3)
        del c._decode
        assert e.value.code == "bad_reply" and made, e.value
        with pytest.raises(ProtocolError) as gone:
            c.close(session=made[0])
        assert gone.value.code == "unknown_session", gone.value
        assert made[0] in e.value.message, e.value
        assert not c._pending and not c._orphaned
    finally:
        c.close()
