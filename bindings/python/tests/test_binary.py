"""Binary step_batch replies (``encoding: "binary"``) against the real server: equal to JSON, decoded without copies,
malformed replies and requests refused with structured errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import given
from hypothesis import strategies as st

from helpers import fake_server
from ycgym import Client, ProtocolError, YCBenchDiscreteVectorEnv
from ycgym._binary import BatchArrays, decode_batch_arrays
from ycgym.policies import random_masked

DISCRETE = {"actions": "discrete", "text": False, "max_steps": 25, "market_slots": 5, "task_slots": 2}
COLUMNS = ("reward", "terminated", "truncated", "ok", "exit_code", "reward_cents", "step", "funds_cents")


@pytest.fixture()
def client(endpoint: str) -> Any:
    c = Client(endpoint)
    yield c
    c.close()


def _sessions(c: Client, n: int, seed0: int, options: dict[str, Any]) -> list[str]:
    return [c.reset(seed0 + i, options=options)["session"] for i in range(n)]


def _same(json: list[Any], got: BatchArrays) -> None:
    """Every field of the JSON results equals its row of the binary reply (the status block aside)."""
    assert got.n == len(json)
    errors = {e.index: e for e in got.errors}
    reasons = got.reasons()
    for i, r in enumerate(json):
        if isinstance(r, ProtocolError):
            assert (errors[i].code, errors[i].message) == (r.code, r.message)
            assert all(getattr(got, c)[i] == 0 for c in COLUMNS)
            continue
        assert i not in errors
        o, info = r["observation"], r["info"]
        assert got.reward[i] == r["reward"] and type(got.reward[i].item()) is float
        assert bool(got.terminated[i]) is r["terminated"] and bool(got.truncated[i]) is r["truncated"]
        assert bool(got.ok[i]) is o["ok"] and got.exit_code[i] == o["exit_code"]
        for k in ("reward_cents", "step", "funds_cents"):
            assert got.__getattribute__(k)[i] == info[k]
        assert reasons[i] == info["terminal_reason"]
        assert got.text[i] == o["text"] and got.command[i] == o["command"] and got.action_text[i] == info.get("action_text")
        if "discrete" in o:
            assert got.obs is not None and got.mask is not None
            assert np.array_equal(got.obs[i], np.asarray(o["discrete"]["obs"], dtype=np.float32))
            assert np.array_equal(got.mask[i], np.asarray(o["discrete"]["mask"], dtype=np.bool_))
        else:
            assert got.obs is None


def test_discrete_binary_equals_json_for_the_same_seeds_and_actions(client: Client) -> None:
    a = _sessions(client, 5, 31, DISCRETE)
    b = _sessions(client, 5, 31, DISCRETE)
    rng = np.random.default_rng(1)
    masks: list[np.ndarray | None] = [None] * 5
    ended = 0
    for rnd in range(60):
        acts = [0 if m is None else random_masked(m, rng) for m in masks]
        if rnd % 9 == 4:
            acts[1] = 10_000  # out of range: refused, fails alone
        json = client.step_batch([(s, x) for s, x in zip(a, acts)], raise_errors=False)
        got = client.step_batch_arrays([(s, x) for s, x in zip(b, acts)], raise_errors=False)
        _same(json, got)
        assert got.obs is not None and got.obs.dtype == np.float32 and got.mask is not None and got.mask.dtype == np.bool_
        assert not got.obs.flags.writeable and not got.obs.flags.owndata  # a view of the received frame
        for i, r in enumerate(json):
            if isinstance(r, ProtocolError):
                continue
            masks[i] = np.asarray(r["observation"]["discrete"]["mask"], dtype=np.bool_)
            if r["terminated"] or r["truncated"]:
                ended += 1
                client.reset(500 + rnd, session=a[i], options=DISCRETE)
                masks[i] = np.asarray(client.reset(500 + rnd, session=b[i], options=DISCRETE)["observation"]["discrete"]["mask"], dtype=np.bool_)
    assert ended > 0


def test_text_binary_equals_json_and_failures_stay_alone(client: Client) -> None:
    a = _sessions(client, 2, 3, {"stall_steps": 0})
    b = _sessions(client, 2, 3, {"stall_steps": 0})
    for cmd in ("company status", "market browse --limit 3", "sim resume", "bogus verb", "sim resume"):
        json = client.step_batch([(s, cmd) for s in a] + [("nope", cmd)], raise_errors=False)
        got = client.step_batch_arrays([(s, cmd) for s in b] + [("nope", cmd)], raise_errors=False)
        _same(json, got)
        assert [(e.index, e.code) for e in got.errors] == [(2, "unknown_session")]
    with pytest.raises(ProtocolError) as e:
        client.step_batch_arrays([(b[0], "company status"), ("nope", "x")])
    assert e.value.code == "unknown_session" and e.value.index == 1


def _own_sessions(info: dict[str, Any], sessions: tuple[str | None, ...]) -> bool:
    """``info["session"]``: an object array holding the env's session where ``_session`` is set, None elsewhere."""
    rows = info["_session"]
    return bool(info["session"].dtype == object and info["session"].tolist() == [s if r else None for s, r in zip(sessions, rows)])


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_vector_env_binary_equals_json(endpoint: str, mode: str) -> None:
    """YCBenchDiscreteVectorEnv's default binary path returns exactly what its JSON path returns, through autoresets."""
    kw: dict[str, Any] = {"endpoint": endpoint, "max_steps": 7, "market_slots": 4, "task_slots": 2, "autoreset_mode": AutoresetMode(mode)}
    vb = YCBenchDiscreteVectorEnv(4, encoding="binary", **kw)
    vj = YCBenchDiscreteVectorEnv(4, encoding="json", **kw)
    try:
        ob, ib = vb.reset(seed=3)
        oj, ij = vj.reset(seed=3)
        rng = np.random.default_rng(2)
        for _ in range(25):
            assert np.array_equal(ob, oj)
            acts = np.array([random_masked(m, rng) for m in ij["action_mask"]])
            ob, rb, tb, ub, ib = vb.step(acts)
            oj, rj, tj, uj, ij = vj.step(acts)
            assert np.array_equal(ob, oj) and ob.dtype == oj.dtype and ob.flags.writeable
            for x, y in ((rb, rj), (tb, tj), (ub, uj)):
                assert np.array_equal(x, y) and x.dtype == y.dtype and x.flags.writeable
            assert ib.keys() == ij.keys()
            for k in ib:
                if k == "final_obs":
                    for p, q in zip(ib[k], ij[k]):
                        assert (p is None and q is None) or np.array_equal(p, q)
                    continue
                if k == "final_info":  # a dict of batched arrays, as Gymnasium builds it
                    assert ib[k].keys() == ij[k].keys()
                    assert all(np.array_equal(ib[k][f], ij[k][f]) and ib[k][f].dtype == ij[k][f].dtype for f in ib[k] if f != "session")
                    assert _own_sessions(ib[k], vb.sessions) and _own_sessions(ij[k], vj.sessions)
                    continue
                if k == "session":  # each env's own sessions
                    assert _own_sessions(ib, vb.sessions) and _own_sessions(ij, vj.sessions)
                    continue
                assert np.array_equal(ib[k], ij[k]) and ib[k].dtype == ij[k].dtype, k
            assert np.array_equal(vb.action_masks(), vj.action_masks())
    finally:
        vb.close()
        vj.close()


