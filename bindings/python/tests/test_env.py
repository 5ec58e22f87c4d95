"""YCBenchEnv against the real server: Gymnasium conformance, determinism, snapshots, episode ends."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import ycgym
from helpers import check_env_without_warnings, golden_commands, golden_episode, normalize, parse_out, same
from ycgym import ProtocolError, YCBenchEnv


def test_check_env_passes_without_warnings() -> None:
    check_env_without_warnings("ycgym/YCBench-v0")


def test_make_reset_step() -> None:
    env = gym.make("ycgym/YCBench-v0", max_episode_steps=5)
    try:
        obs, info = env.reset(seed=1)
        assert obs in env.observation_space
        assert obs["text"] == "" and obs["ok"] == 1 and obs["command"] == ""
        assert obs["funds_cents"] == 20_000_000 and obs["sim_day"] == 0.0 and obs["days_left"] == 365.0
        assert info["status"]["funds_cents"] == 20_000_000 and info["step"] == 0
        obs, reward, terminated, truncated, info = env.step("employee list")
        assert obs in env.observation_space
        assert obs["ok"] == 1 and obs["command"] == "employee list" and '"count": 8' in obs["text"]
        assert reward == 0.0 and not terminated and not truncated
        assert info["reward_cents"] == 0 and info["step"] == 1 and info["terminal_reason"] is None
    finally:
        env.close()


def test_invalid_command_is_an_ordinary_step() -> None:
    env = YCBenchEnv()
    try:
        env.reset(seed=2)
        for action in ["", "no such command", "task accept ☃", "x" * 5000, "sim resume"]:
            obs, reward, terminated, truncated, info = env.step(action)
            assert obs in env.observation_space, action
            assert info["reward_cents"] == 0
            assert obs["ok"] == 0 and obs["exit_code"] in (1, 2) and reward == 0.0
            assert not terminated and not truncated
    finally:
        env.close()


def scripted_rollout(seed: int, actions: list[str]) -> list[tuple[Any, ...]]:
    env = YCBenchEnv()
    try:
        obs, info = env.reset(seed=seed)
        info.pop("session")  # the only thing that may differ between two runs
        out: list[tuple[Any, ...]] = [(obs, info)]
        for a in actions:
            r = env.step(a)
            r[4].pop("session")
            out.append(r)
            if r[2] or r[3]:
                break
        return out
    finally:
        env.close()


def test_same_seed_rollouts_are_identical() -> None:
    actions = golden_commands("traj-default-greedy-seed-1.json.gz")[:80]
    a = scripted_rollout(1, actions)
    b = scripted_rollout(1, actions)
    assert len(a) == len(b) == 81
    for i, (x, y) in enumerate(zip(a, b)):
        assert same(x, y), f"step {i} differs"
    assert sum(r[1] for r in a[1:]) != 0.0  # the script does earn and spend money
    c = scripted_rollout(2, actions[:10])
    assert not same(a[:11], c)  # another seed, another world


def test_unseeded_reset_is_reproducible_from_np_random() -> None:
    env = YCBenchEnv()
    try:
        env.reset(seed=123)
        obs1, _ = env.reset()
        seed1 = env.seed_used
        env.reset(seed=123)
        obs2, _ = env.reset()
        assert env.seed_used == seed1 and seed1 != 123
        assert same(obs1, obs2)
        a = env.step("market browse --limit 3")[0]["text"]
        env.reset(seed=seed1)
        assert env.step("market browse --limit 3")[0]["text"] == a
    finally:
        env.close()


def test_golden_replay_matches_reference_outputs() -> None:
    """The binding returns the reference CLI's exact output (int/float distinctions included)."""
    ep = golden_episode("traj-default-focused-seed-1.json.gz")
    env = YCBenchEnv(preset=ep["preset"])
    try:
        env.reset(seed=ep["seed"])
        for i, s in enumerate(ep["steps"][:120]):
            obs, _r, terminated, truncated, _info = env.step(s["cmd"])
            assert obs["exit_code"] == s["exit"], (i, s["cmd"])
            assert same(normalize(parse_out(obs["text"])), s["out"]), (i, s["cmd"])
            if terminated or truncated:
                break
    finally:
        env.close()


