"""The one episode loop of the Python package: play ``policy`` on a Gymnasium env until it ends.

Every loop of the package goes through :func:`run_episode` (``ycgym.arrow.record_episode`` builds its rows in the
hooks); the examples use it too. The end of an episode is the env's: ``terminated`` or ``truncated`` as the server
reports them (the one terminal rule lives in the TypeScript core); the loop adds only the caller's ``max_steps`` and
a policy that returns ``None``, both of which leave the last step ``truncated`` in :class:`EpisodeResult`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["EpisodeResult", "Transition", "run_episode"]

#: ``policy(obs, info) -> action``, or ``None`` to stop the episode.
EpisodePolicy = Callable[[Any, Mapping[str, Any]], Any]


@dataclass
class Transition:
    """One step: the action taken and what the env answered."""

    step: int
    action: Any
    obs: Any
    reward: float
    terminated: bool
    truncated: bool
    info: Mapping[str, Any]


@dataclass
class EpisodeResult:
    """How an episode ended."""

    steps: int
    #: Sum of the rewards.
    total_reward: float
    terminated: bool
    #: True when the env truncated, or when ``max_steps`` or the policy stopped the episode.
    truncated: bool
    #: The last observation and info (the reset's when no step was taken).
    obs: Any
    info: Mapping[str, Any]


def run_episode(
    env: Any,
    policy: EpisodePolicy,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int | None = None,
    on_reset: Callable[[Any, Mapping[str, Any]], None] | None = None,
    on_step: Callable[[Transition], None] | None = None,
    start: tuple[Any, Mapping[str, Any]] | None = None,
) -> EpisodeResult:
    """Reset ``env`` (``seed``, ``options``) and step it with ``policy`` until it terminates or truncates, the policy
    returns ``None``, or ``max_steps`` steps were taken. ``on_reset(obs, info)`` and ``on_step(transition)`` watch.

    ``start=(obs, info)`` goes on with an env that is already under way (restored from a snapshot, or started by
    another op such as ``turn_reset``) instead of resetting it; ``on_reset`` is then not called."""
    if max_steps is not None and (not isinstance(max_steps, numbers.Integral) or isinstance(max_steps, bool) or max_steps < 1):
        raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")
    if start is None:
        obs, info = env.reset(seed=seed, options=options)
        if on_reset is not None:
            on_reset(obs, info)
    else:
        obs, info = start
    n, total, terminated, truncated = 0, 0.0, False, False
    while max_steps is None or n < max_steps:
        action = policy(obs, info)
        if action is None:
            break
        obs, reward, term, trunc, info = env.step(action)
        n += 1
        total += float(reward)
        terminated, truncated = bool(term), bool(trunc)
        if on_step is not None:
            on_step(Transition(n, action, obs, float(reward), terminated, truncated, info))
        if terminated or truncated:
            break
    return EpisodeResult(n, total, terminated, truncated or not terminated, obs, info)
