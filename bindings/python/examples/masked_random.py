"""The README example of the masked Discrete env: a random policy over the valid actions (run by the test suite)."""

import gymnasium as gym
import numpy as np

import ycgym  # noqa: F401  (registers "ycgym/YCBench-Discrete-v0")

env = gym.make("ycgym/YCBench-Discrete-v0")
obs, info = env.reset(seed=1001)  # a train-split seed (test seeds are 1-100)
rng, total, done = np.random.default_rng(0), 0.0, False
while not done:
    action = rng.choice(np.flatnonzero(info["action_mask"]))  # a random valid action
    obs, reward, terminated, truncated, info = env.step(int(action))
    total, done = total + float(reward), terminated or truncated
print(obs.shape, env.action_space, f"return=${total:,.2f}", info["terminal_reason"])
env.close()
