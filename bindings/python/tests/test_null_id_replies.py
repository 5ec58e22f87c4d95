"""A reply whose ``id`` names no request of the client (``null``: the server could not read the request's id, e.g.
``message_too_large``, ``bad_json``, ``bad_frames``; or an id the client never sends) is that request's reply only when
exactly one request of the connection is waiting for a reply (pending, or abandoned with its reply still to come).
With more of them it may answer any: every pending request fails with ``bad_reply`` naming the ambiguity, rather than
one request being handed another's answer (docs/protocol.md, Replies)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from helpers import fake_server
from ycgym import Client, ProtocolError


@pytest.fixture()
def fake() -> Iterator[tuple[Client, zmq.Socket[bytes]]]:
    """A client and a fake ZeroMQ server (a ROUTER the test answers by hand)."""
    with fake_server() as f:
        yield f


def _requests(router: zmq.Socket[bytes], n: int) -> bytes:
    got = [router.recv_multipart() for _ in range(n)]
    return got[0][0]


def _ok(rid: Any, result: Any) -> bytes:
    return json.dumps({"v": 1, "id": rid, "ok": True, "result": result}, separators=(",", ":")).encode()


def _err(rid: Any, code: str, message: str) -> bytes:
    return json.dumps({"v": 1, "id": rid, "ok": False, "error": {"code": code, "message": message}}, separators=(",", ":")).encode()


def _check_ambiguous(e: Any, rid: int, others: list[int]) -> None:
    assert isinstance(e, ProtocolError) and e.code == "bad_reply" and e.request_id == rid, e
    assert "names no request" in e.message and "message_too_large" in e.message and "too big" in e.message, e.message
    for other in others:  # which other requests fail with it
        assert str(other) in e.message, (other, e.message)


def test_a_null_id_reply_with_one_request_pending_is_that_requests(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    c, router = fake
    rid = c.send("hello")
    ident = _requests(router, 1)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    with pytest.raises(ProtocolError) as e:
        c.recv(rid)
    assert e.value.code == "message_too_large" and e.value.request_id == rid, e.value
    assert not c._pending and not c._stash and not c._abandoned


def test_a_null_id_reply_with_two_requests_pending_fails_both(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """It used to be the error of whichever request was waited for (here the first, whose own good reply then stayed
    in the client for nobody), and the request it answered waited for a reply that had come."""
    c, router = fake
    first, second = c.send("hello"), c.send("hello")
    ident = _requests(router, 2)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    router.send_multipart([ident, _ok(first, {"n": 1})])  # the other's own reply, later: dropped
    got = c.gather([first, second], raise_errors=False)
    _check_ambiguous(got[0], first, [second])
    _check_ambiguous(got[1], second, [first])
    nxt = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _ok(nxt, {"n": 2})])
    assert c.recv(nxt) == {"n": 2}
    assert not c._pending and not c._stash


def test_a_null_id_reply_while_the_other_pending_request_is_waited_for(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """The second request is waited for first: the null-id reply may be the first's (it was handed to the second)."""
    c, router = fake
    first, second = c.send("hello"), c.send("hello")
    ident = _requests(router, 2)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    with pytest.raises(ProtocolError) as e:
        c.recv(second)
    _check_ambiguous(e.value, second, [first])
    with pytest.raises(ProtocolError) as e:
        c.recv(first, timeout=0)  # failed with it, not left waiting
    _check_ambiguous(e.value, first, [second])


def test_a_null_id_reply_with_an_abandoned_request_outstanding_is_ambiguous(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """An abandoned request whose reply has not come may be the one it answers: the waited request is not handed it."""
    c, router = fake
    gone, kept = c.send("hello"), c.send("hello")
    c.abandon([gone])
    ident = _requests(router, 2)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    with pytest.raises(ProtocolError) as e:
        c.recv(kept)
    _check_ambiguous(e.value, kept, [gone])
    assert not c._pending and not c._stash


def test_a_null_id_reply_with_two_threads_waiting_fails_both(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """Two threads, each waiting for its own request: whichever reads the null-id reply, neither is handed it as its
    own answer."""
    import threading

    c, router = fake
    ids = [c.send("hello"), c.send("hello")]
    ident = _requests(router, 2)
    got: dict[int, Any] = {}

    def wait(rid: int) -> None:
        try:
            got[rid] = c.recv(rid)
        except ProtocolError as e:
            got[rid] = e

    threads = [threading.Thread(target=wait, args=(rid,)) for rid in ids]
    for t in threads:
        t.start()
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    for t in threads:
        t.join(10)
    _check_ambiguous(got[ids[0]], ids[0], [ids[1]])
    _check_ambiguous(got[ids[1]], ids[1], [ids[0]])


@pytest.mark.parametrize("rid", [[1], {"a": 1}, "1", 1.0, True])
def test_a_reply_whose_id_is_no_id_of_this_client_names_no_request(fake: tuple[Client, zmq.Socket[bytes]], rid: Any) -> None:
    """An id of a type the client never sends (a list, an object: unhashable, it raised a bare TypeError from the wait)
    names no request: the one pending request's reply, as a null id."""
    c, router = fake
    sent = c.send("hello")
    ident = _requests(router, 1)
    router.send_multipart([ident, _err(rid, "message_too_large", "too big")])
    with pytest.raises(ProtocolError) as e:
        c.recv(sent)
    assert e.value.code == "message_too_large" and e.value.request_id == sent, e.value
    assert not c._pending and not c._stash


def test_a_real_servers_null_id_reply_to_a_pipelined_request(endpoint: str) -> None:
    """Against a real server: a request above its size limit (this client does not check it) is answered
    ``message_too_large`` with a null id, since the server reads no id from it. Alone, it is that request's error;
    pipelined with another request, waiting for the other used to raise message_too_large there (and the large
    request then waited for a reply that had come)."""
    with Client(endpoint, timeout=30, max_message_bytes=None) as c:
        limit = c.hello()["limits"]["max_message_bytes"]
        pad = "x" * (limit + 1)
        with pytest.raises(ProtocolError) as alone:
            c.request("hello", pad=pad)
        assert alone.value.code == "message_too_large", alone.value
        big, small = c.send("hello", pad=pad), c.send("hello")
        with pytest.raises(ProtocolError) as e:
            c.recv(small)
        assert e.value.code == "bad_reply" and "names no request" in e.value.message and "message_too_large" in e.value.message, e.value
        with pytest.raises(ProtocolError) as e:
            c.recv(big, timeout=0)
        assert e.value.code == "bad_reply", e.value
        assert c.hello()["protocol"] == 1  # the connection goes on
        assert not c._pending and not c._stash


def test_a_reply_to_no_request_awaiting_it_is_dropped_not_kept(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """A reply with an id the client never sent, or to a request already answered, was kept in the client's stash for
    ever (nobody would take it): a server repeating or inventing replies grew the client without bound."""
    c, router = fake
    rid = c.send("hello")
    ident = _requests(router, 1)
    router.send_multipart([ident, _ok(rid + 1000, {"never": "sent"})])
    router.send_multipart([ident, _ok(rid, {"server": "x"})])
    router.send_multipart([ident, _ok(rid, {"again": True})])  # a second reply to the answered request
    assert c.recv(rid) == {"server": "x"}
    rid2 = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _ok(rid2, {"second": True})])
    assert c.recv(rid2) == {"second": True}  # the repeated reply above was read (and dropped) on the way
    assert c._stash == {} and not c._pending, c._stash
