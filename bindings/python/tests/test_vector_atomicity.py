"""Vector envs: a refused ``reset`` (or a failed automatic reset inside ``step``) leaves every sub-environment as it was.

Each test runs an env next to a twin that never sees the refused call: after the refusal both take the same steps and
must return the same results (sessions left out), and their next seedless resets must draw the same seeds. Both vector
envs, over both transports (the envs' own pipe server and a ZeroMQ endpoint).
"""

from __future__ import annotations

import contextlib
import pickle
import re
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from helpers import same, spoil_reply
from ycgym import EpisodeOverError, LocalServer, ProtocolError, VectorStepError, YCBenchDiscreteVectorEnv, YCBenchVectorEnv

KINDS = ["text", "discrete"]
STEP_KINDS = [*KINDS, "discrete-json"]  # the Discrete env's step replies come as arrays or as JSON
TRANSPORTS = ["pipe", "zmq"]
N = 3


@pytest.fixture(scope="module", params=TRANSPORTS)
def server(request: pytest.FixtureRequest) -> Iterator[LocalServer]:
    with LocalServer("pipe" if request.param == "pipe" else "tcp://127.0.0.1:0") as srv:
        yield srv


def make(kind: str, endpoint: str, n: int = N, **kw: Any) -> Any:
    """``kind``: "text", "discrete" (binary step replies) or "discrete-json"."""
    if kind == "text":
        return YCBenchVectorEnv(n, endpoint=endpoint, **kw)
    return YCBenchDiscreteVectorEnv(n, endpoint=endpoint, encoding="json" if kind == "discrete-json" else "binary", **kw)


def actions(env: Any, t: int) -> Any:
    """The same actions for an env and its twin (they are in the same state)."""
    if isinstance(env, YCBenchVectorEnv):
        return [("company status", "sim resume", "client list")[(t + i) % 3] for i in range(env.num_envs)]
    return np.array([int(np.flatnonzero(m)[-1 - (t % 2)]) for m in env.action_masks()], dtype=np.int64)


def without_sessions(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: without_sessions(v) for k, v in x.items() if k not in ("session", "_session")}
    if isinstance(x, tuple):
        return tuple(without_sessions(v) for v in x)
    return x


def step_both(env: Any, twin: Any, t: int) -> None:
    acts = actions(twin, t)
    got, want = env.step(acts), twin.step(acts)
    assert same(without_sessions(got), without_sessions(want)), f"step {t} differs from the twin's"


def check_twins(env: Any, twin: Any, steps: int = 3) -> None:
    """``env`` and ``twin`` continue alike: the same steps, then the same seedless reset (the same drawn seeds)."""
    for t in range(steps):
        step_both(env, twin, t)
    assert same(without_sessions(env.reset()), without_sessions(twin.reset()))
    assert [g.bit_generator.state for g in env._rngs] == [g.bit_generator.state for g in twin._rngs]
    step_both(env, twin, 0)


def started(kind: str, endpoint: str, steps: int = 2, **kw: Any) -> tuple[Any, Any]:
    """An env and its twin, reset with seed 5 and stepped ``steps`` times alike."""
    env, twin = make(kind, endpoint, **kw), make(kind, endpoint, **kw)
    for e in (env, twin):
        e.reset(seed=5)
    for t in range(steps):
        step_both(env, twin, t)
    return env, twin


# Vector resets that must be refused as a whole: a seed the protocol cannot carry for one sub-environment only (seed + i
# past 2**53 - 1; one in a list), a negative seed, an option the server refuses (for all, and for a masked reset), an
# unknown split.
REFUSED: list[dict[str, Any]] = [
    {"seed": 2**53 - 2},
    {"seed": [1, 2**53, 3]},
    {"seed": [1, -1, 3]},
    {"seed": 7, "options": {"start_date": "not a date"}},
    {"options": {"max_steps": 0}},
    {"seed": 4, "options": {"reset_mask": np.array([False, True, True]), "start_date": "2025-13-01"}},
    {"options": {"split": "no such split"}},
]


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_vector_reset_leaves_every_episode_where_it_was(kind: str, server: LocalServer) -> None:
    env, twin = started(kind, server.endpoint)
    try:
        for bad in REFUSED:
            with pytest.raises((ProtocolError, ValueError, gym.error.Error)):
                env.reset(**bad)
            step_both(env, twin, 0)
        check_twins(env, twin)
    finally:
        env.close()
        twin.close()


def rng_states(env: Any) -> list[Any]:
    return [None if g is None else g.bit_generator.state for g in env._rngs]


@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_failed_automatic_reset_leaves_the_env_as_it_was(kind: str, server: LocalServer) -> None:
    """NEXT_STEP: every sub-environment's episode ended; the next step resets them all, and one reset fails (its session
    was lost, closed or reaped, and the server has no room for a new one: ``session_limit``). The step raises and leaves
    the env as it was: the generators were advanced by the seeds drawn for the resets (the next try drew the following
    ones: other worlds than the twin's), and the Discrete env did not replace a lost session at all (its automatic
    reset raised ``unknown_session`` at every step, where a ``reset`` and the text env take a new session). Once the
    server has room again, the same step plays exactly the twin's step."""
    with LocalServer("pipe" if server.endpoint.startswith("pipe") else "tcp://127.0.0.1:0", args=["--max-sessions", str(N)]) as small:
        env, twin = make(kind, small.endpoint, max_steps=1), make(kind, server.endpoint, max_steps=1)
        try:
            for e in (env, twin):
                e.reset(seed=5)
            step_both(env, twin, 0)  # every episode truncated: the next step resets them all
            before = rng_states(env)
            c = env.client
            c.close(session=env.sessions[1])
            spare = c.reset(0, "default")["session"]  # the lost session's place taken: no room for a new one
            acts = actions(twin, 1)
            with pytest.raises(ProtocolError) as err:
                env.step(acts)
            assert err.value.code == "session_limit"
            assert rng_states(env) == before
            c.close(session=spare)
            got, want = env.step(acts), twin.step(acts)
            assert same(without_sessions(got), without_sessions(want))
            check_twins(env, twin)
        finally:
            env.close()
            twin.close()


