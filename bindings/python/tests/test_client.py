"""The protocol client: pipelining, error replies, timeouts, CURVE, both JSON codecs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from ycgym import Client, LocalServer, ProtocolError, YCBenchEnv, _json


@pytest.fixture()
def client(endpoint: str):  # type: ignore[no-untyped-def]
    c = Client(endpoint, timeout=10.0)
    yield c
    c.close()


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port nobody listens on, held so while the block runs: bound here without listen(), so a connection to
    it is refused and no other process can bind it meanwhile. A port found free and released at once could be bound by
    any process on the machine (another test run's server on a shared CI box) before the client connected to it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def test_hello(client: Client) -> None:
    h = client.hello()
    assert h["protocol"] == 1 and h["server"].startswith("ycgym/")
    assert {"default", "multi", "corrected"} <= set(h["presets"])
    assert h["limits"]["max_batch"] >= 64


def test_unknown_session_is_a_protocol_error(client: Client) -> None:
    with pytest.raises(ProtocolError) as e:
        client.step("s999999", "company status")
    assert e.value.code == "unknown_session" and "s999999" in e.value.message
    assert "[unknown_session]" in str(e.value)
    for op in ("snapshot", "close"):
        with pytest.raises(ProtocolError) as e:
            client.request(op, session="s999999")
        assert e.value.code == "unknown_session"


def test_sessions_belong_to_their_client(client: Client, endpoint: str) -> None:
    """Issue 12, F7: another client's request on a session is refused like an unknown session, nothing leaks."""
    sid = client.reset(7)["session"]
    assert sid.startswith("s") and len(sid) == 23  # "s" + 128 random bits in base64url: not guessable
    other = Client(endpoint, timeout=10.0)
    try:
        with pytest.raises(ProtocolError) as missing:
            other.step("s" + "A" * 22, "company status")
        requests: tuple[tuple[str, dict[str, Any]], ...] = (("step", {"action": "sim resume"}), ("snapshot", {}), ("close", {}))
        for op, fields in requests:
            with pytest.raises(ProtocolError) as e:
                other.request(op, session=sid, **fields)
            assert e.value.code == "unknown_session"
            assert e.value.message.replace(sid, "X") == missing.value.message.replace("s" + "A" * 22, "X")
        [item] = other.step_batch([(sid, "sim resume")], raise_errors=False)
        assert isinstance(item, ProtocolError) and item.code == "unknown_session"
        assert other.hello()["limits"]["max_sessions_per_client"] >= 1
    finally:
        other.close()
    # The owner's session is untouched: its first step is the first step of the episode.
    obs = client.step(sid, "company status")["observation"]
    assert obs["ok"] is True


def test_other_error_codes(client: Client) -> None:
    with pytest.raises(ProtocolError) as e:
        client.request("fly")
    assert e.value.code == "unknown_op"
    with pytest.raises(ProtocolError) as e:
        client.reset(1, "no-such-preset")
    assert e.value.code == "bad_preset"
    with pytest.raises(ProtocolError) as e:
        client.reset(1, options={"max_steps": 0})
    assert e.value.code == "invalid_request" and "/options/max_steps" in e.value.message
    with pytest.raises(ProtocolError) as e:
        client.restore({"format": "nope"})
    assert e.value.code == "bad_snapshot"


def test_session_lifecycle_and_batch_errors(client: Client) -> None:
    r = client.reset(7, "default", options={"max_steps": 2})
    s = r["session"]
    assert r["observation"]["text"] == "" and r["info"]["step"] == 0
    results = client.step_batch([(s, "company status"), ("s999999", "x"), {"session": s, "action": "client list"}], raise_errors=False)
    assert isinstance(results[1], ProtocolError) and results[1].code == "unknown_session" and results[1].index == 1
    assert not isinstance(results[0], ProtocolError) and not isinstance(results[2], ProtocolError)
    assert results[0]["info"]["step"] == 1 and results[2]["info"]["step"] == 2 and results[2]["truncated"] is True
    with pytest.raises(ProtocolError) as e:
        client.step_batch([(s, "company status")])
    assert e.value.code == "episode_over" and e.value.index == 0
    assert client.close(s) == {"closed": True}
    with pytest.raises(ProtocolError):
        client.close(s)


