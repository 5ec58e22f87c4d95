"""Train MaskablePPO (sb3-contrib) on ycgym/YCBench-Discrete-v0 within a wall-clock budget; compare with greedy.

    pip install 'ycgym[train]'          # in this checkout: .venv/bin/pip install -e 'bindings/python[train]' -c bindings/python/constraints-train.txt
    python bindings/python/examples/train_ppo.py --budget-s 300 --eval-seeds 1-10 --plot docs/img/train_ppo.png

Training seeds are drawn from the project's train split (``--train-seeds``, default 1001-100000; the eval seeds
are always left out), evaluation is on held-out seeds (default 1-10, the test split). Reward: the change in funds (dollars) times
``--reward-scale`` (a constant, so the optimum is unchanged). ``--bc-episodes N`` first imitates a demonstrator
for N episodes on training seeds (behaviour cloning of the masked policy head; ``--demonstrator value``, the
default, is ``ycgym.policies.DiscreteValue``: greedy that picks the market task with the best reward per unit of
work; ``greedy`` imitates greedy itself), then PPO fine-tunes it. The last stdout line is one JSON object:
``{"timesteps", "trained_mean_funds_cents", "random_mean_funds_cents", "greedy_mean_funds_cents",
"demonstrator_mean_funds_cents", ...}`` measured on the eval seeds. Uses CUDA when available (``--device``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import ycgym
from ycgym.episode import run_episode
from ycgym.policies import DiscreteGreedy, DiscreteValue, random_masked


def seed_range(s: str) -> list[int]:
    a, _, b = s.partition("-")
    lo, hi = int(a), int(b or a)
    if hi < lo:
        raise argparse.ArgumentTypeError(f"empty seed range {s!r}")
    return list(range(lo, hi + 1))


class TrainSeeds(gym.Wrapper):  # type: ignore[type-arg]
    """Resets on seeds drawn from a fixed training pool; scales the reward by a constant."""

    def __init__(self, env: gym.Env, pool: list[int], scale: float, rng: np.random.Generator) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.pool, self.scale, self.rng = pool, scale, rng

    def reset(self, **kwargs: Any) -> Any:
        kwargs["seed"] = int(self.rng.choice(self.pool))
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        obs, r, term, trunc, info = self.env.step(action)
        return obs, float(r) * self.scale, term, trunc, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()  # type: ignore[attr-defined, no-any-return]


def make_env(args: argparse.Namespace, pool: list[int], rank: int) -> Any:
    def thunk() -> gym.Env:  # type: ignore[type-arg]
        env = ycgym.YCBenchDiscreteEnv(preset=args.preset, market_slots=args.market_slots, task_slots=args.task_slots, endpoint=args.endpoint)
        return TrainSeeds(env, pool, args.reward_scale, np.random.default_rng(args.seed * 1000 + rank))

    return thunk


def play(env: ycgym.YCBenchDiscreteEnv, seed: int, act: Any) -> int:
    """Final funds (cents) of one episode on ``seed`` with ``act(obs, mask) -> int``."""
    end = run_episode(env, lambda obs, info: act(obs, info["action_mask"]), seed=seed)
    return int(end.info["funds_cents"])


DEMONSTRATORS = {"value": DiscreteValue, "greedy": DiscreteGreedy}


def demos(args: argparse.Namespace, pool: list[int], episodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observations, masks, actions) of ``episodes`` episodes of the demonstrator on training seeds."""
    env = ycgym.YCBenchDiscreteEnv(preset=args.preset, market_slots=args.market_slots, task_slots=args.task_slots, endpoint=args.endpoint)
    teacher = DEMONSTRATORS[args.demonstrator](env.discrete_spec)
    xs, ms, ys = [], [], []
    rng = np.random.default_rng(args.seed)

    def demonstrate(obs: np.ndarray, info: Any) -> int:
        a = teacher.act(obs, info["action_mask"])
        xs.append(obs)
        ms.append(info["action_mask"])
        ys.append(a)
        return a

    for _ in range(episodes):
        run_episode(env, demonstrate, seed=int(rng.choice(pool)))
    env.close()
    return np.asarray(xs, np.float32), np.asarray(ms, bool), np.asarray(ys, np.int64)