@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_step_that_fails_leaves_its_automatic_resets_undone(kind: str, server: LocalServer) -> None:
    """NEXT_STEP: sub-environment 0's episode ended (its automatic reset goes out with the step), sub-environment 1's
    step fails (its session was lost). The step raises; sub-environment 0 is left as it was: its generator not advanced,
    its reset still due. It used to keep the advanced generator, so once sub-environment 1 was reset the next step
    reset sub-environment 0 with the following seed (another world than the twin's); the text env also kept the
    reset's seed as ``seeds_used`` while the reset was still due."""
    env, twin = make(kind, server.endpoint, n=2, max_steps=2), make(kind, server.endpoint, n=2, max_steps=2)
    try:
        one = {"reset_mask": np.array([False, True])}
        for e in (env, twin):
            e.reset(seed=5)
        step_both(env, twin, 0)
        for e in (env, twin):
            e.reset(options=one)
        step_both(env, twin, 1)  # sub-environment 0 truncated, 1 goes on
        before = rng_states(env)
        used = env.seeds_used if kind == "text" else None
        env.client.close(session=env.sessions[1])
        with pytest.raises(ProtocolError) as err:
            env.step(actions(twin, 2))
        assert err.value.code == "unknown_session"
        assert rng_states(env) == before
        if kind == "text":
            assert env.seeds_used == used
        for e in (env, twin):
            e.reset(seed=9, options=one)
        check_twins(env, twin)
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("kind", KINDS)
def test_disabled_mode_refuses_an_ended_sub_environment_as_sync_vector_env_does(kind: str) -> None:
    """DISABLED: stepping while a sub-environment's episode is over raises what ``SyncVectorEnv`` (and
    ``AsyncVectorEnv``) of the single env raise, an ``AssertionError``, and what the single env raises when stepped past
    its end, a ``ProtocolError`` with code ``episode_over`` (``index``: the sub-environment): one exception that is both.
    The Discrete vector env raised only the ProtocolError, the text one only an AssertionError; an ``except`` written for
    one vector env or for SyncVectorEnv missed the other's. Nothing is stepped."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from ycgym import EpisodeOverError, YCBenchDiscreteEnv, YCBenchEnv

    single = YCBenchEnv if kind == "text" else YCBenchDiscreteEnv
    mode = AutoresetMode.DISABLED
    ours = make(kind, None, n=2, max_steps=1, autoreset_mode=mode)  # type: ignore[arg-type]
    ref = SyncVectorEnv([lambda: single(max_steps=1) for _ in range(2)], autoreset_mode=mode)
    try:
        for e in (ours, ref):
            e.reset(seed=3)
        acts = actions(ours, 0)
        for e in (ours, ref):
            e.step(acts)
        with pytest.raises(AssertionError) as want:
            ref.step(acts)
        with pytest.raises(AssertionError) as got:
            ours.step(acts)
        assert isinstance(got.value, type(want.value)) and isinstance(got.value, EpisodeOverError)
        assert isinstance(got.value, ProtocolError) and got.value.code == "episode_over" and got.value.index == 0
        assert "reset_mask" in str(got.value)
        with pytest.raises(ProtocolError, match="episode_over"):
            ours.step(acts)
        ours.reset(options={"reset_mask": np.array([True, False])})
        with pytest.raises(EpisodeOverError) as again:
            ours.step(acts)
        assert again.value.index == 1
        ours.reset(options={"reset_mask": np.array([False, True])})
        assert ours.step(acts)[3].all()  # every episode reset and stepped once more: truncated again
    finally:
        ours.close()
        ref.close()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("render_mode", [None, "ansi", "human"])
def test_the_text_vector_envs_metadata_and_rendering_are_sync_vector_envs(render_mode: str | None, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``metadata`` is what ``SyncVectorEnv`` of ``YCBenchEnv`` reports (the single env's, ``render_fps`` included, with
    the autoreset mode), and every render mode the single env declares works as there: ``"human"`` prints each
    sub-environment's text during ``reset`` and ``step`` (automatic resets included) in SyncVectorEnv's order, and
    ``render()`` prints them again and returns a tuple of None. It declared ``["ansi"]`` without ``render_fps`` and
    refused ``"human"``."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from ycgym import YCBenchEnv

    am = AutoresetMode(mode)
    ours = YCBenchVectorEnv(2, max_steps=2, render_mode=render_mode, autoreset_mode=am)
    ref = SyncVectorEnv([lambda: YCBenchEnv(max_steps=2, render_mode=render_mode) for _ in range(2)], autoreset_mode=am)
    try:
        assert ours.metadata == ref.metadata and ours.render_mode == ref.render_mode
        printed: list[list[str]] = [[], []]
        rendered: list[Any] = [None, None]
        for k, e in enumerate((ref, ours)):
            capsys.readouterr()
            e.reset(seed=[3, 4])  # type: ignore[arg-type]  # Gymnasium's VectorEnv.reset annotates int | None; its vector envs take a list
            e.step(["client list", "employee list"])
            e.reset(options={"reset_mask": np.array([False, True])})
            for t in range(3):
                r = e.step([("company status", "sim resume", "task list")[(t + i) % 3] for i in range(2)])
                if am == AutoresetMode.DISABLED and (r[2] | r[3]).any():
                    e.reset(options={"reset_mask": r[2] | r[3]})
            rendered[k] = e.render()
            printed[k] = capsys.readouterr().out.splitlines()
        assert printed[1] == printed[0]
        assert rendered[1] == rendered[0] and isinstance(rendered[1], tuple) and len(rendered[1]) == 2
        if render_mode == "human":
            assert len(printed[0]) > 10
    finally:
        ours.close()
        ref.close()


# ---------------------------------------------------------------------------------------------------------------------
# A step in which some sub-environments fail: the others' results are applied and returned with the error.

MODES = ["NextStep", "SameStep", "Disabled"]


def rows(x: Any, idx: list[int], n: int) -> Any:
    """The rows ``idx`` of a vector env's batched value (observations, rewards, flags, infos with their masks); sessions
    left out, and the info keys none of those rows has (its ``_key`` mask false there)."""
    if isinstance(x, dict):
        def kept(k: str) -> bool:
            mask = x.get(k if k.startswith("_") else "_" + k)
            return k not in ("session", "_session") and not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (n,) and not mask[idx].any())
        return {k: rows(v, idx, n) for k, v in x.items() if kept(k)}
    if isinstance(x, np.ndarray) and x.shape[:1] == (n,):
        return x[idx]
    if isinstance(x, tuple) and len(x) == n:
        return tuple(x[i] for i in idx)
    return x


def same_rows(got: tuple[Any, ...], want: tuple[Any, ...], idx: list[int], n: int) -> bool:
    """The step results ``got`` and ``want`` (5-tuples) agree on the sub-environments ``idx``."""
    return all(same(rows(g, idx, n), rows(w, idx, n)) for g, w in zip(got, want))


def row_of(x: Any, i: int) -> Any:
    """Sub-environment ``i``'s observation in a batched one."""
    return {k: row_of(v, i) for k, v in x.items()} if isinstance(x, dict) else x[i]


def same_value(a: Any, b: Any) -> bool:
    """Equal values (dicts key by key; numbers and arrays by value, whatever their numpy type)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def step_or_raise(env: Any, acts: Any) -> Any:
    try:
        return env.step(acts)
    except Exception as e:  # noqa: BLE001 - the twins must raise alike
        return (type(e), getattr(e, "code", None), getattr(e, "index", None))


def continue_alike(env: Any, twin: Any, mode: str, ended: Any = None, steps: int = 6) -> None:
    """``env`` and ``twin`` take the same steps with the same results (DISABLED: before each step the ended
    sub-environments of both, ``ended`` the first time, are reset with a mask), then the same seedless reset (the same
    drawn seeds) and one more step."""
    for t in range(steps):
        if mode == "Disabled" and ended is not None and ended.any():
            for e in (env, twin):
                e.reset(options={"reset_mask": ended})
        acts = actions(twin, t)
        got, want = step_or_raise(env, acts), step_or_raise(twin, acts)
        assert same(without_sessions(got), without_sessions(want)), f"step {t} differs from the twin's"
        assert isinstance(want, tuple) and len(want) == 5, want
        ended = want[2] | want[3]
    assert same(without_sessions(env.reset()), without_sessions(twin.reset()))
    assert rng_states(env) == rng_states(twin)
    step_both(env, twin, 0)


def offset_start(env: Any, twin: Any) -> None:
    """Sub-environment 0 two steps into its episode, 1 and 2 one step (``max_steps=3``: 0's episode ends at its next
    step)."""
    for e in (env, twin):
        e.reset(seed=5)
    step_both(env, twin, 0)
    for e in (env, twin):
        e.reset(options={"reset_mask": np.array([False, True, True])})
    step_both(env, twin, 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_step_with_a_failed_sub_environment_applies_and_returns_the_others(kind: str, mode: str, server: LocalServer) -> None:
    """Sub-environment 1's session was lost (closed, reaped); the step that ends sub-environment 0's episode steps 0 and
    2 on the server and fails 1 (``unknown_session``). The step raises one :class:`ycgym.VectorStepError` (a
    ``ProtocolError`` with the first failure's code and sub-environment) whose ``result`` holds what the step returned
    for 0 and 2 (the twin's rows: observations, rewards, flags, infos, SAME_STEP's final observation) and whose
    ``errors`` and ``stepped`` say which failed; the env took their results in (0's episode over: NEXT_STEP resets it at
    the next step, DISABLED refuses to step it). It used to raise the bare entry error and drop 0's and 2's results
    (the Discrete env did not even take their observations in), so the next step played from states the Python side
    never saw: 0 was stepped past its end (``episode_over``) where the twin reset it."""
    from gymnasium.vector import AutoresetMode

    am = AutoresetMode(mode)
    env, twin = make(kind, server.endpoint, max_steps=3, autoreset_mode=am), make(kind, server.endpoint, max_steps=3, autoreset_mode=am)
    try:
        offset_start(env, twin)
        acts = actions(twin, 2)
        want = twin.step(acts)
        assert want[3][0] and not want[3][1:].any()  # 0's episode ends in this step
        env.client.close(session=env.sessions[1])
        with pytest.raises(VectorStepError) as err:
            env.step(acts)
        e = err.value
        assert isinstance(e, ProtocolError) and e.code == "unknown_session" and e.index == 1
        assert list(e.errors) == [1] and e.errors[1].code == "unknown_session"
        assert e.stepped.tolist() == [True, False, True]
        assert "sub-environment 1" in str(e)
        copy = pickle.loads(pickle.dumps(e))  # Ray, multiprocessing
        assert type(copy) is VectorStepError and (copy.code, copy.index, str(copy)) == (e.code, e.index, str(e))
        assert list(copy.errors) == [1] and same(copy.result, e.result) and same(copy.stepped, e.stepped)
        assert isinstance(e.result, tuple) and len(e.result) == 5
        assert same_rows(e.result, want, [0, 2], N)
        rewards, terminated, truncated = e.result[1:4]
        assert rewards[1] == 0 and not terminated[1] and not truncated[1]
        info = e.result[4]
        assert all(not v[1] for k, v in info.items() if k.startswith("_") and isinstance(v, np.ndarray))
        # Sub-environment 1 reset in both (the env makes a new session for it); then both go on alike.
        for x in (env, twin):
            x.reset(seed=9, options={"reset_mask": np.array([False, True, False])})
        continue_alike(env, twin, mode, want[2] | want[3])
    finally:
        env.close()
        twin.close()


def refuse_next_reset(env: Any, spares: list[str]) -> None:
    """On a server of ``N`` sessions, make the env's next reset request fail with ``session_limit``: just before it goes
    out, the first session it resets is lost (closed) and its place taken by another session (kept in ``spares``), so
    the reset in a new session finds no room."""
    c = env.client
    send_all = c.send_all

    def hooked(op: str, requests: Any, ids: Any = None) -> Any:
        if op != "reset":
            return send_all(op, requests, ids)
        del c.send_all  # once
        requests = list(requests)
        c.close(session=requests[0]["session"])
        spares.append(c.reset(0, "default")["session"])
        return send_all(op, requests, ids)

    c.send_all = hooked


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_failed_automatic_reset_leaves_its_sub_environment_due_and_returns_the_others(kind: str, mode: str, server: LocalServer) -> None:
    """Sub-environment 0's episode ends; its automatic reset (SAME_STEP: in the step that ends it; NEXT_STEP: in the next
    step, with 1 and 2 stepping) fails (``session_limit``: its session was lost and the server has no room for a new
    one). The step raises a :class:`ycgym.VectorStepError` with 1's and 2's results (the twin's rows) and, in SAME_STEP,
    0's step (its last observation, the twin's ``final_obs``); 0 stays due for its reset, which the next step makes
    with the seed the twin's reset drew (NEXT_STEP's way: its action ignored, reward 0) while 1 and 2 step. In SAME_STEP
    the failed reset used to leave 0 marked as running, so every later step was refused (``episode_over``), and the
    step's results were dropped. DISABLED: the refused masked reset changes nothing; once there is room it resets 0
    as the twin's does."""
    from gymnasium.vector import AutoresetMode

    am = AutoresetMode(mode)
    endpoint = "pipe" if server.endpoint.startswith("pipe") else "tcp://127.0.0.1:0"
    with LocalServer(endpoint, args=["--max-sessions", str(N)]) as small:
        env, twin = make(kind, small.endpoint, max_steps=3, autoreset_mode=am), make(kind, server.endpoint, max_steps=3, autoreset_mode=am)
        spares: list[str] = []
        try:
            offset_start(env, twin)
            t = 2
            if mode == "NextStep":  # 0's episode ends in this step; its reset goes with the next one
                step_both(env, twin, t)
                t += 1
            before = rng_states(env)
            acts = actions(twin, t)
            if mode == "Disabled":
                step_both(env, twin, t)
                mask = {"reset_mask": np.array([True, False, False])}
                refuse_next_reset(env, spares)
                with pytest.raises(ProtocolError) as refused:
                    env.reset(options=mask)
                assert refused.value.code == "session_limit"
                with pytest.raises(EpisodeOverError):
                    env.step(acts)
                env.client.close(session=spares.pop())
                for e in (env, twin):
                    e.reset(options=mask)
                continue_alike(env, twin, mode)
                return
            want = twin.step(acts)
            refuse_next_reset(env, spares)
            with pytest.raises(VectorStepError) as err:
                env.step(acts)
            e = err.value
            assert isinstance(e, ProtocolError) and e.code == "session_limit" and e.index == 0
            assert list(e.errors) == [0]
            assert same_rows(e.result, want, [1, 2], N)
            assert rng_states(env)[0] == before[0]
            if mode == "SameStep":
                assert e.stepped.tolist() == [True, True, True]
                assert want[3][0] and e.result[3][0] and e.result[1][0] == want[1][0]
                assert same_value(row_of(e.result[0], 0), want[4]["final_obs"][0])  # its last observation
            else:
                assert e.stepped.tolist() == [False, True, True]
            env.client.close(session=spares.pop())
            # The next step resets 0 (the seed the twin's reset drew: the twin's reset observation) and steps 1 and 2.
            acts = actions(twin, t + 1)
            got, want2 = env.step(acts), twin.step(acts)
            assert same_rows(got, want2, [1, 2], N)
            assert same(rows(without_sessions(got[0]), [0], N), rows(without_sessions(want[0]), [0], N))
            assert got[1][0] == 0 and not got[2][0] and not got[3][0]
            assert rng_states(env)[0] == rng_states(twin)[0]
            for x in (env, twin):  # 0 is one step behind the twin's: both reset it alike
                x.reset(seed=9, options={"reset_mask": np.array([True, False, False])})
            continue_alike(env, twin, mode)
        finally:
            env.close()
            twin.close()