def test_vector_env_rejects_an_unknown_encoding(endpoint: str) -> None:
    with pytest.raises(ValueError, match="encoding"):
        YCBenchDiscreteVectorEnv(1, endpoint=endpoint, encoding="msgpack")


def test_the_server_refuses_malformed_binary_requests(client: Client) -> None:
    s = _sessions(client, 1, 1, DISCRETE)[0]
    for bad in ("msgpack", 1, None, True):
        with pytest.raises(ProtocolError) as e:
            client.request("step_batch", steps=[{"session": s, "action": 0}], encoding=bad if bad is not None else "")
        assert e.value.code == "invalid_request" and e.value.message.startswith("/encoding")
    with pytest.raises(ProtocolError) as e:
        client.request("step", session=s, action=0, encoding="binary")
    assert e.value.code == "invalid_request"
    t = _sessions(client, 1, 1, {})[0]
    steps: list[tuple[str, str | int]] = [(s, 0), (t, "company status")]
    got = client.step_batch_arrays(steps, raise_errors=False)
    assert [(x.index, x.code) for x in got.errors] == [(1, "invalid_request")] and "frame shape" in got.errors[0].message
    assert got.step.tolist() == [1.0, 0.0]


def _header(n: int = 2) -> dict[str, Any]:
    return {
        "encoding": "binary",
        "n": n,
        "arrays": [
            {"name": name, "dtype": dt, "shape": [n]}
            for name, dt in (
                ("reward", "<f8"),
                ("terminated", "|u1"),
                ("truncated", "|u1"),
                ("ok", "|u1"),
                ("exit_code", "|u1"),
                ("reward_cents", "<f8"),
                ("step", "<f8"),
                ("funds_cents", "<f8"),
                ("terminal_reason", "|u1"),
            )
        ],
        "errors": [],
        "text": ["", ""],
        "command": [None, None],
        "action_text": [None, None],
        "terminal_reasons": ["bankruptcy", "horizon_end", "max_steps", "stall"],
    }