def test_bankruptcy_episode_terminates() -> None:
    """Seed 3, default preset, the reference greedy agent's commands: funds go negative -> terminated."""
    ep = golden_episode("traj-default-greedy-seed-3.json.gz")
    assert (ep["seed"], ep["preset"], ep["policy"]) == (3, "default", "greedy")
    env = YCBenchEnv(preset="default")
    try:
        env.reset(seed=3)
        total_cents = 0
        for i, s in enumerate(ep["steps"]):
            obs, reward, terminated, truncated, info = env.step(s["cmd"])
            assert obs["exit_code"] == s["exit"], (i, s["cmd"])
            total_cents += info["reward_cents"]
            assert same(normalize(parse_out(obs["text"])), s["out"]), (i, s["cmd"])
            if terminated:
                break
        else:
            pytest.fail("the episode never terminated")
        assert s["cmd"] == "sim resume" and s["out"]["bankrupt"] is True
        assert info["terminal_reason"] == "bankruptcy" and info["status"]["bankrupt"] is True
        assert not truncated and obs["funds_cents"] < 0 and obs in env.observation_space
        assert total_cents == info["funds_cents"] - 20_000_000
        assert reward == info["reward_cents"] / 100
        with pytest.raises(ProtocolError) as e:
            env.step("company status")
        assert e.value.code == "episode_over"
        obs, info = env.reset(seed=3)  # a reset starts over in the same session
        assert obs["funds_cents"] == 20_000_000 and info["step"] == 0
    finally:
        env.close()


def test_max_steps_truncates() -> None:
    env = YCBenchEnv(max_steps=3)
    try:
        env.reset(seed=4)
        flags = [env.step("company status")[2:4] for _ in range(3)]
        assert flags == [(False, False), (False, False), (False, True)]
        env.reset(seed=4, options={"max_steps": 1})
        _, _, term, trunc, info = env.step("company status")
        assert (term, trunc, info["terminal_reason"]) == (False, True, "max_steps")
    finally:
        env.close()


def test_snapshot_restore_continues_identically() -> None:
    actions = golden_commands("traj-default-greedy-seed-2.json.gz")
    head, tail = actions[:40], actions[40:100]
    env = YCBenchEnv()
    other = YCBenchEnv()
    try:
        env.reset(seed=2)
        for a in head:
            env.step(a)
        snap = env.snapshot()
        original = [env.step(a) for a in tail]

        obs, info = env.restore(snap)  # same env, same session
        assert obs["text"] == "" and info["step"] == 40
        again = [env.step(a) for a in tail]

        other.reset(seed=99)
        obs2, _ = other.restore(snap)  # another env (another session)
        assert obs2["sim_day"] == obs["sim_day"] and obs2["sim_day"] > 0
        elsewhere = [other.step(a) for a in tail]
        for i, (x, y, z) in enumerate(zip(original, again, elsewhere)):
            assert same(x[:4], y[:4]) and same(x[:4], z[:4]), f"step {i} after restore differs"
            assert x[4]["status"] == y[4]["status"] == z[4]["status"]
    finally:
        env.close()
        other.close()


def test_render_modes(capsys: pytest.CaptureFixture[str]) -> None:
    env = YCBenchEnv(render_mode="ansi")
    human = YCBenchEnv(render_mode="human")
    try:
        env.reset(seed=1)
        assert env.render() == ""
        env.step("client list")
        assert env.render() == env._last_text and "Cortex" in env._last_text
        human.reset(seed=1)
        obs = human.step("scratchpad read")[0]
        capsys.readouterr()
        assert human.render() is None
        assert capsys.readouterr().out == obs["text"] + "\n"
        with pytest.raises(ValueError):
            YCBenchEnv(render_mode="rgb_array")
    finally:
        env.close()
        human.close()


def test_step_before_reset_and_close_twice() -> None:
    env = YCBenchEnv()
    with pytest.raises(gym.error.ResetNeeded):
        env.step("company status")
    env.close()
    env.close()


def test_other_preset_has_its_own_spaces() -> None:
    env = YCBenchEnv(preset="multi")
    try:
        obs, info = env.reset(seed=1)
        assert isinstance(env.observation_space, gym.spaces.Dict) and env.observation_space["trust"].shape == (10,)
        assert env.observation_space.contains(obs)  # what `obs in space` calls (on a Dict space, `in` reads to mypy as a key test)
        assert list(info["status"]["trust"]) == list(env.params.clients)
        with pytest.raises(ProtocolError) as e:
            YCBenchEnv(preset="no-such-preset")
        assert e.value.code == "bad_preset"
    finally:
        env.close()


def test_version_and_registry() -> None:
    assert ycgym.ENV_ID in gym.registry
    assert gym.registry[ycgym.ENV_ID].vector_entry_point == "ycgym.vector:YCBenchVectorEnv"


