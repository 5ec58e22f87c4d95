"""A large ``step_batch`` split into pipelined requests (``Client.send_step_batch``, the default over a pipe).

* Which batches are split (``_batch_parts``): only those the server takes as one request, of at least 32 entries.
* A split batch returns what the same batch sent whole returns: the same results and per-entry errors, in the same
  order, with the same indices, also when one session appears in two parts; the vector env's steps, resets and infos
  are the same with and without splitting.
* A part refused as a whole fails its own entries; a whole batch refused still raises. An interrupted call leaves no
  reply behind for a later one; two threads stepping split batches on one client each get their own results.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ycgym import Client, LocalServer, ProtocolError, YCBenchVectorEnv
from ycgym._protocol import MAX_BATCH, MAX_SESSION_ID_CHARS
from ycgym.client import (
    _SPLIT_MAX_ACTION_CHARS,
    BATCH_MAX_PARTS,
    BATCH_PART_ENTRIES,
    BATCH_PART_ENTRIES_ZMQ,
    _batch_parts,
    _entries,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the pipe transport needs POSIX")

ACTIONS = ["company status", "sim resume", "market browse --limit 3", "employee list", "nonsense --x", "task list"]
OPTIONS = {"stall_steps": 0, "max_steps": 4}


@pytest.fixture(scope="module")
def pipe_server() -> Iterator[LocalServer]:
    with LocalServer("pipe") as srv:
        yield srv


def _plain(r: Any) -> Any:
    if isinstance(r, ProtocolError):
        # the session id in the message is the only thing the two clients' sessions differ in
        return ("error", r.code, re.sub(r"session \S+:", "session ?:", r.message), r.index)
    return r


class _Counting(Client):
    """A client that counts the ``step_batch`` requests it writes to its socket."""

    batch_requests = 0

    def _send_payload(self, rid: int, op: str, payload: bytes) -> None:
        if op == "step_batch":
            self.batch_requests += 1
        super()._send_payload(rid, op, payload)


def _play(c: Client, n: int, rounds: int) -> list[list[Any]]:
    sessions = [c.reset(seed, options=OPTIONS)["session"] for seed in range(n)]
    out = []
    for r in range(rounds):
        steps = [(s, ACTIONS[(i + r) % len(ACTIONS)]) for i, s in enumerate(sessions)]
        # The last session steps twice, in the first part and in the last: the order of the two must hold.
        steps.insert(3, (sessions[-1], "sim resume"))
        steps.append(("s-unknown", "company status"))
        out.append([_plain(x) for x in c.step_batch(steps, raise_errors=False)])
    for s in sessions:
        c.close(s)
    return out


def _parts_by_entry(entries: list[dict[str, Any]], min_part: int = BATCH_PART_ENTRIES) -> int:
    """The split rule of ``_batch_parts`` written entry by entry (the oracle of its whole-batch checks)."""
    n = len(entries)
    parts = min(BATCH_MAX_PARTS, n // min_part)
    if parts < 2 or n > MAX_BATCH:
        return 1
    chars = 0
    for e in entries:
        sess, act = e.get("session"), e.get("action")
        if len(e) != 2 or type(sess) is not str or not 0 < len(sess) <= MAX_SESSION_ID_CHARS or type(act) is not str:
            return 1
        chars += len(act)
    return parts if chars <= _SPLIT_MAX_ACTION_CHARS else 1


_odd_entry = st.one_of(
    st.fixed_dictionaries({"session": st.text(min_size=0, max_size=66), "action": st.text(max_size=3)}),
    st.fixed_dictionaries({"session": st.just("s"), "action": st.one_of(st.integers(), st.none(), st.just("x" * (1 << 17)))}),
    st.fixed_dictionaries({"session": st.one_of(st.integers(), st.none()), "action": st.just("a")}),
    st.fixed_dictionaries({"session": st.just("s"), "act": st.just("a")}),
    st.fixed_dictionaries({"session": st.just("s"), "action": st.just("a"), "x": st.just(1)}),
    st.fixed_dictionaries({"session": st.just("s")}),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 140), st.lists(st.tuples(st.integers(0, 139), _odd_entry), max_size=3), st.sampled_from([BATCH_PART_ENTRIES, BATCH_PART_ENTRIES_ZMQ]))
def test_batch_parts_equals_the_rule_entry_by_entry(n: int, odd: list[tuple[int, dict[str, Any]]], min_part: int) -> None:
    entries = _entries([(f"s{i}", "company status") for i in range(n)])
    for i, e in odd:
        if i < n:
            entries[i] = e
    assert _batch_parts(entries, min_part) == _parts_by_entry(entries, min_part)


def test_which_batches_are_split() -> None:
    def entries(n: int, action: Any = "company status") -> list[dict[str, Any]]:
        return _entries([(f"s{i}", action) for i in range(n)])

    assert _batch_parts(entries(2 * BATCH_PART_ENTRIES - 1)) == 1
    assert _batch_parts(entries(2 * BATCH_PART_ENTRIES)) == 2
    assert _batch_parts(entries(64)) == 4
    assert _batch_parts(entries(1000)) == BATCH_MAX_PARTS
    assert _batch_parts(entries(5000)) == 1  # more than MAX_BATCH: refused whole, as one request
    assert _batch_parts(entries(64, 3)) == 1  # Discrete actions: sent whole
    assert _batch_parts(entries(64, "x" * 5000)) == 1  # too many characters
    bad = entries(64)
    bad[10] = {"session": "s10", "action": "company status", "extra": 1}
    assert _batch_parts(bad) == 1
    bad = entries(64)
    bad[10] = {"session": "", "action": "company status"}
    assert _batch_parts(bad) == 1
    bad = entries(64)
    bad[10] = {"session": "s" * 65, "action": "company status"}
    assert _batch_parts(bad) == 1
    # Over ZeroMQ parts are of at least 64 entries: a batch of 64 goes whole, 128 in two, 256 and more in four.
    assert _batch_parts(entries(64), BATCH_PART_ENTRIES_ZMQ) == 1
    assert _batch_parts(entries(2 * BATCH_PART_ENTRIES_ZMQ - 1), BATCH_PART_ENTRIES_ZMQ) == 1
    assert _batch_parts(entries(2 * BATCH_PART_ENTRIES_ZMQ), BATCH_PART_ENTRIES_ZMQ) == 2
    assert _batch_parts(entries(1000), BATCH_PART_ENTRIES_ZMQ) == BATCH_MAX_PARTS
    assert _batch_parts(entries(5000), BATCH_PART_ENTRIES_ZMQ) == 1
    # Each client takes its transport's size.
    assert Client("tcp://127.0.0.1:1")._min_part == BATCH_PART_ENTRIES_ZMQ
    assert Client("tcp://127.0.0.1:1")._split_batches and not Client("tcp://127.0.0.1:1", split_batches=False)._split_batches


def test_split_batches_return_what_whole_batches_return(pipe_server: LocalServer) -> None:
    split = _Counting(pipe_server.endpoint)
    whole = _Counting(pipe_server.endpoint, split_batches=False)
    try:
        assert split._split_batches and not whole._split_batches
        a = _play(split, 70, 6)
        b = _play(whole, 70, 6)
        assert a == b
        assert split.batch_requests == 6 * BATCH_MAX_PARTS and whole.batch_requests == 6
        # Per-entry errors came through with their indices in the whole batch (unknown session last; episodes over).
        assert a[0][-1][:2] == ("error", "unknown_session") and a[0][-1][3] == 71
        assert any(x[0] == "error" and x[1] == "episode_over" for x in a[-1])
    finally:
        split.close()
        whole.close()


def test_split_batches_over_zeromq_return_what_whole_batches_return(endpoint: str) -> None:
    # 130 sessions (and the two extra entries of _play): two parts of 66 over ZeroMQ.
    split = _Counting(endpoint)
    whole = _Counting(endpoint, split_batches=False)
    try:
        assert split._min_part == BATCH_PART_ENTRIES_ZMQ
        a = _play(split, 130, 3)
        b = _play(whole, 130, 3)
        assert a == b
        assert split.batch_requests == 3 * 2 and whole.batch_requests == 3
        assert a[0][-1][:2] == ("error", "unknown_session") and a[0][-1][3] == 131
    finally:
        split.close()
        whole.close()


def test_split_raises_the_first_failed_entry(pipe_server: LocalServer) -> None:
    c = Client(pipe_server.endpoint)
    try:
        sessions = [c.reset(seed, options=OPTIONS)["session"] for seed in range(40)]
        steps = [(s, "company status") for s in sessions]
        steps[33] = ("s-unknown", "company status")
        with pytest.raises(ProtocolError) as e:
            c.step_batch(steps)
        assert e.value.code == "unknown_session" and e.value.index == 33
        # Nothing left behind: the next batch gets its own results.
        assert all(not isinstance(r, ProtocolError) for r in c.step_batch([(s, "company status") for s in sessions]))
    finally:
        c.close()


def test_a_refused_part_fails_its_entries_and_a_refused_batch_raises(pipe_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    c = Client(pipe_server.endpoint)
    try:
        sessions = [c.reset(seed, options=OPTIONS)["session"] for seed in range(40)]
        steps = [(s, "company status") for s in sessions]
        real = Client.recv
        calls: list[int] = []

        def refuse_second(self: Client, request_id: Any, timeout: Any = None) -> Any:
            got = real(self, request_id, timeout)
            calls.append(request_id)
            if len(calls) == 2:
                raise ProtocolError("busy", "the server's queue is full", request_id=request_id)
            return got

        monkeypatch.setattr(Client, "recv", refuse_second)
        out = c.step_batch(steps, raise_errors=False)
        assert len(out) == 40
        failed = [r.index for r in out if isinstance(r, ProtocolError)]
        assert failed == list(range(20, 40))
        assert all(r.code == "busy" for r in out if isinstance(r, ProtocolError))
        # One request (a batch too small to split): its refusal raises, as before.
        calls.clear()
        calls.append(-1)
        with pytest.raises(ProtocolError) as e:
            c.step_batch(steps[:5])
        assert e.value.code == "busy" and e.value.index is None
    finally:
        c.close()


def test_an_interrupted_split_batch_leaves_no_reply_behind(pipe_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    c = Client(pipe_server.endpoint)
    try:
        sessions = [c.reset(seed, options={"stall_steps": 0})["session"] for seed in range(48)]
        steps = [(s, "company status") for s in sessions]
        expected = [_plain(r) for r in c.step_batch(steps)]
        real = Client.recv

        def interrupted(self: Client, request_id: Any, timeout: Any = None) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(Client, "recv", interrupted)
        with pytest.raises(KeyboardInterrupt):
            c.step_batch(steps)
        monkeypatch.setattr(Client, "recv", real)
        assert not c._pending
        # The interrupted parts ran on the server ("company status" changes nothing but the step count); their late
        # replies are dropped, and the next call gets its own.
        got = c.step_batch(steps)
        assert len(got) == 48
        assert [_plain(r)["observation"] for r in got] == [x["observation"] for x in expected]
    finally:
        c.close()


def _no_sessions(x: Any) -> Any:
    """``x`` without the session ids of infos (the two envs' sessions differ; nothing else may)."""
    if isinstance(x, dict):
        return {k: _no_sessions(v) for k, v in x.items() if k not in ("session", "_session")}
    if isinstance(x, (list, tuple)):
        return type(x)(_no_sessions(v) for v in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return [_no_sessions(v) for v in x]
    return x


def _vector_run(venv: YCBenchVectorEnv, rounds: int) -> list[Any]:
    out: list[Any] = [venv.reset(seed=5)]
    for r in range(rounds):
        out.append(venv.step([ACTIONS[(i + r) % len(ACTIONS)] for i in range(venv.num_envs)]))
    stripped: list[Any] = _no_sessions(out)
    return stripped


def test_vector_env_steps_the_same_with_and_without_parts(pipe_server: LocalServer) -> None:
    # max_steps 4: every sub-environment ends every few steps and is reset on the next, pipelined behind the parts.
    a = YCBenchVectorEnv(40, endpoint=pipe_server.endpoint, reset_options={"stall_steps": 0}, max_steps=4)
    b = YCBenchVectorEnv(40, endpoint=pipe_server.endpoint, reset_options={"stall_steps": 0}, max_steps=4)
    try:
        b._backend.client._split_batches = False
        assert a._backend.client._split_batches
        x = _vector_run(a, 12)
        y = _vector_run(b, 12)
        np.testing.assert_equal(x, y)
        assert any(bool(np.any(step[3])) for step in x[1:])  # truncations happened, so resets did too
    finally:
        a.close()
        b.close()


def test_threads_sharing_a_client_get_their_own_parts(pipe_server: LocalServer) -> None:
    """Two threads step split batches on one client at once (disjoint sessions): each gets its own results, in order,
    equal to the same batches stepped from one thread on another client."""
    import threading

    shared = Client(pipe_server.endpoint)
    alone = Client(pipe_server.endpoint)
    try:
        def sessions(c: Client, first: int) -> list[str]:
            return [c.reset(seed, options={"stall_steps": 0})["session"] for seed in range(first, first + 40)]

        groups = [sessions(shared, 0), sessions(shared, 100)]
        refs = [sessions(alone, 0), sessions(alone, 100)]
        rounds = 15
        got: list[list[Any]] = [[], []]
        errors: list[BaseException] = []

        def work(k: int) -> None:
            try:
                for r in range(rounds):
                    steps = [(s, ACTIONS[(i + r) % len(ACTIONS)]) for i, s in enumerate(groups[k])]
                    got[k].append([_plain(x) for x in shared.step_batch(steps, raise_errors=False)])
            except BaseException as e:  # noqa: BLE001  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        for k in (0, 1):
            want = [
                [_plain(x) for x in alone.step_batch([(s, ACTIONS[(i + r) % len(ACTIONS)]) for i, s in enumerate(refs[k])], raise_errors=False)]
                for r in range(rounds)
            ]
            assert got[k] == want
        assert not shared._pending and not shared._stash
    finally:
        shared.close()
        alone.close()
