"""A greedy-ish YC-Bench agent in a Gymnasium loop: take the best market task, staff it, run the clock."""

import json

import gymnasium as gym

import ycgym  # noqa: F401  (registers "ycgym/YCBench-v0"; starts a local server on first use)

WORK = ("task accept --task-id {t}", "task assign --task-id {t} --employees {staff}", "task dispatch --task-id {t}", "sim resume")

env = gym.make("ycgym/YCBench-v0", max_steps=40)
obs, info = env.reset(seed=1)
obs, *_ = env.step("employee list")
staff = ",".join(e["name"] for e in json.loads(obs["text"])["employees"])
plan, total = ["market browse --limit 1"], 0.0
while True:
    obs, reward, terminated, truncated, info = env.step(plan.pop(0))
    total += float(reward)
    if terminated or truncated:
        break
    if obs["command"] == "market browse" and obs["ok"]:
        plan = [w.format(t=json.loads(obs["text"])["tasks"][0]["task_id"], staff=staff) for w in WORK]
    plan = plan or ["market browse --limit 1"]
print(f"steps={info['step']} return=${total:,.2f} funds=${info['funds_cents'] / 100:,.2f} reason={info['terminal_reason']}")
env.close()