def test_obs_text_none_blanks_the_text_and_nothing_else() -> None:
    """obs_text="none" (reset option text: false): the server never renders the output; the rest is unchanged."""
    import numpy as np
    import pytest

    full, none = ycgym.YCBenchEnv(), ycgym.YCBenchEnv(obs_text="none")
    try:
        a, _ = full.reset(seed=3)
        b, _ = none.reset(seed=3)
        for cmd in ["market browse --limit 3", "employee list", "sim resume"]:
            a, ra, ta, ua, ia = full.step(cmd)
            b, rb, tb, ub, ib = none.step(cmd)
            assert a["text"] != "" and b["text"] == ""
            assert (rb, tb, ub, ib["funds_cents"], ib["step"]) == (ra, ta, ua, ia["funds_cents"], ia["step"])
            assert all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a if k != "text")
        with pytest.raises(ValueError, match="obs_text"):
            ycgym.YCBenchEnv(obs_text="some")
    finally:
        full.close()
        none.close()


def _fingerprint(x: Any) -> Any:
    """A canonical form of reset/step results for comparing across processes: values with their exact types (numpy
    arrays by dtype, shape and bytes), session ids (random by design) left out."""
    import numpy as np

    if isinstance(x, dict):
        return [(k, _fingerprint(v)) for k, v in x.items() if k not in ("session", "_session")]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [_fingerprint(v) for v in x]]
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return ["object", list(x.shape), [_fingerprint(v) for v in x.flat]]
        return [x.dtype.str, list(x.shape), x.tobytes().hex()]
    return [type(x).__name__, repr(x)]


def seeded_rollouts() -> str:
    """sha256 of every result of seeded text, Discrete and vector rollouts (with seedless resets and autoresets)."""
    import hashlib
    import json

    import numpy as np

    out: list[Any] = []
    env = YCBenchEnv(max_steps=5)
    out.append(env.reset(seed=4))
    for c in ["company status", "market browse --limit 3", "sim resume", "task list", "nope"]:
        out.append(env.step(c))
    out.append(env.reset())
    env.close()
    d = ycgym.YCBenchDiscreteEnv(dict_obs=True, max_steps=6)
    d.action_space.seed(3)
    out.append(d.reset(seed=11))
    for _ in range(8):
        r = d.step(d.action_space.sample(mask=out[-1][0]["action_mask"]))
        out.append(r if not (r[2] or r[3]) else d.reset())
    d.close()
    v = ycgym.YCBenchDiscreteVectorEnv(3, max_steps=3, autoreset_mode="SameStep")
    out.append(v.reset(seed=2))
    for _ in range(5):
        out.append(v.step(np.asarray([int(np.flatnonzero(m)[-1]) for m in v.action_masks()])))
    v.close()
    tv = ycgym.YCBenchVectorEnv(2, max_steps=2, autoreset_mode="SameStep")
    out.append(tv.reset(seed=9))
    for _ in range(3):
        out.append(tv.step(["sim resume", "market browse"]))
    tv.close()
    return hashlib.sha256(json.dumps(_fingerprint(out)).encode()).hexdigest()


def test_the_same_seeds_give_identical_results_in_another_process() -> None:
    """Observations, rewards, flags and infos of seeded rollouts (text, Discrete, both vector envs, seedless resets
    and autoresets included) are identical, types and bytes, in a fresh process with another hash seed."""
    import os
    import subprocess
    import sys

    here = seeded_rollouts()
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    code = "import sys; sys.path.insert(0, sys.argv[1]); import test_env; print(test_env.seeded_rollouts())"
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == here


def test_a_step_info_is_make_info_of_its_reply() -> None:
    """The single env builds a step's info in the reply's own objects (no copies); it must be ``make_info`` of the reply
    as it came, key order included: over a greedy-like episode whose texts are cut by ``max_text_length`` (so
    ``text_truncated`` and ``text_length`` appear) and whose values go fractional (prestige, trust, runway)."""
    import copy

    from ycgym.env import make_info

    env = YCBenchEnv(max_text_length=200)
    try:
        env.reset(seed=3)
        replies: list[Any] = []
        send = env._step_request

        def keep(session: str, action: str | int) -> Any:
            r = send(session, action)
            replies.append(copy.deepcopy(r))
            return r

        env._step_request = keep  # type: ignore[method-assign]
        for action in ["market browse", "company status", "sim resume", "employee list", "sim resume", "market browse", "no such command"]:
            _, _, terminated, truncated, info = env.step(action)
            want = make_info(replies[-1], env._session, 200)
            assert info == want and list(info) == list(want) and list(info["status"]) == list(want["status"]), action
            assert all(type(v) is float for v in info["status"]["prestige"].values()), action
            assert all(type(v) is float for v in info["status"]["trust"].values()), action
            if terminated or truncated:
                break
        assert any(i.get("text_truncated") for i in [make_info(r, None, 200) for r in replies])
    finally:
        env.close()