def refuse_last_batch_part(env: Any) -> list[int]:
    """Make the server refuse, as a whole, the last ``step_batch`` request of the env's next step (a split batch's
    second part, or the only request; none of its entries runs): its payload is replaced by a malformed request of the
    same id (``invalid_request``). The list returned gets the number of entries of each part."""
    import json

    c = env.client
    send = c._send_payload
    sizes: list[int] = []
    parts: list[tuple[int, bytes]] = []

    def hooked(rid: int, op: str, payload: bytes) -> None:
        if op != "step_batch":
            send(rid, op, payload)
            return
        sizes.append(len(json.loads(payload)["steps"]))
        parts.append((rid, payload))
        # Sent in order; the last part is known once the env receives: hold each until the next comes, then send it.
        return None

    def recv(request_id: Any, timeout: Any = None) -> Any:
        if parts:
            del c._send_payload, c.recv  # once
            for k, (rid, payload) in enumerate(parts):
                send(rid, "step_batch", payload if k < len(parts) - 1 else b'{"v":1,"id":%d,"op":"step_batch","steps":"refused"}' % rid)
        return c.recv(request_id, timeout)

    c._send_payload = hooked
    c.recv = recv
    return sizes


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_refused_batch_request_fails_its_entries_and_the_others_are_taken_in(kind: str, mode: str, server: LocalServer) -> None:
    """40 sub-environments, the even ones' episodes ending in this step. The server refuses the last ``step_batch``
    request of the step as a whole (over the pipe the text and JSON batches go as two pipelined parts: the first runs,
    the second is refused; otherwise the one request is): the refused part's sub-environments fail (``errors``) and
    did not step; the others' rows are the twin's, and once the failed ones are reset in both, both go on alike."""
    from gymnasium.vector import AutoresetMode

    n = 40
    am = AutoresetMode(mode)
    env, twin = (make(kind, server.endpoint, n=n, max_steps=2, autoreset_mode=am) for _ in range(2))
    try:
        odd = np.arange(n) % 2 == 1
        for e in (env, twin):
            e.reset(seed=5)
        step_both(env, twin, 0)
        for e in (env, twin):
            e.reset(options={"reset_mask": odd})
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert (want[3] == ~odd).all()
        sizes = refuse_last_batch_part(env)
        with pytest.raises(VectorStepError) as err:
            env.step(acts)
        e = err.value
        assert e.code == "invalid_request" and sum(sizes) == n
        refused = list(range(n - sizes[-1], n))
        ran = list(range(n - sizes[-1]))
        assert list(e.errors) == refused and e.index == refused[0]
        assert e.stepped.tolist() == [i in ran for i in range(n)]
        if ran:
            assert same_rows(e.result, want, ran, n)
        mask = np.zeros(n, dtype=np.bool_)
        mask[refused] = True
        for x in (env, twin):  # the refused ones, one step behind the twin's: reset in both alike
            x.reset(seed=11, options={"reset_mask": mask})
        continue_alike(env, twin, mode, want[2] | want[3], steps=3)
    finally:
        env.close()
        twin.close()


def corrupt_last_batch_reply(env: Any, how: str) -> list[int]:
    """Make the reply to the last ``step_batch`` request of the env's next step (a split batch's last part, or the only
    request) one the client cannot read, as a broken proxy or a server of another version could send it; the server
    ran its entries. ``how``: "short" (a JSON reply with one result fewer than its request's entries), "garbage" (a
    JSON reply whose ``results`` is not a list of entries), "frames" (a binary reply missing an array frame), "noframe"
    (a binary reply without the Discrete ``obs`` array). The list returned gets the number of entries of each part."""
    from ycgym.client import _ARRAYS

    def spoil(reply: dict[str, Any]) -> None:
        res = reply["result"]
        if how == "short":
            res["results"] = res["results"][:-1]
        elif how == "garbage":
            res["results"] = "garbage"
        elif how == "frames":
            reply[_ARRAYS] = reply[_ARRAYS][:-1]
        else:
            k = [a["name"] for a in res["arrays"]].index("obs")
            del res["arrays"][k]
            reply[_ARRAYS] = [f for j, f in enumerate(reply[_ARRAYS]) if j != k]

    return spoil_last_batch_reply(env, spoil)


def spoil_last_batch_reply(env: Any, spoil: Any) -> list[int]:
    """Hook the env's client so that ``spoil`` changes, in place, the decoded reply to the last ``step_batch`` request
    of its next step (a split batch's last part, or the only request), once. The list returned gets the number of
    entries of each ``step_batch`` part sent."""
    from ycgym.client import Client

    c = env.client
    sizes, ids = record_batch_sends(c)

    def decode(frames: list[bytes]) -> dict[str, Any]:
        reply = Client._decode(frames)
        # Every part is sent before the first reply is read: the last id is the last part's.
        if not ids or reply.get("id") != ids[-1]:
            return reply
        del c._decode, c._send_payload  # once
        spoil(reply)
        return reply

    c._decode = decode
    return sizes


def record_batch_sends(c: Any) -> tuple[list[int], list[int]]:
    """Hook client ``c``'s sends (until the hook is deleted: ``del c._send_payload``): the lists returned get the number
    of entries and the request id of each ``step_batch`` request it sends."""
    import json

    send = c._send_payload
    sizes: list[int] = []
    ids: list[int] = []

    def hooked(rid: int, op: str, payload: bytes) -> None:
        if op == "step_batch":
            sizes.append(len(json.loads(payload)["steps"]))
            ids.append(rid)
        send(rid, op, payload)

    c._send_payload = hooked
    return sizes, ids


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "how"),
    [("text", "short"), ("text", "garbage"), ("discrete-json", "short"), ("discrete-json", "garbage"), ("discrete", "frames"), ("discrete", "noframe")],
)
def test_an_unreadable_batch_reply_fails_its_entries_and_marks_them_due(kind: str, how: str, mode: str, server: LocalServer) -> None:
    """40 sub-environments; the reply to the last ``step_batch`` request of a step cannot be read (``bad_reply``): the
    server ran its entries, but the env cannot know their results. The step raises a :class:`ycgym.VectorStepError`
    (code ``bad_reply``) whose ``errors`` are that request's sub-environments (not ``stepped``) and whose other rows are
    the twin's (over the pipe the text batch goes as two parts: the first part's results are taken in); the
    unreadable ones are due for a reset, since their state on the server is one the env never saw: the next step resets
    them (NEXT_STEP, SAME_STEP: the observation a reset of them in the twin gives, reward 0) or refuses to step them
    (DISABLED). The binary path took the malformed reply for a refused request (none ran) and the JSON paths raised a
    bare TypeError/AttributeError, or (a short list) silently dropped the last entry: the next step then played
    sub-environments from frames the server had already moved past."""
    from gymnasium.vector import AutoresetMode

    n = 40
    env, twin = started(kind, server.endpoint, steps=1, n=n, autoreset_mode=AutoresetMode(mode))
    try:
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert not (want[2] | want[3]).any()
        sizes = corrupt_last_batch_reply(env, how)
        with pytest.raises(VectorStepError) as err:
            env.step(acts)
        e = err.value
        assert e.code == "bad_reply" and sum(sizes) == n, (e, sizes)
        bad = list(range(n - sizes[-1], n))
        ran = list(range(n - sizes[-1]))
        assert list(e.errors) == bad and e.index == bad[0]
        assert all(x.code == "bad_reply" for x in e.errors.values())
        assert e.stepped.tolist() == [i in ran for i in range(n)]
        if ran:
            assert same_rows(e.result, want, ran, n)
        continue_with_due(env, twin, mode, bad, ran, why="could not be read (bad_reply)")
    finally:
        env.close()
        twin.close()


