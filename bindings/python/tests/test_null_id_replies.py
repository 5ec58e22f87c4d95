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


def test_after_an_ambiguous_null_id_reply_a_later_reply_settles_the_connection(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """Two requests fail on an ambiguous null-id reply: it answered one of them, whose own reply never comes. Its id
    stayed abandoned for the connection's life, so every later null-id reply was ambiguous too (and the set grew by
    one such id per event). The server answers a connection's requests in order: once the reply to a request sent
    after it has come, an abandoned request's reply has come too (or never will), and its id is forgotten."""
    c, router = fake
    first, second = c.send("hello"), c.send("hello")
    ident = _requests(router, 2)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])  # the first's, it turns out
    got = c.gather([first, second], raise_errors=False)
    _check_ambiguous(got[0], first, [second])
    router.send_multipart([ident, _ok(second, {"n": 1})])  # the second's own reply, later: dropped
    nxt = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _ok(nxt, {"n": 2})])
    assert c.recv(nxt) == {"n": 2}
    assert not c._abandoned, c._abandoned  # the reply to a later request: the first's came (the null-id one)
    last = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])
    with pytest.raises(ProtocolError) as e:
        c.recv(last)
    assert e.value.code == "message_too_large" and e.value.request_id == last, e.value  # its own, not ambiguous


def test_an_abandoned_request_stays_ambiguous_until_a_later_reply_comes(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """The rule forgets nothing early: a reply to a request sent before the abandoned one proves nothing about it."""
    c, router = fake
    early, gone = c.send("hello"), c.send("hello")
    c.abandon([gone])
    ident = _requests(router, 2)
    router.send_multipart([ident, _ok(early, {"n": 1})])
    assert c.recv(early) == {"n": 1}
    assert gone in c._abandoned
    nxt = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _err(None, "message_too_large", "too big")])  # may be the abandoned one's
    with pytest.raises(ProtocolError) as e:
        c.recv(nxt)
    _check_ambiguous(e.value, nxt, [gone])


