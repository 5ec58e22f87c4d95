"""``YCBenchDiscreteVectorEnv`` (``gymnasium.make_vec("ycgym/YCBench-Discrete-v0", num_envs=N)``).

N Discrete sessions on one server, stepped with one ``step_batch`` round trip; observations ``(N, obs_size)``
float32 (or a dict of stacked arrays with ``dict_obs=True``), masks stacked ``(N, n_actions)`` bool in
``info["action_mask"]`` and :meth:`action_masks`. Autoreset is Gymnasium's ``NEXT_STEP`` (the default of
``SyncVectorEnv``): the step after a sub-environment's episode ends ignores its action and returns its reset
observation with reward 0. Sub-environment ``i`` of ``reset(seed=s)`` is seeded ``s + i``; later automatic
resets draw seeds from that sub-environment's own generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._backend import connection, open_backend, reopen
from .client import Client, ProtocolError, ResetResult, StepResult
from .discrete import DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, discrete_options, frame_arrays, spaces_of
from .vector import draw_seed

__all__ = ["YCBenchDiscreteVectorEnv"]

_REASONS = (None, "bankruptcy", "horizon_end", "max_steps", "stall")


class YCBenchDiscreteVectorEnv(VectorEnv[Any, np.ndarray, np.ndarray]):
    """N YC-Bench Discrete sessions stepped together (see the module docstring).

    Args: ``num_envs`` and the arguments of :class:`ycgym.YCBenchDiscreteEnv`; ``autoreset_mode`` must be
    ``NEXT_STEP`` (the only mode implemented).
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        preset: str = "default",
        endpoint: str | None = None,
        market_slots: int = DEFAULT_MARKET_SLOTS,
        task_slots: int = DEFAULT_TASK_SLOTS,
        dict_obs: bool = False,
        max_steps: int | None = None,
        stall_steps: int | None = None,
        reset_options: Mapping[str, Any] | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        timeout: float | None = 30.0,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
    ) -> None:
        if int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        if mode != AutoresetMode.NEXT_STEP:
            raise ValueError(f"YCBenchDiscreteVectorEnv implements autoreset_mode NEXT_STEP only, got {mode}")
        self.num_envs = int(num_envs)
        self.preset = preset
        self.dict_obs = bool(dict_obs)
        self._opts = discrete_options(market_slots, task_slots, max_steps, stall_steps, reset_options)
        self._connect = connection(endpoint, server_public_key, public_key, secret_key, timeout)
        self._backend, self._finalizer, self.params = open_backend(self, **self._connect, preset=preset)
        c = self._backend.client
        n = self.num_envs
        first = c.gather([c.send("reset", seed=0, preset=preset, options=self._opts) for _ in range(n)])
        self._sessions: list[str] = [str(r["session"]) for r in first]
        self._backend.sessions.update(self._sessions)
        self.discrete_spec: dict[str, Any] = dict(first[0]["info"]["discrete_spec"])
        self.single_observation_space, self.single_action_space = spaces_of(self.discrete_spec, self.dict_obs)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._obs = np.zeros((n, int(self.discrete_spec["obs_size"])), dtype=np.float32)
        self._mask = np.zeros((n, int(self.discrete_spec["n_actions"])), dtype=np.bool_)
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._ready = False

    @property
    def client(self) -> Client:
        return self._backend.client

    @property
    def sessions(self) -> tuple[str, ...]:
        return tuple(self._sessions)

    def _seed(self, i: int, seed: int | None) -> int:
        return draw_seed(self._rngs, i, seed)

    def _reset_many(self, idx: Sequence[int], seeds: Sequence[int | None]) -> list[ResetResult]:
        c = self._backend.client
        sd = [self._seed(i, s) for i, s in zip(idx, seeds)]
        got = c.gather([c.send("reset", seed=s, preset=self.preset, session=self._sessions[i], options=self._opts) for i, s in zip(idx, sd)], raise_errors=False)
        out: list[ResetResult] = []
        for i, s, r in zip(idx, sd, got):
            if isinstance(r, ProtocolError):
                if r.code != "unknown_session":
                    raise r
                self._backend.sessions.discard(self._sessions[i])
                r = c.reset(s, self.preset, options=self._opts)
                self._sessions[i] = str(r["session"])
                self._backend.sessions.add(self._sessions[i])
            out.append(r)
        return out

    def _put(self, i: int, r: ResetResult | StepResult) -> None:
        self._obs[i], self._mask[i] = frame_arrays(r)

    def _observation(self) -> Any:
        if self.dict_obs:
            return {"observations": self._obs.copy(), "action_mask": self._mask.astype(np.int8)}
        return self._obs.copy()

    def _infos(self, results: Sequence[ResetResult | StepResult]) -> dict[str, Any]:
        n = self.num_envs
        yes = np.ones(n, dtype=np.bool_)
        info: dict[str, Any] = {"action_mask": self._mask.copy(), "_action_mask": yes}
        for key in ("reward_cents", "step", "funds_cents"):
            info[key] = np.asarray([int(r["info"][key]) for r in results], dtype=np.int64)  # type: ignore[literal-required]
            info[f"_{key}"] = yes
        info["terminal_reason"] = np.asarray([r["info"]["terminal_reason"] for r in results], dtype=object)
        info["_terminal_reason"] = yes
        return info

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={n} but got length={len(seeds)}.")
        if options:
            raise ValueError("YCBenchDiscreteVectorEnv.reset takes no options (pass reset_options to the constructor)")
        results = self._reset_many(range(n), seeds)
        for i, r in enumerate(results):
            self._put(i, r)
        self._autoreset[:] = False
        self._ready = True
        return self._observation(), self._infos(results)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        acts = np.asarray(actions).reshape(-1)
        n = self.num_envs
        if acts.shape[0] != n:
            raise ValueError(f"expected {n} actions, got {acts.shape[0]}")
        c = self._backend.client
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=np.bool_)
        truncated = np.zeros(n, dtype=np.bool_)
        results: list[Any] = [None] * n
        again = [i for i in range(n) if self._autoreset[i]]
        live = [i for i in range(n) if not self._autoreset[i]]
        rid = [c.send("reset", seed=self._seed(i, None), preset=self.preset, session=self._sessions[i], options=self._opts) for i in again]
        stepped = c.step_batch([(self._sessions[i], int(acts[i])) for i in live]) if live else []  # type: ignore[misc]
        for i, r in zip(again, c.gather(rid)):
            results[i] = r
            self._put(i, r)
        for i, r in zip(live, stepped):
            results[i] = r
            self._put(i, r)
            rewards[i] = float(r["reward"])
            terminated[i] = bool(r["terminated"])
            truncated[i] = bool(r["truncated"])
        self._autoreset = terminated | truncated
        return self._observation(), rewards, terminated, truncated, self._infos(results)

    def action_masks(self) -> np.ndarray:
        """Stacked masks ``(num_envs, n_actions)`` of the actions valid now."""
        return self._mask.copy()

    def close_extras(self, **kwargs: Any) -> None:
        self._ready = False
        self._finalizer()

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_backend", "_finalizer")}
        c = self._backend.client
        state["_episodes"] = [r["snapshot"] for r in c.gather([c.send("snapshot", session=s) for s in self._sessions])]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episodes = state.pop("_episodes")
        self.__dict__.update(state)
        self._backend, self._finalizer = reopen(self, self._connect, self.preset, self.params)
        c = self._backend.client
        got = c.gather([c.send("restore", snapshot=dict(s)) for s in episodes])
        self._sessions = [str(r["session"]) for r in got]
        self._backend.sessions.update(self._sessions)
