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
TRANSPORTS = ["pipe", "zmq"]
N = 3


@pytest.fixture(scope="module", params=TRANSPORTS)
def server(request: pytest.FixtureRequest) -> Iterator[LocalServer]:
    with LocalServer("pipe" if request.param == "pipe" else "tcp://127.0.0.1:0") as srv:
        yield srv


def make(kind: str, endpoint: str, n: int = N, **kw: Any) -> Any:
    cls = YCBenchVectorEnv if kind == "text" else YCBenchDiscreteVectorEnv
    return cls(n, endpoint=endpoint, **kw)


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

