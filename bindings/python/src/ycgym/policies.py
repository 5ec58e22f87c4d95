"""Policies over the Discrete action frame (:class:`ycgym.YCBenchDiscreteEnv`), reading only the observation,
the mask and the spec's names.

* :class:`DiscreteGreedy`: the paper's greedy baseline (``baselines/discrete-greedy.ts`` in TypeScript): a planned
  task gets every employee and is dispatched; while a task is active, ``resume``; otherwise accept the
  best-reward visible task (market slot 0); with nothing to do, the fallback ``resume``. Its commands are the
  state-changing commands of the golden ``greedy`` trajectories.
* :func:`random_masked`: a uniformly random valid action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["DiscreteGreedy", "DiscreteValue", "random_masked"]


class DiscreteGreedy:
    """Greedy over a Discrete spec (``env.discrete_spec``); call :meth:`act` with a Box observation and the mask."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        feat = {n: i for i, n in enumerate(spec["feature_names"])}
        act = {n: i for i, n in enumerate(spec["action_names"])}
        e = len(spec["employees"])
        t = int(spec["task_slots"])
        self._planned = np.array([feat[f"task[{j}].planned"] for j in range(t)])
        self._active = np.array([feat[f"task[{j}].active"] for j in range(t)])
        self._assigned = np.array([[feat[f"task[{j}].assigned[{k}]"] for k in range(e)] for j in range(t)])
        self._assign_all = [act[f"task[{j}].assign_all"] for j in range(t)]
        self._dispatch = [act[f"task[{j}].dispatch"] for j in range(t)]
        self._resume = act["resume"]
        self._accept0 = act["accept[0]"]

    def act(self, obs: Any, mask: Any) -> int:
        o = np.asarray(obs)
        m = np.asarray(mask, dtype=bool)
        active = False
        for j in range(len(self._planned)):
            if o[self._planned[j]] == 1:
                a = self._assign_all[j] if o[self._assigned[j]].sum() == 0 else self._dispatch[j]
                if m[a]:
                    return int(a)
            if o[self._active[j]] == 1:
                active = True
        if active:
            return int(self._resume)
        pick = self._pick(o, m)
        return int(self._resume) if pick is None else pick

    def _pick(self, o: np.ndarray, m: np.ndarray) -> int | None:
        """The accept action to take when no task is open (None: none is valid). Greedy: market slot 0."""
        return int(self._accept0) if m[self._accept0] else None


class DiscreteValue(DiscreteGreedy):
    """Greedy by value: like :class:`DiscreteGreedy` (one task at a time, every employee on it), but it accepts the
    visible market task with the highest reward per unit of listed work (reward / sum of the domain quantities)
    instead of the highest reward. It reads only the observation and the mask. On the default preset with
    ``market_slots=5, task_slots=2`` it ends seeds 1-10 with a mean of $223,171 (greedy: $182,290) and seeds 11-60
    with $256,312 (greedy: $230,772); ``bindings/python/examples/train_ppo.py`` imitates it before PPO."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        super().__init__(spec)
        feat = {n: i for i, n in enumerate(spec["feature_names"])}
        act = {n: i for i, n in enumerate(spec["action_names"])}
        k = int(spec["market_slots"])
        domains = [n.rsplit(".", 1)[1] for n in spec["feature_names"] if n.startswith("market[0].qty.")]
        self._reward = np.array([feat[f"market[{i}].reward"] for i in range(k)])
        self._qty = np.array([[feat[f"market[{i}].qty.{d}"] for d in domains] for i in range(k)])
        self._accept = np.array([act[f"accept[{i}]"] for i in range(k)])

    def _pick(self, o: np.ndarray, m: np.ndarray) -> int | None:
        ok = m[self._accept]
        if not ok.any():
            return None
        value = np.where(ok, o[self._reward] / (o[self._qty].sum(axis=1) + 1e-9), -np.inf)
        return int(self._accept[int(np.argmax(value))])


def random_masked(mask: Any, rng: np.random.Generator) -> int:
    """A uniformly random action among those masked in."""
    m = np.asarray(mask, dtype=bool)
    ok = np.flatnonzero(m)
    if len(ok) == 0:
        raise ValueError(f"random_masked: the mask allows no action ({m.size} actions, all masked out)")
    return int(ok[rng.integers(len(ok))])
