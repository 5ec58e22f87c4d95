"""Vector envs: a refused ``reset`` (or a failed automatic reset inside ``step``) leaves every sub-environment as it was.

Each test runs an env next to a twin that never sees the refused call: after the refusal both take the same steps and
must return the same results (sessions left out), and their next seedless resets must draw the same seeds. Both vector
envs, over both transports (the envs' own pipe server and a ZeroMQ endpoint).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from helpers import same
from ycgym import LocalServer, ProtocolError, YCBenchDiscreteVectorEnv, YCBenchVectorEnv

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


def started(kind: str, endpoint: str, **kw: Any) -> tuple[Any, Any]:
    env, twin = make(kind, endpoint, **kw), make(kind, endpoint, **kw)
    for e in (env, twin):
        e.reset(seed=5)
    for t in range(2):
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
            e.reset(seed=[3, 4])
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