def _frames(h: dict[str, Any]) -> list[bytes]:
    return [bytes(np.dtype(a["dtype"]).itemsize * int(np.prod(a["shape"]))) for a in h["arrays"]]


@pytest.mark.parametrize("adm", [[[7], None], [["a", None], None], [[["a"]], None], ["ab", None], [{"a": 1}, None], [["a"]], {"0": ["a"]}])
def test_the_decoder_refuses_admissible_commands_that_are_not_lists_of_strings(adm: Any) -> None:
    """``admissible_commands`` is a list of n entries, each a list of strings or null: an entry holding a number, a
    null, a list (or a string, an object for an entry) is refused with the reply (as ``text``'s entries are); entries of
    the wrong type inside a list were taken in as they came."""
    h = {**_header(), "admissible_commands": adm}
    with pytest.raises(ValueError, match="admissible_commands"):
        decode_batch_arrays(h, _frames(h), ProtocolError)
    good = {**_header(), "admissible_commands": [["a", "b"], None]}
    assert decode_batch_arrays(good, _frames(good), ProtocolError).admissible_commands == [["a", "b"], None]


def test_the_decoder_refuses_frames_that_do_not_fit_their_header() -> None:
    h = _header()
    ok = decode_batch_arrays(h, _frames(h), ProtocolError)
    assert ok.n == 2 and ok.reasons().tolist() == [None, None] and ok.obs is None
    cases: list[tuple[dict[str, Any], list[bytes], str]] = [
        (h, _frames(h)[1:], "lists 9 arrays"),
        (h, [b"\0" * 15, *_frames(h)[1:]], "15 bytes"),
        ({**h, "n": 0}, _frames(h), "no valid n"),
        ({**h, "arrays": [{**h["arrays"][0], "dtype": "<i8"}, *h["arrays"][1:]]}, _frames(h), "unknown dtype"),
        ({**h, "arrays": [{**h["arrays"][0], "name": "__class__"}, *h["arrays"][1:]]}, _frames(h), "unknown or repeated name"),
        ({**h, "arrays": [h["arrays"][0], *h["arrays"][:-1]]}, _frames(h), "unknown or repeated name"),
        ({**h, "text": ["a"]}, _frames(h), "text is not a list of n strings"),
        ({**h, "errors": [{"index": 5, "error": {}}]}, _frames(h), "errors entry"),
        ({**h, "n": True}, _frames(h), "no valid n"),
        ({**h, "arrays": [{**h["arrays"][0], "shape": [3]}, *h["arrays"][1:]]}, _frames(h), "bad shape"),
        ({**h, "arrays": h["arrays"][:-1]}, _frames(h)[:-1], "no terminal_reason"),
        ({**h, "terminal_reasons": []}, [*_frames(h)[:-1], b"\x01\x00"], "outside the header's table"),
    ]
    for head, frames, msg in cases:
        with pytest.raises(ValueError, match=msg):
            decode_batch_arrays(head, frames, ProtocolError)


def test_a_malformed_binary_reply_is_a_bad_reply_error() -> None:
    """The client turns a reply whose frames do not fit its header into ProtocolError("bad_reply")."""
    import json

    with fake_server() as (c, router):
        rid = c.send("step_batch", steps=[{"session": "s", "action": 0}], encoding="binary")
        ident, _req = router.recv_multipart()
        h = _header()
        router.send_multipart([ident, json.dumps({"v": 1, "id": rid, "ok": True, "result": h}).encode(), *_frames(h)[:-1]])
        with pytest.raises(ProtocolError) as e:
            c.recv(rid)
        assert e.value.code == "bad_reply" and "lists 9 arrays" in e.value.message