def last_entry_fails_alone(env: Any, twin: Any, mode: str, acts: Any, want: Any) -> None:
    """``env.step(acts)``, whose reply's last entry (sub-environment 2's) was spoiled, fails that entry alone as
    ``bad_reply`` with the others stepped as ``twin`` stepped them (``want``); the next step resets 2 (see
    :func:`continue_with_due`)."""
    with pytest.raises(VectorStepError) as err:
        env.step(acts)
    e = err.value
    assert e.code == "bad_reply" and list(e.errors) == [2] and e.index == 2, e
    assert e.stepped.tolist() == [True, True, False]
    assert same_rows(e.result, want, [0, 1], N)
    continue_with_due(env, twin, mode, [2], [0, 1], why="could not be read (bad_reply)")


def continue_with_due(env: Any, twin: Any, mode: str, due: list[int], ran: list[int], why: str | None = None) -> None:
    """After a step in which the sub-environments ``ran`` stepped alike in ``env`` and ``twin`` and ``due`` may have
    stepped on the server unseen by ``env``: the next step of ``env`` resets ``due`` (the seeds a masked reset of them in
    the twin draws: its observations, reward 0, flags false) and steps ``ran`` as the twin does; DISABLED refuses to
    step ``env`` until ``due`` are reset (``why``, when given: what its message says instead of "episode is over").
    Then both go on alike."""
    n = env.num_envs
    mask = np.zeros(n, dtype=np.bool_)
    mask[due] = True
    acts = actions(twin, 2)
    if mode == "Disabled":
        with pytest.raises(EpisodeOverError) as over:
            env.step(acts)
        assert over.value.index == due[0]
        if why is not None:
            assert why in str(over.value) and "episode is over" not in str(over.value), str(over.value)
        for x in (env, twin):
            x.reset(options={"reset_mask": mask})
    else:
        reset_obs, _ = twin.reset(options={"reset_mask": mask})
        got = env.step(acts)
        assert same(rows(without_sessions(got[0]), due, n), rows(without_sessions(reset_obs), due, n))
        assert not got[1][due].any() and not got[2][due].any() and not got[3][due].any()
        want = twin.step(acts)
        if ran:
            assert same_rows(got, want, ran, n)
        for x in (env, twin):
            x.reset(seed=11)
    continue_alike(env, twin, mode, steps=3)


def stop_at_last_batch_reply(env: Any, what: type[BaseException]) -> list[int]:
    """Make the env's next step raise ``what`` (a Ctrl-C, a timeout) while it waits for the reply to its last
    ``step_batch`` request (a split batch's last part, or the only request), which the server runs all the same. The
    list returned gets the number of entries of each part."""
    c = env.client
    recv = c.recv
    sizes, ids = record_batch_sends(c)

    def stopped(request_id: Any, timeout: Any = None) -> Any:
        if ids and request_id == ids[-1]:
            del c._send_payload, c.recv  # once
            c.abandon([request_id])  # as the real wait does when it is stopped
            raise what("stopped while waiting for the last part")
        return recv(request_id, timeout)

    c.recv = stopped
    return sizes


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", STEP_KINDS)
@pytest.mark.parametrize("what", [KeyboardInterrupt, TimeoutError])
def test_a_step_stopped_while_waiting_marks_the_unanswered_sub_environments_due(what: type[BaseException], kind: str, mode: str, server: LocalServer) -> None:
    """40 sub-environments; a Ctrl-C or a timeout while the step waits for its last ``step_batch`` reply (over the pipe
    the text batch goes as two parts: the first part's results are taken in; the Discrete batch is one request). The
    error propagates as it is; the server runs the unanswered entries all the same, so the env marks them due: the next
    step resets them (NEXT_STEP, SAME_STEP) or refuses to step them (DISABLED), and the others go on as the twin's. They
    used to be left as they were, so the next step played them from frames the server had moved past (one step behind
    it; an episode the server had ended was stepped again: episode_over)."""
    from gymnasium.vector import AutoresetMode

    n = 40
    env, twin = started(kind, server.endpoint, steps=1, n=n, autoreset_mode=AutoresetMode(mode))
    try:
        acts = actions(twin, 1)
        twin.step(acts)
        sizes = stop_at_last_batch_reply(env, what)
        with pytest.raises(what):
            env.step(acts)
        assert sum(sizes) == n
        continue_with_due(env, twin, mode, list(range(n - sizes[-1], n)), list(range(n - sizes[-1])), why=f"stopped ({what.__name__})")
    finally:
        env.close()
        twin.close()


def test_a_split_batch_with_a_part_too_large_to_send_sends_none(server: LocalServer) -> None:
    """A step whose batch goes as two parts (32 sub-environments over the pipe) where the second part is larger than the
    client's ``max_message_bytes``: the step raises ``message_too_large`` and nothing is sent. The first part used to be
    sent (and run) before the second was refused, and its results were dropped: those 16 sub-environments stepped
    unseen, one step ahead of what the env returned."""
    if not server.endpoint.startswith("pipe"):
        pytest.skip("a batch of 32 is split over the pipe only")
    n = 32
    env, twin = make("text", server.endpoint, n=n), make("text", server.endpoint, n=n)
    try:
        for e in (env, twin):
            e.reset(seed=5)
        env.client.max_message_bytes = 100_000
        long = ["company status"] * 16 + ["x" * 16_000] * 16  # 256,224 characters: split in two parts
        with pytest.raises(ProtocolError) as err:
            env.step(long)
        assert err.value.code == "message_too_large" and not isinstance(err.value, VectorStepError)
        check_twins(env, twin)
    finally:
        env.close()
        twin.close()



@contextlib.contextmanager
def refusing_pair(kind: str, mode: str, server: LocalServer) -> Iterator[tuple[Any, Any]]:
    """An env on a server of its own with room for its ``N`` sessions only (so ``refuse_next_reset`` can have its next
    reset refused with ``session_limit``) and its twin on ``server``, both reset with seed 5 and stepped once alike;
    closed with the server at the end."""
    from gymnasium.vector import AutoresetMode

    am = AutoresetMode(mode)
    endpoint = "pipe" if server.endpoint.startswith("pipe") else "tcp://127.0.0.1:0"
    with LocalServer(endpoint, args=["--max-sessions", str(N)]) as small:
        env, twin = make(kind, small.endpoint, autoreset_mode=am), make(kind, server.endpoint, autoreset_mode=am)
        try:
            for e in (env, twin):
                e.reset(seed=5)
            step_both(env, twin, 0)
            yield env, twin
        finally:
            env.close()
            twin.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_reset_refused_for_one_sub_environment_leaves_the_ones_reset_due(kind: str, mode: str, server: LocalServer) -> None:
    """``reset()`` of three sub-environments: 0's is refused (``session_limit``: its session was lost, no room), 1's and
    2's are made on the server. The reset raises and puts every sub-environment back as it was (generators included),
    but 1 and 2 now hold new episodes there: they are due for a reset, so the next step resets them with the same seeds
    (their observations: the twin's reset ones; DISABLED: the step refuses them until they are reset). They used to be
    taken for their old episodes: the next step stepped the new ones, which the env had never returned, and their
    generators were not advanced for the seeds the server used."""
    spares: list[str] = []
    with refusing_pair(kind, mode, server) as (env, twin):
        before = rng_states(env)
        refuse_next_reset(env, spares)
        with pytest.raises(ProtocolError) as err:
            env.reset()
        assert err.value.code == "session_limit" and err.value.index == 0
        assert rng_states(env) == before
        env.client.close(session=spares.pop())
        first = np.array([True, False, False])
        rest = ~first
        env.reset(options={"reset_mask": first})  # 0 in a new session, the seed the twin's reset draws for it
        reset_obs = twin.reset()[0]
        acts = actions(twin, 1)
        if mode == "Disabled":
            with pytest.raises(EpisodeOverError) as over:
                env.step(acts)
            assert over.value.index == 1
            got_reset = env.reset(options={"reset_mask": rest})[0]
            assert same(rows(got_reset, [1, 2], N), rows(reset_obs, [1, 2], N))
            continue_alike(env, twin, mode)
            return
        got, want = env.step(acts), twin.step(acts)
        assert same_rows(got, want, [0], N)
        assert same(rows(got[0], [1, 2], N), rows(reset_obs, [1, 2], N))  # 1 and 2 reset again: the same worlds
        assert not got[1][1:].any() and not (got[2] | got[3]).any()
        assert rng_states(env) == rng_states(twin)
        for x in (env, twin):  # 1 and 2 are one step behind the twin's: both reset them alike
            x.reset(seed=9, options={"reset_mask": rest})
        continue_alike(env, twin, mode)


