"""Train RLlib PPO (Ray 2.60, new API stack) on the masked Discrete env for a few iterations.

    pip install 'ycgym[rllib]'          # in this checkout: make .venv/.installed-trl (brings torch)
    python bindings/python/examples/train_rllib.py --iterations 5

* The env is registered by name (``ray.tune.registry.register_env``): each RLlib env runner builds its own
  ``YCBenchDiscreteEnv(dict_obs=True)``, which starts its own local ycgym server (no endpoint is passed).
* Action masking the RLlib way: the observation is ``{"observations", "action_mask"}`` and the RLModule is
  RLlib's own ``ActionMaskingTorchRLModule`` (``ray.rllib.examples.rl_modules.classes.action_masking_rlm``):
  it feeds ``observations`` to the default PPO networks and adds ``log(mask)`` (clamped to a very negative
  number) to the action logits, so masked-out actions get probability ~0 when sampling and in the PPO loss.
* Episodes start on seeds of the project's train split (:mod:`ycgym.splits`), never the test split: each env
  draws split indices from its own generator seeded by (``--seed``, env runner index, vector index).
* CPU only: a local Ray with ``--num-cpus`` CPUs (default 2), ``--env-runners`` env runners (default 2, one CPU
  each), the learner in the driver process.

Prints one line per iteration (episode return mean, env steps) and, as its last stdout line, one JSON object:
``{"iterations", "env_steps", "episode_return_mean", "seconds", ...}`` (``seconds``: the whole run, Ray's
start included; ``env_steps_per_s``: env steps over the time spent in ``algo.train()``). The reward is the change in funds
(dollars) times ``--reward-scale``; ``episode_return_mean`` is RLlib's (over the episodes finished recently,
``null`` when none finished yet).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time
from typing import Any

import gymnasium as gym
import numpy as np

import ycgym
from ycgym.splits import parse_splits, split_seed

ENV_NAME = "ycgym-discrete-masked"


class TrainSplit(gym.Wrapper):  # type: ignore[type-arg]
    """Resets on seeds of the train split (drawn from a generator of its own); scales the reward by a constant."""

    def __init__(self, env: ycgym.YCBenchDiscreteEnv, rng: np.random.Generator, scale: float) -> None:
        super().__init__(env)
        self.splits = parse_splits(env.client.hello())
        self.rng, self.scale = rng, scale

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        world = split_seed(self.splits, "train", int(self.rng.integers(0, 2**31 - 1)))
        return self.env.reset(seed=world, options=options)

    def step(self, action: Any) -> Any:
        obs, r, term, trunc, info = self.env.step(action)
        return obs, float(r) * self.scale, term, trunc, info


def make_env(config: Any) -> gym.Env:  # type: ignore[type-arg]
    """The env creator registered under ``ENV_NAME`` (``config`` is RLlib's EnvContext: a dict + indices)."""
    env = ycgym.YCBenchDiscreteEnv(
        preset=config.get("preset", "default"),
        market_slots=int(config.get("market_slots", 5)),
        task_slots=int(config.get("task_slots", 2)),
        max_steps=config.get("max_steps"),
        dict_obs=True,
    )
    key = [int(config.get("seed", 0)), int(getattr(config, "worker_index", 0)), int(getattr(config, "vector_index", 0))]
    return TrainSplit(env, np.random.default_rng(key), float(config.get("reward_scale", 1e-5)))


def build_config(args: argparse.Namespace) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env_config = {"preset": args.preset, "market_slots": args.market_slots, "task_slots": args.task_slots, "max_steps": args.max_steps, "seed": args.seed, "reward_scale": args.reward_scale}
    return (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config)
        .framework("torch")
        .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=1, num_cpus_per_env_runner=1, rollout_fragment_length="auto")
        .learners(num_learners=0, num_gpus_per_learner=0)
        .training(train_batch_size_per_learner=args.batch_size, minibatch_size=args.minibatch_size, num_epochs=args.num_epochs, lr=3e-4, gamma=0.999, entropy_coeff=0.01)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config={"fcnet_hiddens": [64, 64], "head_fcnet_hiddens": [64]}))
        .debugging(seed=args.seed, log_level="WARN")
    )


def finite(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=3, help="PPO training iterations (default 3)")
    p.add_argument("--env-runners", type=int, default=2, help="RLlib env runners, one CPU and one ycgym server each")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray")
    p.add_argument("--batch-size", type=int, default=1000, help="env steps per iteration (train_batch_size_per_learner)")
    p.add_argument("--minibatch-size", type=int, default=128)
    p.add_argument("--num-epochs", type=int, default=4)
    p.add_argument("--max-steps", type=int, default=200, help="truncate episodes after this many steps (so they finish within a few iterations)")
    p.add_argument("--preset", default="default")
    p.add_argument("--market-slots", type=int, default=5)
    p.add_argument("--task-slots", type=int, default=2)
    p.add_argument("--reward-scale", type=float, default=1e-5, help="reward = funds change in dollars x this")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="show the Ray workers' logs")
    args = p.parse_args()
    if args.iterations < 1 or args.env_runners < 0 or args.batch_size < 1:
        p.error("--iterations and --batch-size must be >= 1, --env-runners >= 0")

    import ray
    from ray.tune.registry import register_env

    start = time.monotonic()
    env_vars = {k: os.environ[k] for k in ("YCGYM_NODE_ENTRY",) if k in os.environ}
    ray.init(num_cpus=args.num_cpus, num_gpus=0, include_dashboard=False, log_to_driver=args.verbose, logging_level=logging.WARNING, runtime_env={"env_vars": env_vars} if env_vars else None)
    register_env(ENV_NAME, make_env)
    algo = build_config(args).build_algo()
    ret: float | None = None
    env_steps = episodes = 0
    train_s = 0.0
    try:
        for i in range(1, args.iterations + 1):
            t0 = time.monotonic()
            r = algo.train()
            train_s += time.monotonic() - t0
            runners = r.get("env_runners", {})
            ret = finite(runners.get("episode_return_mean"))
            env_steps = int(r.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0)))
            episodes = int(runners.get("num_episodes_lifetime", episodes))
            shown = "n/a" if ret is None else f"{ret:.4f}"
            print(f"iteration {i}: episode_return_mean {shown}  env_steps {env_steps}  episodes {episodes}  {time.monotonic() - start:.1f} s", flush=True)
    finally:
        algo.stop()
        ray.shutdown()
    seconds = time.monotonic() - start
    print(json.dumps({"iterations": args.iterations, "env_steps": env_steps, "episode_return_mean": ret, "seconds": round(seconds, 1), "episodes": episodes, "train_seconds": round(train_s, 1), "env_steps_per_s": round(env_steps / train_s, 1), "env_runners": args.env_runners}), flush=True)


if __name__ == "__main__":
    main()
