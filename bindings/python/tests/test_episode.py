"""The one Python episode loop (``ycgym.run_episode``): ends as the env says, or by max_steps / the policy."""

from __future__ import annotations

from typing import Any

import ycgym
from ycgym import run_episode


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