def test_step_batch_raises_its_first_failed_entry(client: Client) -> None:
    """With ``raise_errors`` (the default) a batch raises the error of its first failed entry (its index in the whole
    batch), whatever comes before and after it; a batch of results alone returns them."""
    sessions = [client.reset(seed)["session"] for seed in range(3)]
    try:
        ok = [(s, "company status") for s in sessions]
        got = client.step_batch(ok)
        assert len(got) == 3 and all(type(r) is dict and r["info"]["step"] == 1 for r in got)
        for bad in range(4):
            steps: list[tuple[str, str]] = [*ok]
            steps.insert(bad, ("s999999", "company status"))
            steps.append(("s999998", "company status"))  # a later failure: not the one raised
            with pytest.raises(ProtocolError) as e:
                client.step_batch(steps)
            assert e.value.code == "unknown_session" and e.value.index == bad
    finally:
        for s in sessions:
            client.close(s)


def test_pipelining_replies_are_matched_by_id(client: Client) -> None:
    sessions = [client.reset(seed)["session"] for seed in range(4)]
    ids = [client.send("step", session=s, action="market browse --limit 1") for s in sessions]
    ids.append(client.send("hello"))
    # Collect in reverse order: earlier replies are stashed until asked for.
    got = {rid: client.recv(rid) for rid in reversed(ids)}
    assert got[ids[-1]]["protocol"] == 1
    texts = [got[i]["observation"]["text"] for i in ids[:-1]]
    assert len(set(texts)) == 4  # four different worlds
    bad = client.send("step", session="s999999", action="x")
    good = client.send("hello")
    res = client.gather([bad, good], raise_errors=False)
    assert isinstance(res[0], ProtocolError) and res[1]["protocol"] == 1
    for s in sessions:
        client.close(s)


def test_timeout_raises_timeout_error() -> None:
    with closed_port() as port:
        _timeout_raises_timeout_error(port)


def _timeout_raises_timeout_error(port: int) -> None:
    c = Client(f"tcp://127.0.0.1:{port}", timeout=0.2)  # nobody listens there
    try:
        t = time.monotonic()
        with pytest.raises(TimeoutError, match="no reply to 'hello'"):
            c.hello()
        assert time.monotonic() - t < 2.0
        with pytest.raises(TimeoutError):
            c.step("s1", "x", timeout=0.05)
    finally:
        c.close()
        c.close()
    with pytest.raises(RuntimeError, match="closed"):
        c.hello()


def test_a_send_that_zeromq_cannot_queue_times_out_instead_of_blocking() -> None:
    # Nobody listens: ZeroMQ queues requests for the connection it keeps trying, up to its high-water mark (1000
    # messages); the next send had no room and blocked forever, whatever the client's timeout (CI hung once this
    # way in test_curve_encryption, where a failed CURVE handshake left the socket nothing to queue to). In a child
    # process, so that a send that blocks fails the test instead of hanging it.
    # The timeout given to the client, and one set on it later (`Client.timeout` is assignable).
    with closed_port() as port:
        _a_send_that_zeromq_cannot_queue_times_out(port)


