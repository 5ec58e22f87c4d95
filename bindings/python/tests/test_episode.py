"""The one Python episode loop (``ycgym.run_episode``): ends as the env says, or by max_steps / the policy."""

from __future__ import annotations

from typing import Any

import pytest

import ycgym
from ycgym import run_episode
from ycgym.policies import DiscreteGreedy


def test_run_episode_ends_with_the_env_and_watches_every_step(endpoint: str) -> None:
    env = ycgym.YCBenchDiscreteEnv(endpoint=endpoint)
    seen: list[int] = []
    try:
        first: list[Any] = []
        end = run_episode(env, lambda obs, info: int(info["action_mask"].nonzero()[0][0]), seed=3, on_reset=lambda o, i: first.append(i), on_step=lambda t: seen.append(t.step))
        assert first and seen == list(range(1, end.steps + 1))
        assert end.terminated or end.truncated
        assert end.info["terminal_reason"] is not None
        # max_steps and a policy returning None stop early, marked truncated.
        short = run_episode(env, lambda obs, info: 0, seed=3, max_steps=2)
        assert (short.steps, short.terminated, short.truncated) == (2, False, True)
        none = run_episode(env, lambda obs, info: None, seed=3)
        assert (none.steps, none.truncated, none.total_reward) == (0, True, 0.0)
    finally:
        env.close()


def test_run_episode_goes_on_from_a_started_env(endpoint: str) -> None:
    """``start=(obs, info)``: the loop continues an env that is already under way (no reset, no on_reset) and plays
    the same steps as one uninterrupted episode."""
    whole_env = ycgym.YCBenchDiscreteEnv(endpoint=endpoint)
    env = ycgym.YCBenchDiscreteEnv(endpoint=endpoint)
    greedy = DiscreteGreedy(env.discrete_spec)

    def policy(obs: Any, info: Any) -> int:
        return greedy.act(obs, info["action_mask"])

    try:
        whole: list[Any] = []
        full = run_episode(whole_env, policy, seed=5, options={"max_steps": 60}, on_step=lambda t: whole.append((t.action, t.reward, t.info["funds_cents"])))
        head: list[Any] = []
        first = run_episode(env, policy, seed=5, options={"max_steps": 60}, max_steps=25, on_step=lambda t: head.append((t.action, t.reward, t.info["funds_cents"])))
        assert first.steps == 25 and not first.terminated
        resets: list[Any] = []
        tail: list[Any] = []
        rest = run_episode(env, policy, start=(first.obs, first.info), on_reset=lambda o, i: resets.append(i), on_step=lambda t: tail.append((t.action, t.reward, t.info["funds_cents"])))
        assert resets == []
        assert head + tail == whole
        assert rest.steps == full.steps - 25
        assert (rest.terminated, rest.truncated) == (full.terminated, full.truncated)
    finally:
        env.close()
        whole_env.close()


def test_run_episode_checks_max_steps_before_resetting() -> None:
    """A max_steps that is not a positive integer is a ValueError before anything runs (0 or -1 returned an empty
    episode after a reset, 2.5 ran three steps)."""

    class Env:
        resets = 0

        def reset(self, **_: object) -> tuple[None, dict[str, object]]:
            Env.resets += 1
            return None, {}

    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match=r"^max_steps must be a positive integer or None, got "):
            run_episode(Env(), lambda o, i: "company status", max_steps=bad)  # type: ignore[arg-type]
    assert Env.resets == 0


def test_random_masked_says_when_no_action_is_valid() -> None:
    import numpy as np

    from ycgym.policies import random_masked

    rng = np.random.default_rng(0)
    assert random_masked(np.array([0, 1, 0]), rng) == 1
    with pytest.raises(ValueError, match=r"^random_masked: the mask allows no action \(3 actions, all masked out\)$"):
        random_masked(np.zeros(3, dtype=bool), rng)