def test_the_example_of_docs_vector_md_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/vector.md's example (a session lost mid-run, the loop catching VectorStepError) runs as written and prints
    the line the page quotes."""
    from helpers import REPO

    doc = (REPO / "docs" / "vector.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", doc, re.S)
    assert code is not None
    exec(compile(code.group(1), "docs/vector.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["failed: {2: 'unknown_session'} stepped: [True, True, False, True]"]
    assert f"prints `{printed[0]}` once" in doc.replace("\n", " ")


def stop_next_reset(env: Any, what: type[BaseException], where: str) -> None:
    """Make the env's next ``reset`` stop with ``what`` (a Ctrl-C, a timeout). ``where``: "wait", once the resets are
    sent and the first reply is received, while it waits for the others (the server makes them all); "send", while its
    second reset request goes out (the first is sent and made; the second is not, though the env cannot know it)."""
    c = env.client
    if where == "send":
        send = c._send_payload
        sent: list[int] = []

        def hooked(rid: int, op: str, payload: bytes) -> None:
            if op == "reset":
                sent.append(rid)
                if len(sent) == 2:
                    del c._send_payload  # once
                    raise what("stopped while sending")
            send(rid, op, payload)

        c._send_payload = hooked
        return
    gather = c.gather

    def stopped(request_ids: Any, **kw: Any) -> Any:
        del c.gather  # once
        gather(request_ids[:1], **kw)
        c.abandon(request_ids[1:])  # as the real wait does when it is stopped
        raise what("stopped while waiting for the resets")

    c.gather = stopped


@pytest.mark.parametrize("mode", ["NextStep", "Disabled"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("what", "where"), [(TimeoutError, "wait"), (KeyboardInterrupt, "wait"), (KeyboardInterrupt, "send")])
def test_a_reset_stopped_midway_marks_the_sub_environments_it_may_have_reset_due(what: type[BaseException], where: str, kind: str, mode: str, server: LocalServer) -> None:
    """A ``reset()`` of three sub-environments stopped by a timeout or a Ctrl-C after some of its requests went out: the
    error propagates and every sub-environment is put back as it was, but those whose reset may have been made on the
    server hold new episodes there: they are due for a reset (the next step resets them with the seeds the reset drew:
    the twin's reset observations; DISABLED refuses to step them, saying why), the others step on. They used to be
    left as they were: the next step played the server's new episodes from the old observations."""
    from gymnasium.vector import AutoresetMode

    env, twin = started(kind, server.endpoint, autoreset_mode=AutoresetMode(mode))
    try:
        stop_next_reset(env, what, where)
        with pytest.raises(what):
            env.reset()
        due = [0, 1] if where == "send" else [0, 1, 2]
        continue_with_due(env, twin, mode, due, [i for i in range(N) if i not in due], why=f"reset was stopped ({what.__name__})")
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_reset_a_refused_reset_leaves_due_makes_the_episodes_asked_for(kind: str, mode: str, server: LocalServer) -> None:
    """``reset(seed=[21, 22, 23], options={"max_steps": 2})``: 0's reset is refused (``session_limit``), 1's and 2's are
    made on the server, so they are left due. The next step resets them with the seeds and options that reset asked
    for (the twin's observations of that reset; their generators seeded from 22 and 23, as a reset with those seeds
    seeds them), not with seeds drawn from their generators put back and the env's default options (other worlds than
    the ones asked for, episodes of another length)."""
    spares: list[str] = []
    with refusing_pair(kind, mode, server) as (env, twin):
        asked: dict[str, Any] = {"seed": [21, 22, 23], "options": {"max_steps": 2}}
        refuse_next_reset(env, spares)
        with pytest.raises(ProtocolError) as err:
            env.reset(**asked)
        assert err.value.code == "session_limit" and err.value.index == 0
        env.client.close(session=spares.pop())
        first = np.array([True, False, False])
        env.reset(seed=21, options={"reset_mask": first, "max_steps": 2})  # 0 again, in a new session
        reset_obs = twin.reset(**asked)[0]
        acts = actions(twin, 1)
        got, want = env.step(acts), twin.step(acts)
        assert same_rows(got, want, [0], N)
        assert same(rows(without_sessions(got[0]), [1, 2], N), rows(without_sessions(reset_obs), [1, 2], N))
        assert not got[1][1:].any() and not (got[2] | got[3])[1:].any()
        if kind == "text":
            assert env.seeds_used == twin.seeds_used == (21, 22, 23)
        # 1 and 2 are one step behind the twin's: reset them in the twin alike; then every episode (2 steps long),
        # and the automatic resets drawn from the generators, go on alike.
        twin.reset(seed=[0, 22, 23], options={"reset_mask": ~first, "max_steps": 2})
        continue_alike(env, twin, mode, steps=5)


def spoil_last_entry(env: Any, how: str) -> None:
    """Make the reply to the env's next ``step_batch`` request well-formed as a whole but its last entry's result one
    whose fields are wrong (as a broken proxy or a server of another version could send it; the server ran it):
    ``how``: "observation" (none), "reward" (not a number), "huge reward" (an integer no float holds), "huge info count"
    (an info ``reward_cents`` past int64), "info" (none), "status" (an observation without one), "discrete" (a Discrete
    observation without its frame)."""

    def spoil(reply: dict[str, Any]) -> None:
        entry = reply["result"]["results"][-1]["result"]
        if how == "reward":
            entry["reward"] = "much"
        elif how == "huge reward":
            entry["reward"] = 10**400
        elif how == "huge info count":
            entry["info"]["reward_cents"] = 2**70
        elif how in ("status", "discrete"):
            del entry["observation"][how]
        else:
            del entry[how]

    spoil_last_batch_reply(env, spoil)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "how"),
    [
        *(("text", how) for how in ("observation", "reward", "huge reward", "huge info count", "info", "status")),
        *(("discrete-json", how) for how in ("observation", "reward", "huge reward", "info", "discrete")),
    ],
)
def test_a_step_entry_with_wrong_fields_is_its_bad_reply(kind: str, how: str, mode: str, server: LocalServer) -> None:
    """A step whose reply is a well-formed list of entries, the last of which (sub-environment 2's) is a result with wrong
    fields: that entry fails alone (``bad_reply``, due for a reset: the server ran it) and the others are taken in, as
    for an entry that is neither a result nor an error. It used to raise a bare KeyError (or TypeError, ValueError)
    while the env took the results in, leaving it half-updated (2's observation replaced by the broken one, or the
    others' results dropped)."""
    from gymnasium.vector import AutoresetMode

    env, twin = started(kind, server.endpoint, autoreset_mode=AutoresetMode(mode))
    try:
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert not (want[2] | want[3]).any()
        spoil_last_entry(env, how)
        last_entry_fails_alone(env, twin, mode, acts, want)
    finally:
        env.close()
        twin.close()


DISCRETE_JSON_VALUES: dict[str, tuple[str, Any]] = {
    "obs str": ("obs", "5"),
    "obs null": ("obs", None),
    "obs true": ("obs", True),
    "obs past float": ("obs", 10**400),
    "mask int": ("mask", 1),
    "mask null": ("mask", None),
    "mask str": ("mask", "x"),
    "funds past int64": ("funds_cents", 2**63),
    "step past int64": ("step", -(2**63) - 1),
}
"""Values a Discrete JSON step result cannot hold (its frame is numbers, its mask booleans; the info's counts and amounts
int64 integers) that numpy converted without a word: ``"5"`` as 5.0, null as NaN (a mask's as false), true as 1.0, 1 or
``"x"`` as a true mask entry; or that made the step raise ``OverflowError`` after it had taken the results in."""

DISCRETE_BINARY_VALUES: dict[str, tuple[str, float]] = {
    "funds fraction": ("funds_cents", 1.5),
    "step NaN": ("step", float("nan")),
    "reward_cents infinite": ("reward_cents", float("inf")),
    "funds past int64": ("funds_cents", 2.0**63),
    "terminated byte 2": ("terminated", 2),
    "ok byte 2": ("ok", 2),
    "mask byte 2": ("mask", 2),
}
"""Values of a binary step reply's rows that the JSON reply of the same step could not hold, and its per-entry check
refuses (the info's counts and amounts are integers, the flags and mask booleans): the step took them in, a count or
amount truncated to an int64 (NaN and infinity to whatever the cast gives), a byte 2 as a true flag."""


def spoil_discrete_json_entry(key: str, value: Any) -> Any:
    """A ``spoil`` for :func:`spoil_last_batch_reply`: the last entry's first frame (``obs``) or mask value, or its info's
    ``key``, set to ``value``."""

    def spoil(reply: dict[str, Any]) -> None:
        result = reply["result"]["results"][-1]["result"]
        if key in ("obs", "mask"):
            result["observation"]["discrete"][key][0] = value
        else:
            result["info"][key] = value

    return spoil


