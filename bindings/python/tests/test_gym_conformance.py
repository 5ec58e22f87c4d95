"""Gymnasium conformance of the environments beyond ``check_env``: a refused reset changes nothing (``np_random``
included), ``render()`` behaves as ``metadata["render_modes"]`` declares (as Gymnasium's own envs and
``SyncVectorEnv`` do)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from helpers import same
from ycgym import ProtocolError, YCBenchDiscreteEnv, YCBenchDiscreteVectorEnv, YCBenchEnv, YCBenchVectorEnv

# Resets every env refuses: a seed the protocol cannot carry (the server's refusal), options the server refuses, a split
# that does not exist (refused here, after the reset seed was taken).
REFUSED: list[dict[str, Any]] = [
    {"seed": 2**53},
    {"seed": 2**64 + 5},
    {"seed": 11, "options": {"start_date": "not a date"}},
    {"options": {"start_date": "not a date"}},
    {"seed": 12, "options": {"split": "no such split"}},
    {"options": {"split": "no such split"}},
]


def _rng_state(env: gym.Env[Any, Any]) -> tuple[Any, Any, Any]:
    gen = env.unwrapped._np_random
    return gen, None if gen is None else gen.bit_generator.state, env.unwrapped._np_random_seed


def _without_session(result: tuple[Any, ...]) -> tuple[Any, ...]:
    """A step's result with ``info["session"]`` left out (two envs' sessions differ)."""
    *rest, info = result
    return (*rest, {k: v for k, v in info.items() if k != "session"})


@pytest.mark.parametrize("make", [YCBenchEnv, YCBenchDiscreteEnv], ids=["text", "discrete"])
def test_a_refused_reset_leaves_the_env_and_its_np_random_as_they_were(make: Callable[[], Any]) -> None:
    """``reset(seed=S)`` refused (by the server: ``S >= 2**53``, a bad option; or here: an unknown split) raises and changes
    nothing: ``np_random`` is the same generator in the same state with the same ``np_random_seed`` (it used to be
    re-seeded with ``S``, or advanced by the draw of a seed, before the request was refused), and the episode goes on
    where it was (its next step is the one it would have taken; the next seedless reset draws what it would have)."""
    env, twin = make(), make()
    try:
        for e in (env, twin):
            e.reset(seed=3)
        action = "sim resume" if isinstance(env, YCBenchEnv) else 0
        assert same(_without_session(env.step(action)), _without_session(twin.step(action)))
        before = _rng_state(env)
        snap = env.snapshot()
        for bad in REFUSED:
            with pytest.raises((ProtocolError, ValueError)):
                env.reset(**bad)
            gen, state, seed = _rng_state(env)
            assert gen is before[0] and state == before[1] and seed == before[2], bad
            assert env.seed_used == twin.seed_used == 3, bad
        assert env.snapshot() == snap
        assert same(_without_session(env.step(action)), _without_session(twin.step(action)))
        env.reset()
        twin.reset()
        assert env.seed_used == twin.seed_used
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize("make", [YCBenchVectorEnv, YCBenchDiscreteVectorEnv], ids=["text", "discrete"])
def test_a_refused_vector_reset_leaves_the_sub_environments_generators_as_they_were(make: Callable[..., Any]) -> None:
    """A vector reset refused (a sub-environment's seed ``seed + i`` past ``2**53 - 1``, refused before anything is sent;
    options the server refuses for every sub-environment; an unknown split) leaves every sub-environment's generator,
    and the vector env's ``np_random``, as they were: sub-environment 0's used to be re-seeded with the refused seed (and
    the text vector env's own ``np_random`` too), so the next seedless reset drew other worlds than it would have."""
    env, twin = make(2), make(2)
    try:
        for e in (env, twin):
            e.reset(seed=5)
        before = _rng_state(env)
        with pytest.raises(ValueError, match="not a protocol seed"):
            env.reset(seed=2**53 - 1)
        assert _rng_state(env)[1:] == before[1:]
        for bad in REFUSED[2:]:
            with pytest.raises((ProtocolError, ValueError)):
                env.reset(**bad)
            assert _rng_state(env)[1:] == before[1:], bad
        got, want = env.reset(), twin.reset()
        assert same(got[0], want[0])
        assert [s.bit_generator.state for s in env._rngs] == [s.bit_generator.state for s in twin._rngs]
    finally:
        env.close()
        twin.close()


def test_the_text_env_in_human_mode_prints_every_reset_and_step(capsys: pytest.CaptureFixture[str]) -> None:
    """``render_mode="human"`` renders as Gymnasium's human mode does: during ``reset`` and ``step``, without a call to
    ``render()`` (it used to print only when ``render()`` was called, so ``gym.make(..., render_mode="human")`` showed
    nothing)."""
    env = YCBenchEnv(render_mode="human")
    try:
        capsys.readouterr()
        env.reset(seed=1)
        assert capsys.readouterr().out == env._last_text + "\n"
        obs = env.step("client list")[0]
        assert "Cortex" in obs["text"] and capsys.readouterr().out == obs["text"] + "\n"
        assert env.render() is None and capsys.readouterr().out == obs["text"] + "\n"
    finally:
        env.close()


@pytest.mark.parametrize("render_mode", [None, "ansi"])
@pytest.mark.parametrize("make,single", [(YCBenchVectorEnv, YCBenchEnv), (YCBenchDiscreteVectorEnv, YCBenchDiscreteEnv)], ids=["text", "discrete"])
def test_vector_render_is_sync_vector_envs(make: Callable[..., Any], single: Callable[..., Any], render_mode: str | None) -> None:
    """The vector envs take ``render_mode`` and ``render()`` returns what ``SyncVectorEnv`` of the single env returns: a
    tuple of the sub-environments' renders (``None`` each without a render mode). The Discrete vector env used to take
    no ``render_mode`` and raise ``NotImplementedError``; the text one returned ``None`` instead of a tuple."""
    from gymnasium.vector import SyncVectorEnv

    ours = make(2, render_mode=render_mode)
    ref = SyncVectorEnv([lambda: single(render_mode=render_mode) for _ in range(2)])
    try:
        assert ours.render_mode == ref.render_mode == render_mode
        assert ours.metadata == ref.metadata
        ours.reset(seed=[1, 2])
        ref.reset(seed=[1, 2])
        assert ours.render() == ref.render()
        if make is YCBenchVectorEnv:
            acts: Any = ["client list", "employee list"]
        else:
            acts = np.array([int(np.flatnonzero(m)[-1]) for m in ours.action_masks()])
        ours.step(acts)
        ref.step(acts)
        got = ours.render()
        assert got == ref.render() and isinstance(got, tuple) and len(got) == 2
        if render_mode == "ansi":
            assert all(isinstance(t, str) and t for t in got)
    finally:
        ours.close()
        ref.close()


def test_make_vec_passes_render_mode_to_the_discrete_vector_env() -> None:
    """``gymnasium.make_vec("ycgym/YCBench-Discrete-v0", render_mode="ansi")`` builds the batched env with that mode."""
    v = gym.make_vec("ycgym/YCBench-Discrete-v0", num_envs=2, render_mode="ansi")
    try:
        assert v.render_mode == "ansi"
        v.reset(seed=0)
        texts = v.render()
        assert isinstance(texts, tuple) and len(texts) == 2
    finally:
        v.close()


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_the_discrete_vector_infos_name_each_sub_environments_current_session(encoding: str) -> None:
    """``info["session"]`` (as ``SyncVectorEnv`` of ``YCBenchDiscreteEnv`` carries it) is each sub-environment's current
    session, also after the server lost one (closed, reaped) and a reset made a new one in its place."""
    v = YCBenchDiscreteVectorEnv(3, encoding=encoding)
    try:
        _, info = v.reset(seed=0)
        assert info["session"].tolist() == list(v.sessions) and info["_session"].all()
        _, _, _, _, info = v.step(np.zeros(3, dtype=np.int64))
        assert info["session"].tolist() == list(v.sessions)
        lost = v.sessions[1]
        v.client.close(session=lost)
        _, info = v.reset(seed=0, options={"reset_mask": np.array([False, True, False])})
        assert v.sessions[1] != lost and info["session"].tolist() == [None, v.sessions[1], None]
        assert info["_session"].tolist() == [False, True, False]
        _, _, _, _, info = v.step(np.zeros(3, dtype=np.int64))
        assert info["session"].tolist() == list(v.sessions) and lost not in info["session"].tolist()
    finally:
        v.close()