def behaviour_clone(model: Any, demos: tuple[np.ndarray, np.ndarray, np.ndarray], epochs: int) -> None:
    import torch as th

    x, m, y = (th.as_tensor(a, device=model.device) for a in demos)
    opt = th.optim.Adam(model.policy.parameters(), lr=1e-3)
    for _ in range(epochs):
        perm = th.randperm(len(y), device=model.device)
        for i in range(0, len(y), 256):
            b = perm[i : i + 256]
            dist = model.policy.get_distribution(x[b], action_masks=m[b].cpu().numpy())
            loss = -dist.log_prob(y[b]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget-s", type=float, default=300.0, help="wall-clock training budget in seconds (BC included)")
    p.add_argument("--eval-seeds", type=seed_range, default=seed_range("1-10"), help="held-out seeds A-B (default: test split)")
    p.add_argument("--train-seeds", type=seed_range, default=seed_range("1001-100000"), help="training seeds A-B (default: train split)")
    p.add_argument("--preset", default="default")
    p.add_argument("--endpoint", default=None)
    p.add_argument("--market-slots", type=int, default=5)
    p.add_argument("--task-slots", type=int, default=2)
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--n-steps", type=int, default=256)
    p.add_argument("--reward-scale", type=float, default=1e-5, help="reward = funds change in dollars x this")
    p.add_argument("--demonstrator", choices=sorted(DEMONSTRATORS), default="value", help="policy imitated before PPO: value (DiscreteValue, the default) or greedy")
    p.add_argument("--bc-episodes", type=int, default=48, help="demonstrator episodes to imitate before PPO (0: none)")
    p.add_argument("--bc-epochs", type=int, default=100)
    p.add_argument("--net-arch", default="256,256", help="hidden layer sizes of the policy and value networks")
    p.add_argument("--learning-rate", type=float, default=2e-5, help="PPO's learning rate (small: fine-tuning the cloned policy)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--plot", type=Path, default=None, help="write the learning curve (funds vs env steps) as PNG")
    args = p.parse_args()
    held_out = set(args.eval_seeds)
    pool = [s for s in args.train_seeds if s not in held_out]

    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv

    th.manual_seed(args.seed)
    th.set_num_threads(max(1, th.get_num_threads()))
    start = time.monotonic()
    venv = DummyVecEnv([make_env(args, pool, i) for i in range(args.n_envs)])
    arch = [int(x) for x in args.net_arch.split(",") if x]
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=args.n_steps, batch_size=256, learning_rate=args.learning_rate, gamma=0.999, ent_coef=0.01,
        policy_kwargs={"net_arch": arch}, seed=args.seed, device=args.device, verbose=0,
    )
    # A logger with no outputs: stable-baselines3's default one (verbose=0, no tensorboard) makes an empty
    # SB3-<date> folder in the temporary directory on every run.
    model.set_logger(Logger(folder=None, output_formats=[]))
    if args.bc_episodes > 0:
        behaviour_clone(model, demos(args, pool, args.bc_episodes), args.bc_epochs)

    curve: list[tuple[int, float]] = []

    class Budget(BaseCallback):  # type: ignore[misc]
        def _on_step(self) -> bool:
            for info, done in zip(self.locals["infos"], self.locals["dones"]):
                if done:
                    curve.append((int(self.num_timesteps), float(info["funds_cents"])))
            return time.monotonic() - start < args.budget_s

    model.learn(total_timesteps=10**9, callback=Budget())
    venv.close()

    env = ycgym.YCBenchDiscreteEnv(preset=args.preset, market_slots=args.market_slots, task_slots=args.task_slots, endpoint=args.endpoint)
    greedy = DiscreteGreedy(env.discrete_spec)
    teacher = DEMONSTRATORS[args.demonstrator](env.discrete_spec)
    rng = np.random.default_rng(args.seed)

    def trained(obs: np.ndarray, mask: np.ndarray) -> int:
        a, _ = model.predict(obs, action_masks=mask, deterministic=True)
        return int(a)

    res = {name: [play(env, s, f) for s in args.eval_seeds] for name, f in (("trained", trained), ("random", lambda o, m: random_masked(m, rng)), ("greedy", greedy.act), ("demonstrator", teacher.act))}
    env.close()
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        if curve:
            steps, funds = np.asarray(curve).T
            k = max(1, len(funds) // 20)
            smooth = np.convolve(funds, np.ones(k) / k, mode="valid")
            ax.plot(steps / 1000, funds / 100, ".", alpha=0.3, label="training episodes")
            ax.plot(steps[k - 1 :] / 1000, smooth / 100, label=f"moving mean ({k})")
        else:
            # A budget too short for any training episode to end (or a slow machine): the evaluation lines only.
            print(f"train_ppo: no training episode ended within {args.budget_s:g} s; the plot has the evaluation lines only", file=sys.stderr)
            ax.text(0.5, 0.5, "no training episode ended within the budget", transform=ax.transAxes, ha="center", va="center")
        ax.axhline(np.mean(res["greedy"]) / 100, color="k", ls="--", label="greedy (eval seeds)")
        ax.axhline(np.mean(res["trained"]) / 100, color="g", ls=":", label="trained (eval seeds)")
        ax.set_xlabel("env steps (thousands)")
        ax.set_ylabel("final funds ($)")
        ax.set_title(f"MaskablePPO on YCBench-Discrete-v0, {args.budget_s:.0f} s budget")
        ax.legend()
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=100)
    print(
        json.dumps(
            {
                "timesteps": int(model.num_timesteps),
                "trained_mean_funds_cents": float(np.mean(res["trained"])),
                "random_mean_funds_cents": float(np.mean(res["random"])),
                "greedy_mean_funds_cents": float(np.mean(res["greedy"])),
                "demonstrator": args.demonstrator,
                "demonstrator_mean_funds_cents": float(np.mean(res["demonstrator"])),
                "eval_seeds": [args.eval_seeds[0], args.eval_seeds[-1]],
                "train_episodes": len(curve),
                "wall_s": round(time.monotonic() - start, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