def test_the_ids_of_requests_given_up_on_are_bounded(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """A server that never answers: each request the client gives up on (a timeout) kept its id for the connection's
    life, without bound. Now the oldest are forgotten past ``GAVE_UP_KEPT`` (the TypeScript client's bound)."""
    import ycgym.client

    kept = getattr(ycgym.client, "GAVE_UP_KEPT", 4096)  # src/client/client.ts's
    c, router = fake
    n = kept + 50
    for i in range(n):
        with pytest.raises(TimeoutError):
            c.recv(c.send("hello"), timeout=0)
        if i % 500 == 499:
            _requests(router, 500)  # read, so ZeroMQ's queues keep room
    assert len(c._abandoned) == kept == 4096, len(c._abandoned)
    assert min(c._abandoned) == n - kept + 1  # the oldest were forgotten (ids start at 1)


def test_requests_sent_out_of_the_order_of_their_ids_forget_nothing_early(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """Ids are drawn before the client's lock: two threads may send them out of order. A reply to a higher id then
    does not prove that a lower one, sent after it, was answered: the abandoned request stays outstanding."""
    c, router = fake
    low, high = next(c._ids), next(c._ids)
    c._send_payload(high, "hello", c._request_bytes(high, "hello", {}))
    c._send_payload(low, "hello", c._request_bytes(low, "hello", {}))
    c.abandon([low])
    ident = _requests(router, 2)
    router.send_multipart([ident, _ok(high, {"n": 1})])
    assert c.recv(high) == {"n": 1}
    assert low in c._abandoned  # its reply is still to come
    router.send_multipart([ident, _ok(low, {"n": 2})])  # it comes: dropped
    nxt = c.send("hello")
    _requests(router, 1)
    router.send_multipart([ident, _ok(nxt, {"n": 3})])
    assert c.recv(nxt) == {"n": 3}
    assert not c._abandoned


class _CountedScans(dict):  # type: ignore[type-arg]
    """A dict that counts the walks over its entries (``items``, ``keys``, ``values``, iteration)."""

    scans = 0

    def items(self) -> Any:
        self.scans += 1
        return super().items()

    def keys(self) -> Any:
        self.scans += 1
        return super().keys()

    def values(self) -> Any:
        self.scans += 1
        return super().values()

    def __iter__(self) -> Any:
        self.scans += 1
        return super().__iter__()


def test_replies_do_not_walk_the_requests_given_up_on(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """While requests given up on were kept (up to ``GAVE_UP_KEPT``, 4,096), every reply walked all of them to find
    those a later request's reply proves answered: 4,096 entries for each reply. Now the marks are kept ordered, so a
    reply looks at the lowest mark only (and at those it forgets); the rule is the same (checked after)."""
    c, router = fake
    low = [next(c._ids) for _ in range(200)]  # drawn first, sent last: the client's sends go out of order
    gone = [c.send("hello") for _ in range(4096)]
    c.abandon(gone)
    for rid in low:
        c._send_payload(rid, "hello", c._request_bytes(rid, "hello", {}))
    ident = _requests(router, 4096 + 200)
    assert not c._sent_in_order and len(c._abandoned) == 4096
    counted = _CountedScans(c._abandoned)
    c._abandoned = counted
    for rid in low:  # each sent before the abandoned ones were answered? unknown: it proves nothing about them
        router.send_multipart([ident, _ok(rid, {"n": rid})])
    for rid in low:
        assert c.recv(rid) == {"n": rid}
    assert counted.scans == 0, counted.scans
    assert len(c._abandoned) == 4096
    nxt = c.send("hello")  # sent after all of them: its reply proves theirs came (or never will)
    _requests(router, 1)
    router.send_multipart([ident, _ok(nxt, {"n": 0})])
    assert c.recv(nxt) == {"n": 0}
    assert not c._abandoned


def test_the_forgetting_rule_of_requests_given_up_on_is_kept(fake: tuple[Client, zmq.Socket[bytes]]) -> None:
    """The rule, against a plain model of it: an id given up on is kept with its mark, in the order given up (past
    ``GAVE_UP_KEPT`` the oldest is forgotten); a reply to id ``r`` forgets every kept id whose mark is below ``r``; a
    reply to a kept id forgets it. Seeded, in and out of the order of ids, across the cap."""
    import random

    from ycgym._protocol import GAVE_UP_KEPT

    c, _ = fake
    kept = GAVE_UP_KEPT
    rng = random.Random(1234)
    model: dict[int, int] = {}
    next_id = 1
    peak = capped = 0
    for step in range(20_000):
        op = rng.random()
        if step < 6000:  # first past the cap: given up on only
            op = 0.0
        if op < 0.6 or not model:
            rid = next_id if rng.random() < 0.9 else max(1, next_id - rng.randrange(1, 50))
            next_id += 1
            if rng.random() < 0.05:
                c._sent_in_order = not c._sent_in_order
            c._max_sent = max(c._max_sent, rid)
            mark = rid if c._sent_in_order else c._max_sent
            with c._lock:
                c._give_up(rid)
            model[rid] = mark
            if len(model) > kept:
                del model[next(iter(model))]
                capped += 1
            peak = max(peak, len(model))
        elif op < 0.8:
            r = rng.choice(list(model))
            with c._lock:
                del c._abandoned[r]
                c._answered(r)
            del model[r]
            for k in [k for k, m in model.items() if m < r]:
                del model[k]
        else:
            r = rng.randrange(1, next_id + 1) if rng.random() < 0.7 else rng.randrange(1, 40)
            with c._lock:
                c._answered(r)
            for k in [k for k, m in model.items() if m < r]:
                del model[k]
        if step % 97 == 0 or step > 19_900:
            assert list(c._abandoned.items()) == list(model.items()), step
    assert list(c._abandoned.items()) == list(model.items())
    assert peak == kept and capped > 100, (peak, capped)