def spoil_binary_row(name: str, value: float) -> Any:
    """A ``spoil`` for :func:`spoil_last_batch_reply` of a binary reply: the first value of the last row of its array
    ``name`` set to ``value`` (in the array's dtype: a float64 NaN, a byte 2 in a bool array)."""
    from ycgym.client import _ARRAYS

    def spoil(reply: dict[str, Any]) -> None:
        descs = reply["result"]["arrays"]
        k = [d["name"] for d in descs].index(name)
        a = np.frombuffer(reply[_ARRAYS][k], dtype=np.dtype(descs[k]["dtype"])).copy()
        a.reshape(descs[k]["shape"][0], -1)[-1, 0] = value
        frames = list(reply[_ARRAYS])
        frames[k] = a.tobytes()
        reply[_ARRAYS] = frames

    return spoil


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kind", "how"), [*(("discrete-json", h) for h in DISCRETE_JSON_VALUES), *(("discrete", h) for h in DISCRETE_BINARY_VALUES)])
def test_a_discrete_step_entry_with_a_value_of_the_wrong_type_is_its_bad_reply(kind: str, how: str, mode: str, server: LocalServer) -> None:
    """The Discrete vector env's step intake, with binary replies (the default) and JSON ones: sub-environment 2's result
    holds a value its protocol type does not allow (see ``DISCRETE_JSON_VALUES``, ``DISCRETE_BINARY_VALUES``). That
    entry fails alone (``bad_reply``, due for a reset: the server ran it) and the others are taken in, as for a missing
    field. numpy used to convert each without a word (the env took in a frame with a NaN, a mask entry ``"x"`` as
    valid, a fraction of a cent truncated), or to raise OverflowError after the env had taken the results in."""
    from gymnasium.vector import AutoresetMode

    env, twin = started(kind, server.endpoint, autoreset_mode=AutoresetMode(mode))
    try:
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert not (want[2] | want[3]).any()
        if kind == "discrete":
            spoil_last_batch_reply(env, spoil_binary_row(*DISCRETE_BINARY_VALUES[how]))
        else:
            spoil_last_batch_reply(env, spoil_discrete_json_entry(*DISCRETE_JSON_VALUES[how]))
        last_entry_fails_alone(env, twin, mode, acts, want)
    finally:
        env.close()
        twin.close()


def a_spoiled_reset_is_bad_reply(env: Any, twin: Any, mode: str, spoil: Any) -> None:
    """A seedless reset of the three sub-environments of ``env`` whose second reply ``spoil`` damages is ``bad_reply`` for
    entry 1, and every sub-environment is then due (a reset was made for each: the env cannot go on with them)."""
    spoil_reply(env, "reset", spoil, k=1)
    with pytest.raises(ProtocolError) as err:
        env.reset()
    assert err.value.code == "bad_reply" and err.value.index == 1, repr(err.value)
    continue_with_due(env, twin, mode, [0, 1, 2], [], why="bad_reply")


def unreadable(reply: dict[str, Any]) -> None:
    """The reply's bytes are not JSON (a broken proxy): what the client's decoder raises for them."""
    from ycgym.client import Client

    Client._decode([b"{not json"])


RESET_SPOILS = {
    "not json": unreadable,
    "no session": lambda reply: reply["result"].pop("session"),
    "no observation": lambda reply: reply["result"].pop("observation"),
    "no status": lambda reply: reply["result"]["observation"].pop("status"),
    "no frame": lambda reply: reply["result"]["observation"].pop("discrete", None) if "discrete" in reply["result"]["observation"] else reply["result"]["observation"].pop("text"),
    "tasks past int64": lambda reply: put_status_value(reply["result"]["observation"], "active_tasks", 2**63),
    "prestige past float": lambda reply: put_status_value(reply["result"]["observation"], "prestige", 10**400),
    "info count past int64": lambda reply: reply["result"]["info"].__setitem__("step", 2**63),
}
STATUS_SPOILS = ("no status", "tasks past int64", "prestige past float")  # the Discrete env reads no status block


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kind", "how"), [(k, h) for k in KINDS for h in RESET_SPOILS if k != "discrete" or h not in STATUS_SPOILS])
def test_a_reset_reply_that_cannot_be_read_is_bad_reply_and_leaves_its_sub_environment_due(kind: str, how: str, mode: str, server: LocalServer) -> None:
    """``reset()`` of three sub-environments whose second reply cannot be read (its bytes are not JSON, or its result
    lacks a field the env needs: the session, the observation, its status block, its frame or text): the server made
    that reset (and the others). The reset raises ``ProtocolError("bad_reply")`` naming sub-environment 1 and puts every
    sub-environment back as it was; all three hold new episodes on the server, so all are due for the reset asked for
    (the next step resets them: the twin's reset observations; DISABLED refuses to step them). An undecodable reply used
    to be taken for a refusal (the client's ``bad_json``: 1 not due, so the next step played the server's new episode
    from the old observation); a missing field raised a bare KeyError (the Discrete env after taking the others in)."""
    from gymnasium.vector import AutoresetMode

    env, twin = started(kind, server.endpoint, autoreset_mode=AutoresetMode(mode))
    try:
        a_spoiled_reset_is_bad_reply(env, twin, mode, RESET_SPOILS[how])
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("what", [TimeoutError, KeyboardInterrupt])
@pytest.mark.parametrize("kind", KINDS)
def test_a_lost_sessions_replacement_that_is_stopped_does_not_leak_its_session(kind: str, what: type[BaseException], server: LocalServer) -> None:
    """``reset()`` finds sub-environment 1's session lost (closed, reaped) and asks for a new session in its place; that
    request times out (or is interrupted) while the server makes the session all the same. Nobody knows that session's
    id, so it must not stay on the server: the client closes it once its late reply comes. It used to stay until the
    server's idle timeout, holding a place: on a server with room for the env's three sessions only, the retried reset
    then found no room for 1's replacement (``session_limit``)."""
    spares: list[str] = []
    with refusing_pair(kind, "NextStep", server) as (env, twin):
        c = env.client
        c.close(session=env.sessions[1])
        made: list[str] = []
        decode = c._decode

        def seen(frames: list[bytes]) -> dict[str, Any]:
            reply: dict[str, Any] = decode(frames)
            res = reply.get("result")
            if isinstance(res, dict) and isinstance(res.get("session"), str) and res["session"] not in env.sessions:
                made.append(res["session"])
            return reply

        # Stopped once the reset's N replies came (1's unknown_session among them), while it waits for the new session.
        stopped = stop_gather_after(c, N, what)
        c._decode = seen
        with pytest.raises(what):
            env.reset()
        assert "recv" not in c.__dict__ and stopped[0] in c._orphaned  # a new session's request, abandoned
        env.reset()  # reads the late reply first (its new session closed), then makes 1's replacement: there is room
        del c._decode
        assert made and made[0] not in env.sessions, (made, env.sessions)
        with pytest.raises(ProtocolError) as gone:
            c.close(session=made[0])
        assert gone.value.code == "unknown_session"
        twin.reset()
        check_twins(env, twin)
    assert not spares


CONVERTIBLE: dict[str, tuple[str, Any]] = {
    "funds str": ("funds_cents", "5"),
    "funds null": ("funds_cents", None),
    "funds true": ("funds_cents", True),
    "funds float": ("funds_cents", 5.5),
    "payroll str": ("monthly_payroll_cents", "5"),
    "tasks float": ("active_tasks", 1.5),
    "tasks true": ("completed_tasks", True),
    "runway str": ("runway_months", "5"),
    "runway true": ("runway_months", True),
    "prestige str": ("prestige", "5"),
    "trust true": ("trust", True),
}
"""Status values of a type the protocol does not give them that numpy (``np.fromiter``, ``float``) converts without a
word: the full check (``check_observation``) rejects each, and the batch's encoding used to take them (``"5"`` as 5.0,
null as NaN, true as 1, 1.5 tasks as 1), so such an entry was taken in unless another entry of the same batch was
malformed in a way the encoding noticed (then the full check ran and failed it too)."""

OUT_OF_RANGE: dict[str, tuple[str, Any]] = {
    "tasks past int64": ("active_tasks", 2**63),
    "funds past int64": ("funds_cents", 2**70),
    "payroll below int64": ("monthly_payroll_cents", -(2**63) - 1),
    "exit code past int64": ("exit_code", 2**64),
    "prestige past float": ("prestige", 10**400),
    "trust past float": ("trust", -(10**400)),
    "runway past float": ("runway_months", 10**400),
}
"""Integers of the right type that no int64 (the status counts and amounts, the exit code) or float64 (prestige, trust,
runway) holds: the encoding of the batch raised ``OverflowError``, which neither the step's intake nor its full check
(``check_observation`` passed them) took for a malformed entry, so it escaped the step (or the reset) after the env had
taken the observation in (every later step failed the same way)."""


def put_status_value(obs: dict[str, Any], key: str, value: Any) -> None:
    """Put ``value`` at ``key`` of an observation: its ``exit_code``, a status field, or (prestige, trust) the first value
    of that status object."""
    st = obs["status"]
    if key == "exit_code":
        obs[key] = value
    elif key in ("prestige", "trust"):
        st[key][next(iter(st[key]))] = value
    else:
        st[key] = value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["funds", "prestige", "trust", "tasks", "time", "ok", *CONVERTIBLE, *OUT_OF_RANGE])
