"""Gymnasium conformance of the environments beyond ``check_env``: a refused reset changes nothing (``np_random``
included), ``render()`` behaves as ``metadata["render_modes"]`` declares (as Gymnasium's own envs and
``SyncVectorEnv`` do)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
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
    """A vector reset refused before anything is sent (a sub-environment's seed ``seed + i`` past ``2**53 - 1``) leaves
    every sub-environment's generator, and the vector env's ``np_random``, as they were: sub-environment 0's used to be
    re-seeded with the refused seed (and the text vector env's own ``np_random`` too), so the next seedless reset drew
    other worlds than it would have."""
    env, twin = make(2), make(2)
    try:
        for e in (env, twin):
            e.reset(seed=5)
        before = _rng_state(env)
        with pytest.raises(ValueError, match="not a protocol seed"):
            env.reset(seed=2**53 - 1)
        assert _rng_state(env)[1:] == before[1:]
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
        assert capsys.readouterr().out == env.unwrapped._last_text + "\n"
        obs = env.step("client list")[0]
        assert "Cortex" in obs["text"] and capsys.readouterr().out == obs["text"] + "\n"
        assert env.render() is None and capsys.readouterr().out == obs["text"] + "\n"
    finally:
        env.close()