def _answer_step_batch(reply: Any, call: Any) -> Any:
    """Run ``call(client)`` against a fake ZeroMQ server that answers its one request with ``reply(request id)``: a list
    of frames (the JSON envelope first). What ``call`` returns or raises."""
    import json
    import threading

    with fake_server() as (c, router):

        def serve() -> None:
            ident, req = router.recv_multipart()
            router.send_multipart([ident, *reply(json.loads(req)["id"])])

        t = threading.Thread(target=serve)
        t.start()
        try:
            return call(c)
        finally:
            t.join(5)


def _envelope(rid: int, result: Any) -> bytes:
    import json

    return json.dumps({"v": 1, "id": rid, "ok": True, "result": result}).encode()


@pytest.mark.parametrize("shape", ["one row for two entries", "a JSON reply"])
def test_a_binary_reply_that_does_not_answer_every_entry_is_a_bad_reply(shape: str) -> None:
    """``step_batch_arrays`` of two entries answered with a well-formed binary reply of one row, or with a JSON reply (no
    arrays: a server that ignored ``encoding``): ``ProtocolError("bad_reply")``. The first was returned as it came (a
    ``BatchArrays`` of one row: the vector env's rows then did not line up with its sub-environments) and the second
    raised a bare ``AttributeError`` from the dict it got."""
    h = _header(1)
    h.update(text=[""], command=[None], action_text=[None])

    def reply(rid: int) -> list[bytes]:
        if shape == "a JSON reply":
            return [_envelope(rid, {"results": [{"ok": True, "result": {}}] * 2})]
        return [_envelope(rid, h), *_frames(h)]

    def call(c: Client) -> Any:
        with pytest.raises(ProtocolError) as e:
            c.step_batch_arrays([("s", 0), ("t", 0)], raise_errors=False)
        return e.value

    e = _answer_step_batch(reply, call)
    assert e.code == "bad_reply" and "for 2 entries" in e.message


@pytest.mark.parametrize("results", [[{"ok": True, "result": {}}], "garbage", None, [{"ok": True, "result": {}}, 7]])
def test_a_json_batch_reply_that_does_not_answer_every_entry_is_a_bad_reply(results: Any) -> None:
    """``step_batch`` of two entries answered with one result, with ``results`` not a list, or with an entry that is
    neither a result nor an error: ``bad_reply`` (for the whole request when its entries cannot be placed, else for
    that entry). A short list came back short (the caller lined it up with the wrong entries, or lost the last), the
    others raised a bare ``TypeError``/``AttributeError``."""
    def call(c: Client) -> Any:
        try:
            return c.step_batch([("s", "company status"), ("t", "company status")], raise_errors=False)
        except ProtocolError as e:
            return e

    got = _answer_step_batch(lambda rid: [_envelope(rid, {"results": results})], call)
    if isinstance(results, list) and len(results) == 2:
        assert got[0] == {} and isinstance(got[1], ProtocolError) and (got[1].code, got[1].index) == ("bad_reply", 1)
    else:
        assert isinstance(got, ProtocolError) and got.code == "bad_reply", got


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@given(st.data())
def test_fuzz_the_decoder_decodes_or_raises_value_error(data: st.DataObject) -> None:
    """A valid header with random fields replaced, random frames: BatchArrays or ValueError, never another exception."""
    h = _header()
    frames = _frames(h)
    for _ in range(data.draw(st.integers(0, 3))):
        key = data.draw(st.sampled_from([*h.keys(), "admissible_commands", "arrays.0", "arrays.8"]))
        if key.startswith("arrays."):
            k = int(key.split(".")[1])
            if not isinstance(h["arrays"], list) or len(h["arrays"]) <= k or not isinstance(h["arrays"][k], dict):
                continue
            field = data.draw(st.sampled_from(["name", "dtype", "shape"]))
            h["arrays"][k] = {**h["arrays"][k], field: data.draw(_json_values | st.sampled_from(["obs", "mask", "<f4", "|u1", [2, 3], [2]]))}
        else:
            h[key] = data.draw(_json_values)
    if data.draw(st.booleans()):
        frames = data.draw(st.lists(st.binary(max_size=24), max_size=12))
    try:
        got = decode_batch_arrays(h, frames, ProtocolError)
    except ValueError:
        return
    assert got.n == h["n"] and got.reward.shape[0] == got.n and len(got.text) == got.n