def test_a_step_entry_with_a_malformed_status_block_is_its_bad_reply(how: str, mode: str, server: LocalServer) -> None:
    """Like ``test_a_step_entry_with_wrong_fields_is_its_bad_reply``, deeper: sub-environment 2's result has a status
    block the text env cannot encode (no ``funds_cents``, a prestige that is not a number, a client's trust missing, a
    task count that is not an integer, a ``sim_time`` that is no time) or an ``ok`` that is not a boolean. That entry
    fails alone (``bad_reply``, due for a reset) and the others are taken in. It used to pass the entry's checks and fail
    later, in ``encode_batch`` or the info's building, with a bare KeyError/ValueError/TypeError, after the env had
    taken the broken observation in (every later step failed the same way)."""
    from gymnasium.vector import AutoresetMode

    def spoil(reply: dict[str, Any]) -> None:
        obs = reply["result"]["results"][-1]["result"]["observation"]
        st = obs["status"]
        if how == "funds":
            del st["funds_cents"]
        elif how == "prestige":
            st["prestige"][next(iter(st["prestige"]))] = "high"
        elif how == "trust":
            del st["trust"][next(iter(st["trust"]))]
        elif how == "tasks":
            st["active_tasks"] = "two"
        elif how == "time":
            st["sim_time"] = "yesterday"
        elif how in CONVERTIBLE:
            key, value = CONVERTIBLE[how]
            if key in ("prestige", "trust"):
                st[key][next(iter(st[key]))] = value
            else:
                st[key] = value
        elif how in OUT_OF_RANGE:
            put_status_value(obs, *OUT_OF_RANGE[how])
        else:
            obs["ok"] = "yes"

    env, twin = started("text", server.endpoint, autoreset_mode=AutoresetMode(mode))
    try:
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert not (want[2] | want[3]).any()
        spoil_last_batch_reply(env, spoil)
        last_entry_fails_alone(env, twin, mode, acts, want)
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_usual_text_vector_step_does_not_check_each_observation_in_full(mode: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The full check of an observation (``check_observation``, a few microseconds each) finds the entry a malformed
    status block spoils (see the test above); a step whose every entry is well formed must not pay it for each entry:
    the batch's encoding, which the step makes anyway, is what finds that one is malformed. Every step used to run it on
    every entry (an eighth of a 64-session step's time). Resets (once an episode) keep it."""
    import ycgym.spaces
    import ycgym.vector

    calls: list[int] = []
    check = ycgym.spaces.check_observation  # where it lives (ycgym.vector imports it: the name patched below)

    def counted(obs: Any, params: Any) -> None:
        calls.append(1)
        check(obs, params)

    env, twin = started("text", server.endpoint, autoreset_mode=gym.vector.AutoresetMode(mode))
    try:
        monkeypatch.setattr(ycgym.vector, "check_observation", counted)
        for t in range(4):
            step_both(env, twin, t)
        assert not calls, f"check_observation ran {len(calls)} times in 4 steps of {N} sub-environments"
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["funds", "extra prestige"])
def test_a_malformed_status_block_next_to_ending_episodes_and_automatic_resets_fails_alone(how: str, mode: str, server: LocalServer) -> None:
    """The malformed status block of ``test_a_step_entry_with_a_malformed_status_block_is_its_bad_reply`` in a step that
    also makes an automatic reset (NEXT_STEP: sub-environment 0's, its episode ended at the last step) and ends episodes
    (``max_steps``: 1's and 2's; SAME_STEP resets 1 in the step). The status block lacks ``funds_cents`` (the batch's
    encoding fails) or has an extra prestige value that is no number (the infos fail). The step fails 2 alone
    (``bad_reply``, due, its reward and flags zero, not reset in the step) and takes the others in as the twin does (1's
    same-step reset too); 0's automatic reset is undone (still due, its generator untouched), as for any failed entry."""
    from gymnasium.vector import AutoresetMode

    am = AutoresetMode(mode)
    env, twin = make("text", server.endpoint, max_steps=3, autoreset_mode=am), make("text", server.endpoint, max_steps=3, autoreset_mode=am)
    try:
        offset_start(env, twin)
        step_both(env, twin, 2)  # 0's episode ends
        if mode == "Disabled":
            for x in (env, twin):
                x.reset(options={"reset_mask": np.array([True, False, False])})

        def spoil(reply: dict[str, Any]) -> None:
            st = reply["result"]["results"][-1]["result"]["observation"]["status"]
            if how == "funds":
                del st["funds_cents"]
            else:
                st["prestige"]["no such domain"] = "high"

        generators = rng_states(env)
        acts = actions(twin, 3)
        want = twin.step(acts)
        assert (want[3][1:]).all()  # 1's and 2's episodes end
        spoil_last_batch_reply(env, spoil)
        with pytest.raises(VectorStepError) as err:
            env.step(acts)
        e = err.value
        assert e.code == "bad_reply" and list(e.errors) == [2] and "malformed result" in str(e.errors[2]), e
        ran = [1] if mode == "NextStep" else [0, 1]
        assert e.stepped.tolist() == [i in ran for i in range(N)]
        assert same_rows(e.result, want, ran, N)
        assert e.result[1][2] == 0 and not e.result[2][2] and not e.result[3][2]
        assert "final_obs" not in e.result[4] or e.result[4]["final_obs"][2] is None
        due = {"NextStep": [True, True, True], "SameStep": [False, False, True], "Disabled": [False, True, True]}[mode]
        assert env._autoreset_envs.tolist() == due
        if mode == "NextStep":
            assert rng_states(env)[0] == generators[0]  # 0's automatic reset undone: the same seed is drawn again
        for x in (env, twin):
            x.reset(seed=11)
        continue_alike(env, twin, mode, steps=3)
    finally:
        env.close()
        twin.close()


def test_a_malformed_status_block_taken_in_by_a_step_stopped_while_waiting_is_put_back(server: LocalServer) -> None:
    """A step whose entry 2 has a malformed status block (no ``funds_cents``) is stopped (Ctrl-C) while it waits for
    the automatic reset behind the batch: the step never builds its observations, so the full check runs there on the
    entries it took in: 2 is put back as it was (its last observation) and due for a reset (``bad_reply``), and the env
    can encode its observations (a later step's error result encodes them all)."""
    from gymnasium.vector import AutoresetMode

    am = AutoresetMode.NEXT_STEP
    env, twin = make("text", server.endpoint, max_steps=3, autoreset_mode=am), make("text", server.endpoint, max_steps=3, autoreset_mode=am)
    try:
        offset_start(env, twin)
        step_both(env, twin, 2)  # 0's episode ends: the next step resets it, behind the batch of 1 and 2
        last = env._obs[2]
        spoil_last_batch_reply(env, lambda reply: reply["result"]["results"][-1]["result"]["observation"]["status"].pop("funds_cents"))
        stop_next_reset(env, KeyboardInterrupt, "wait")
        with pytest.raises(KeyboardInterrupt):
            env.step(actions(twin, 3))
        assert env._obs[2] is last
        assert env._autoreset_envs[2] and "bad_reply" in str(env._owed[2][2])
        env._batch_obs()  # no KeyError
        for x in (env, twin):
            x.reset(seed=11)
        continue_alike(env, twin, "NextStep", steps=3)
    finally:
        env.close()
        twin.close()


DISCRETE_LIST_VALUES: dict[str, tuple[str, Any]] = {
    "admissible a string": ("admissible_commands", "company status"),
    "admissible an object": ("admissible_commands", {"company status": 1}),
    "admissible null": ("admissible_commands", None),
    "admissible an int in the list": ("admissible_commands", ["company status", 7]),
    "action_text an int": ("action_text", 7),
    "action_text a list": ("action_text", ["company", "status"]),
}
"""Values of a Discrete JSON step result's info texts and lists its protocol type does not allow (``admissible_commands``
a list of strings, ``action_text`` a string): the env took them in as they came (``list()`` made a string a list of
its characters, an object a list of its keys; a null read as absent)."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", DISCRETE_LIST_VALUES)
@pytest.mark.parametrize("kind", ["discrete-json", "text"])
def test_a_step_entry_with_malformed_admissible_commands_is_its_bad_reply(kind: str, how: str, mode: str, server: LocalServer) -> None:
    """The Discrete vector env with JSON replies, and the text vector env (which passed them through unchecked), with
    the ``admissible_commands`` reset option: sub-environment 2's result has an ``admissible_commands`` (``action_text``)
    of the wrong type. That entry fails alone (``bad_reply``, due for a reset) and the others are taken in, as for any
    malformed value of an entry."""
    from gymnasium.vector import AutoresetMode

    env, twin = started(kind, server.endpoint, autoreset_mode=AutoresetMode(mode), reset_options={"admissible_commands": True})
    try:
        acts = actions(twin, 1)
        want = twin.step(acts)
        assert not (want[2] | want[3]).any()
        spoil_last_batch_reply(env, spoil_discrete_json_entry(*DISCRETE_LIST_VALUES[how]))
        last_entry_fails_alone(env, twin, mode, acts, want)
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", [h for h in DISCRETE_LIST_VALUES if h.startswith("admissible")])
def test_a_text_vector_reset_reply_with_malformed_admissible_commands_is_bad_reply(how: str, mode: str, server: LocalServer) -> None:
    """The text vector env with the ``admissible_commands`` reset option: a reset reply whose ``admissible_commands`` is
    of the wrong type is ``bad_reply`` naming its sub-environment, as any malformed reset reply is (it was passed into
    the info as it came), and every sub-environment is due for the reset asked for."""
    from gymnasium.vector import AutoresetMode

    env, twin = started("text", server.endpoint, autoreset_mode=AutoresetMode(mode), reset_options={"admissible_commands": True})
    try:
        key, value = DISCRETE_LIST_VALUES[how]
        a_spoiled_reset_is_bad_reply(env, twin, mode, lambda reply: reply["result"]["info"].__setitem__(key, value))
    finally:
        env.close()
        twin.close()


def count_reset_requests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each request group the clients send for ``reset`` from now on (one ``send_all``: its requests, one
    round trip; a lone request, ``Client.request``: 1), as test_sharded.py counts them."""
    from ycgym import Client

    sent: list[int] = []
    request, send_all = Client.request, Client.send_all

    def one(self: Any, op: str, **fields: Any) -> Any:
        if op == "reset":
            sent.append(1)
        return request(self, op, **fields)

    def many(self: Any, op: str, requests: Any, ids: Any = None) -> Any:
        requests = list(requests)
        if op == "reset":
            sent.append(len(requests))
        return send_all(self, op, requests, ids)

    monkeypatch.setattr(Client, "request", one)
    monkeypatch.setattr(Client, "send_all", many)
    return sent


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_lost_sessions_are_replaced_in_one_round_trip(kind: str, masked: bool, server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset of 12 sub-environments of which 7 lost their sessions (closed, as the server's idle timeout reaps them):
    the 7 replacements go out together (one ``send_all`` after the reset's own: two round trips in all), and the env
    returns what a fresh env returns for the same seeds (a masked reset: for the sub-environments it covers), then steps
    as it does over the episodes' ends. Each replacement used to be a round trip of its own."""
    n = 12
    lost = [0, 2, 3, 5, 7, 10, 11]
    env, twin = started(kind, server.endpoint, steps=1, n=n, max_steps=3)
    try:
        before = env.sessions
        for i in lost:
            env.client.close(session=env.sessions[i])
        mask = np.array([i != 4 and i != 7 for i in range(n)]) if masked else np.ones(n, dtype=np.bool_)
        options = {"reset_mask": mask} if masked else None
        sent = count_reset_requests(monkeypatch)
        got = env.reset(seed=21, options=options)
        monkeypatch.undo()
        replaced = [i for i in lost if mask[i]]
        assert sent == [int(mask.sum()), len(replaced)]
        want = twin.reset(seed=21, options=options)
        assert same(without_sessions(got), without_sessions(want))
        assert [i for i in range(n) if env.sessions[i] != before[i]] == replaced
        assert len(set(env.sessions)) == n
        if masked:  # 7's session is still lost: a step fails it alone; a reset of it makes it a new one
            with pytest.raises(VectorStepError) as err:
                env.step(actions(twin, 0))
            assert list(err.value.errors) == [7] and err.value.errors[7].code == "unknown_session"
            twin.step(actions(twin, 0))
            for e in (env, twin):
                e.reset(seed=3)
        check_twins(env, twin, steps=5)
    finally:
        env.close()
        twin.close()


def stop_gather_after(c: Any, replies: int, what: type[BaseException]) -> list[int]:
    """Make client ``c`` stop (``what``: Ctrl-C, a timeout) while it waits for a reply, once it has received
    ``replies`` more (as a real wait is stopped: that request abandoned, its reply dropped when it comes). Returns the
    list of the requests it then stopped on (one)."""
    recv = c.recv
    taken: list[int] = []
    stopped: list[int] = []

    def hooked(request_id: Any, timeout: Any = None) -> Any:
        if len(taken) == replies:
            del c.recv  # once
            stopped.append(request_id)
            c.abandon([request_id])  # as the real wait does when it is stopped
            raise what("stopped while waiting for a reply")
        taken.append(request_id)
        return recv(request_id, timeout)

    c.recv = hooked
    return stopped


def live_sessions(c: Any, room: int) -> int:
    """How many sessions a server with room for ``room`` holds: ``room`` less the sessions client ``c`` can still make
    there (made, then closed), once the late replies to its abandoned requests have come (their new sessions closed)."""
    c.hello()  # its reply comes after those of every request sent before it
    c.hello()  # and this one's after the closes sent while waiting for the first
    made: list[str] = []
    try:
        while len(made) <= room:
            try:
                made.append(c.reset(0)["session"])
            except ProtocolError as e:
                assert e.code == "session_limit", e
                break
    finally:
        for s in made:
            c.close(session=s)
    return room - len(made)


class _RoomySource:
    """A :class:`ycgym._backend.ServerSource` as a sharded env's shard has one: a local server (pipe) with room for
    ``room`` sessions, a new one in its place once it has exited."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.server = LocalServer("pipe", args=["--max-sessions", str(room)])

    def acquire(self) -> LocalServer:
        if not self.server.running:
            self.server.close()
            self.server = LocalServer("pipe", args=["--max-sessions", str(self.room)])
        return self.server

    def release(self, server: LocalServer) -> None:
        pass  # closed by the test

    def kill(self) -> None:
        import os
        import signal

        os.kill(self.server.pid, signal.SIGKILL)
        self.server._proc.wait()


@pytest.mark.parametrize("what", [KeyboardInterrupt, TimeoutError])
@pytest.mark.parametrize("kind", KINDS)
def test_a_reset_stopped_after_some_new_sessions_came_leaks_none_after_a_restart(kind: str, what: type[BaseException], server: LocalServer) -> None:
    """The env's local server restarted (killed; the next reset starts a new one with room for the env's 4 sessions):
    a reset makes 4 new sessions, and is stopped (Ctrl-C, a timeout) after 2 replies came. Every session the server
    made is the env's (the 2 whose replies came: ``sessions`` names them) or closed (the 2 abandoned, by the client
    when their late replies come): the server holds exactly the env's sessions, and the next reset finds room for the
    other 2. The 2 received used to be dropped with the gather's partial results: they stayed open, unknown, until
    the client disconnected, and the retried reset found no room (``session_limit``)."""
    if not server.endpoint.startswith("pipe"):
        pytest.skip("the env's own local server is a pipe's")
    n = 4
    source = _RoomySource(n)
    twin = make(kind, server.endpoint, n=n, max_steps=3)
    try:
        env = make(kind, source.server.endpoint, n=n, max_steps=3)
        try:
            env._serve_from(source)
            for e in (env, twin):
                e.reset(seed=5)
            source.kill()
            env._ensure_server()  # what reset does first: the new server, no session yet
            assert env.sessions == (None,) * n
            stopped = stop_gather_after(env.client, 2, what)
            with pytest.raises(what):
                env.reset(seed=9)
            assert stopped and "recv" not in env.client.__dict__
            held = [s for s in env.sessions if s is not None]
            assert len(held) == 2
            assert live_sessions(env.client, n) == 2
            for e in (env, twin):
                e.reset(seed=9)
            check_twins(env, twin)
        finally:
            env.close()
    finally:
        twin.close()
        source.server.close()


@pytest.mark.parametrize("what", [KeyboardInterrupt, TimeoutError])
@pytest.mark.parametrize("kind", KINDS)
def test_lost_sessions_replacements_stopped_after_some_came_leak_none(kind: str, what: type[BaseException], server: LocalServer) -> None:
    """A reset finds all 4 sessions lost (closed) and makes 4 new ones in their place (pipelined), stopped (Ctrl-C, a
    timeout) after 2 of those replies came: the server holds exactly the env's sessions (the 2 new ones it took in;
    the 2 abandoned closed once their replies come), and the next reset goes on as a fresh env's."""
    n = 4
    endpoint = "pipe" if server.endpoint.startswith("pipe") else "tcp://127.0.0.1:0"
    with LocalServer(endpoint, args=["--max-sessions", str(n)]) as small:
        env, twin = make(kind, small.endpoint, n=n, max_steps=3), make(kind, server.endpoint, n=n, max_steps=3)
        try:
            for e in (env, twin):
                e.reset(seed=5)
            old = env.sessions
            for s in old:
                env.client.close(session=s)
            stop_gather_after(env.client, n + 2, what)  # the n unknown_session replies, then 2 new sessions
            with pytest.raises(what):
                env.reset(seed=9)
            held = [s for s in env.sessions if s not in old]
            assert len(held) == 2
            assert live_sessions(env.client, n) == 2
            for e in (env, twin):
                e.reset(seed=9)
            check_twins(env, twin)
        finally:
            env.close()
            twin.close()


@pytest.mark.parametrize("kind", KINDS)
def test_lost_sessions_replacements_refused_in_part_raise_the_first_and_keep_the_made_ones(kind: str, server: LocalServer) -> None:
    """``reset(seed=[21, 22, 23])`` finds 0's and 2's sessions lost, on a server with room for one more session: their
    replacements go out together; 0's is made, 2's refused (``session_limit``). The reset raises 2's error (``index``
    2), puts every sub-environment back as it was (generators included); 0's new session is the env's, 2 keeps its lost
    id (the next reset tries anew), and 0 and 1, whose resets the server made, are due for that reset. The next full
    reset, with room again, returns what the twin's returns, and both go on alike."""
    spares: list[str] = []
    with refusing_pair(kind, "NextStep", server) as (env, twin):
        c = env.client
        old = env.sessions
        c.close(session=old[0])
        c.close(session=old[2])
        spares.append(c.reset(0)["session"])  # room for one new session only
        before = rng_states(env)
        with pytest.raises(ProtocolError) as err:
            env.reset(seed=[21, 22, 23])
        assert err.value.code == "session_limit" and err.value.index == 2
        assert rng_states(env) == before
        assert env.sessions[0] not in old and env.sessions[1:] == old[1:]
        assert env._due_flags().tolist() == [True, True, False]
        c.close(session=spares.pop())
        assert same(without_sessions(env.reset(seed=[21, 22, 23])), without_sessions(twin.reset(seed=[21, 22, 23])))
        assert env.sessions[2] not in old
        continue_alike(env, twin, "NextStep")