def _a_send_that_zeromq_cannot_queue_times_out(port: int) -> None:
    script = f"""
from ycgym import Client
for later in (False, True):
    c = Client("tcp://127.0.0.1:{port}", timeout=None if later else 0.3)
    if later:
        c.timeout = 0.3
    try:
        for i in range(1500):
            c.send("hello")
    except TimeoutError as e:
        print("TimeoutError", i, e)
    finally:
        c.close()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    for line in lines:
        assert line.startswith("TimeoutError 1000 "), line
        assert "could not send 'hello'" in line and "within 0.3 s" in line


def test_late_reply_after_timeout_is_discarded(client: Client) -> None:
    r = client.reset(1)
    # A timeout of 0 gives up before the reply can arrive; the reply must not confuse later requests.
    with pytest.raises(TimeoutError):
        client.step(r["session"], "employee list", timeout=0)
    time.sleep(0.2)
    out = client.step(r["session"], "company status")
    assert out["observation"]["command"] == "company status" and out["info"]["step"] == 2
    client.close(r["session"])


def test_json_codecs_agree() -> None:
    msg = {"v": 1, "id": 3, "op": "step", "session": "s1", "action": 'task accept --task-id é☃ "q"'}
    data = _json.dumps(msg)
    assert isinstance(data, bytes)
    assert _json.loads(data) == msg
    assert _json._std_loads(_json._std_dumps(msg)) == msg
    assert _json._std_loads(data) == msg and _json.loads(_json._std_dumps(msg)) == msg


def test_json_codecs_encode_alike_what_orjson_refuses(client: Client) -> None:
    """What orjson cannot encode (an integer beyond 64 bits, a non-string key) is encoded as the standard library does,
    so a request behaves the same with either codec: a seed of 2**70 gets the server's schema error (with orjson it
    was a TypeError, "Integer exceeds 64-bit range"), in the env too; what neither can encode is still an error."""
    for value in ({"seed": 2**70}, {"seed": -(2**65)}, {1: "a"}):
        assert _json.dumps(value) == _json._std_dumps(value)
    with pytest.raises(ProtocolError, match=r"/seed: must be <= 9007199254740991"):
        client.reset(2**70)
    env = YCBenchEnv(endpoint=client.endpoint)
    try:
        with pytest.raises(ProtocolError, match=r"/seed: must be <= 9007199254740991"):
            env.reset(seed=2**70)
        assert env.reset(seed=1)[1]["step"] == 0
    finally:
        env.close()
    with pytest.raises(TypeError):
        _json.dumps({"x": object()})


@pytest.mark.skipif(not zmq.has("curve"), reason="libzmq without CURVE")
def test_curve_encryption() -> None:
    pub, sec = zmq.curve_keypair()
    try:
        server = LocalServer(args=["--curve-secret-key", sec.decode(), "--curve-public-key", pub.decode()], startup_timeout=20)
    except Exception as e:  # noqa: BLE001  # pragma: no cover - depends on the server build
        pytest.skip(f"server without CURVE flags: {e}")
    try:
        with Client(server.endpoint, server_public_key=pub.decode(), timeout=10) as c:
            assert c.hello()["protocol"] == 1
        cpub, csec = zmq.curve_keypair()
        with Client(server.endpoint, server_public_key=pub, public_key=cpub, secret_key=csec, timeout=10) as c:
            assert c.hello()["protocol"] == 1
        with Client(server.endpoint, timeout=0.5) as plain, pytest.raises(TimeoutError):
            plain.hello()  # no keys: the handshake never completes
        with pytest.raises(ValueError):
            Client(server.endpoint, server_public_key=pub, public_key=cpub)
    finally:
        server.close()


def _sent_payloads(c: Client) -> list[bytes]:
    """Replace the client's socket write with a recorder of the request bytes (nothing reaches a server)."""
    sent: list[bytes] = []

    def record(rid: int, op: str, payload: bytes) -> None:
        sent.append(payload)

    c._send_payload = record  # type: ignore[method-assign]
    return sent


@settings(max_examples=300, deadline=None)
@given(session=st.text(), action=st.text(), skip=st.integers(0, 10**6), std=st.booleans())
def test_step_request_bytes_equal_the_generic_send(session: str, action: str, skip: int, std: bool) -> None:
    # Client.step writes its request from a fixed prefix and the texts' JSON (_send_step); the generic path serialises
    # the request dict. Same bytes and the same ids, with orjson and with the standard library codec.
    saved = (_json.dumps, _json.loads)
    if std:
        _json.dumps, _json.loads = _json._std_dumps, _json._std_loads
    with closed_port() as port:  # nothing is sent: _sent_payloads records the payloads instead
        c = Client(f"tcp://127.0.0.1:{port}", timeout=1.0)
    try:
        for _ in range(skip % 7):
            next(c._ids)
        sent = _sent_payloads(c)
        a = c._send_step(session, action)
        b = c.send("step", session=session, action=action)
        assert b == a + 1 and sent[0] == sent[1].replace(b'"id":%d,' % b, b'"id":%d,' % a, 1)
        assert _json.loads(sent[0]) == {"v": 1, "id": a, "op": "step", "session": session, "action": action}
        # Not plain texts (a str subclass, None): the generic path itself.
        class S(str):
            pass

        c._send_step(S(session), action)
        c.send("step", session=S(session), action=action)
        assert sent[2] == sent[3].replace(b'"id":%d,' % (a + 3), b'"id":%d,' % (a + 2), 1)
    finally:
        _json.dumps, _json.loads = saved
        c.close()
