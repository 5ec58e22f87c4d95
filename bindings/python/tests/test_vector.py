"""YCBenchVectorEnv: Gymnasium 1.x vector semantics in all three autoreset modes, in one round trip.

The reference for "exactly as Gymnasium documents them" is Gymnasium's own SyncVectorEnv over N
YCBenchEnv instances: both must return identical observations, rewards, flags and infos.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from helpers import golden_commands, same
from ycgym import YCBenchEnv, YCBenchVectorEnv

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def strip_sessions(info: Any) -> Any:
    """Session ids differ between two implementations; everything else must not."""
    if isinstance(info, dict):
        return {k: strip_sessions(v) for k, v in info.items() if k not in ("session", "_session")}
    return info


def key_order(x: Any) -> Any:
    """Keys in order, recursively (``same`` compares keys as sets)."""
    if isinstance(x, dict):
        return [(k, key_order(v)) for k, v in x.items()]
    return None


def drive(envs: Any, seed: int, actions: list[list[str]], mode: AutoresetMode, remask: dict[int, np.ndarray]) -> list[Any]:
    """Run a vector env over a fixed action script; returns every (result) tuple.

    ``remask[t]``: before step ``t``, reset the masked sub-environments. In DISABLED mode finished
    sub-environments are reset by mask before the next step, as Gymnasium expects of the caller.
    """
    out: list[Any] = [envs.reset(seed=seed)]
    done = np.zeros(envs.num_envs, dtype=np.bool_)
    for t, acts in enumerate(actions):
        mask = remask.get(t)
        if mode == AutoresetMode.DISABLED and done.any():
            mask = done if mask is None else (mask | done)
        if mask is not None:
            out.append(("reset", envs.reset(options={"reset_mask": mask.copy()})))
        r = envs.step(tuple(acts))
        out.append(r)
        done = np.logical_or(r[2], r[3])
    return out


def compare(a: list[Any], b: list[Any]) -> None:
    assert len(a) == len(b)
    for t, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, tuple) and len(x) == 2 and x[0] == "reset":
            x, y = x[1], y[1]
        assert len(x) == len(y)
        for k, (u, v) in enumerate(zip(x, y)):
            if isinstance(u, dict) and k == len(x) - 1:
                u, v = strip_sessions(u), strip_sessions(v)
                assert key_order(u) == key_order(v), f"result {t}: the info's keys are in another order"
            assert same(u, v), f"result {t}, element {k} differs:\n{u}\n{v}"


def make_pair(n: int, mode: AutoresetMode, **kw: Any) -> tuple[YCBenchVectorEnv, SyncVectorEnv]:
    fns: list[Callable[[], gym.Env[Any, Any]]] = [lambda: YCBenchEnv(**kw) for _ in range(n)]
    return YCBenchVectorEnv(n, autoreset_mode=mode, **kw), SyncVectorEnv(fns, autoreset_mode=mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_truncation_autoreset_matches_sync_vector_env(mode: AutoresetMode) -> None:
    n = 3
    ours, ref = make_pair(n, mode, max_steps=3)
    try:
        assert ours.metadata["autoreset_mode"] == mode == ref.metadata["autoreset_mode"]
        assert ours.single_observation_space == ref.single_observation_space
        assert ours.observation_space == ref.observation_space
        assert ours.action_space == ref.action_space
        script = [[f"market browse --limit {1 + (t + i) % 3}" if (t + i) % 2 else "company status" for i in range(n)] for t in range(9)]
        remask = {1: np.array([True, False, False])}  # stagger: sub-env 0 restarts after its first step
        a = drive(ours, 11, script, mode, remask)
        b = drive(ref, 11, script, mode, remask)
        compare(a, b)
        for r in a:
            obs = r[1][0] if r[0] == "reset" else r[0]
            assert obs in ours.observation_space
        assert ours.seeds_used == tuple(cast(YCBenchEnv, e.unwrapped).seed_used for e in ref.envs)
    finally:
        ours.close()
        ref.close()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_termination_autoreset_matches_sync_vector_env(mode: AutoresetMode) -> None:
    """Sub-env 0 replays the reference greedy agent into bankruptcy (step 135); sub-env 1 keeps going."""
    bankrupt = golden_commands("traj-default-greedy-seed-3.json.gz")[:135]
    other = golden_commands("traj-default-focused-seed-1.json.gz")
    steps = len(bankrupt) + 3
    script = [
        [bankrupt[t] if t < len(bankrupt) else "company status", other[t] if t < len(other) else "company status"] for t in range(steps)
    ]
    ours, ref = make_pair(2, mode)
    try:
        ours.reset(seed=[3, 1])
        ref.reset(seed=[3, 1])
        a: list[Any] = []
        b: list[Any] = []
        for env, out in ((ours, a), (ref, b)):
            done = np.zeros(2, dtype=np.bool_)
            for acts in script:
                if mode == AutoresetMode.DISABLED and done.any():
                    out.append(("reset", env.reset(options={"reset_mask": done.copy()})))
                r = env.step(acts)
                out.append(r)
                done = np.logical_or(r[2], r[3])
        compare(a, b)

        t_end = len(bankrupt) - 1  # index of the terminating step in `a` (no resets before it)
        obs, rew, term, trunc, info = a[t_end]
        assert term.tolist() == [True, False] and not trunc.any()
        if mode == AutoresetMode.SAME_STEP:
            # The terminating step already returns the reset observation; the final one is in info.
            assert obs["text"][0] == "" and obs["funds_cents"][0] == 20_000_000
            assert info["_final_obs"].tolist() == [True, False]
            assert info["final_obs"][0]["funds_cents"] < 0
            assert info["final_info"]["terminal_reason"][0] == "bankruptcy"
            assert info["final_info"]["_terminal_reason"].tolist() == [True, False]
            assert info["step"][0] == 0 and rew[0] < 0
        else:
            assert obs["funds_cents"][0] < 0 and info["terminal_reason"][0] == "bankruptcy"
            assert "final_obs" not in info
        nxt = a[t_end + 1]
        if mode == AutoresetMode.NEXT_STEP:
            # The next step ignores sub-env 0's action and returns its reset: reward 0, flags false.
            obs, rew, term, trunc, info = nxt
            assert obs["text"][0] == "" and obs["funds_cents"][0] == 20_000_000
            assert rew[0] == 0.0 and not term[0] and not trunc[0]
            assert info["step"][0] == 0 and info["reward_cents"][0] == 0
            assert obs["text"][1] != ""  # sub-env 1 did step
        elif mode == AutoresetMode.DISABLED:
            assert nxt[0] == "reset"
            obs, info = nxt[1]
            assert obs["funds_cents"][0] == 20_000_000 and info["_step"].tolist() == [True, False]
    finally:
        ours.close()
        ref.close()


def test_disabled_mode_refuses_to_step_a_finished_env() -> None:
    envs = YCBenchVectorEnv(2, max_steps=1, autoreset_mode=AutoresetMode.DISABLED)
    try:
        envs.reset(seed=0)
        _, _, _, trunc, _ = envs.step(("company status", "company status"))
        assert trunc.all()
        with pytest.raises(AssertionError):
            envs.step(("company status", "company status"))
    finally:
        envs.close()


def test_disabled_mode_refuses_a_finished_env_under_python_O() -> None:
    # The refusal is no `assert` statement: `python -O` strips those, and the step would then go out and step the
    # sub-environments whose episodes are not over while the server refuses the finished one.
    code = """
import sys
from gymnasium.vector import AutoresetMode
from ycgym import YCBenchVectorEnv
envs = YCBenchVectorEnv(2, max_steps=1, autoreset_mode=AutoresetMode.DISABLED)
try:
    envs.reset(seed=0)
    envs.step(("company status", "company status"))
    try:
        envs.step(("company status", "company status"))
    except AssertionError as e:
        print("refused", e)
    else:
        print("stepped")
finally:
    envs.close()
"""
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused") and "reset" in out.stdout, out.stdout


def test_make_vec_uses_the_batched_env() -> None:
    envs = gym.make_vec("ycgym/YCBench-v0", num_envs=4, max_steps=5)
    try:
        assert isinstance(envs.unwrapped, YCBenchVectorEnv)
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, infos = envs.reset(seed=5)
        assert obs in envs.observation_space
        assert isinstance(obs["text"], tuple) and obs["funds_cents"].shape == (4,) and obs["trust"].shape == (4, 6)
        assert infos["_step"].all() and infos["step"].dtype == np.int64
        acts = envs.action_space.sample()
        obs, rew, term, _trunc, infos = envs.step(acts)
        assert rew.dtype == np.float64 and term.dtype == np.bool_ and obs in envs.observation_space
        assert (obs["ok"] == 0).all()  # random text is an ordinary, failing command
        assert len(set(envs.unwrapped.sessions)) == 4
    finally:
        envs.close()


def test_a_vector_env_may_hold_every_session_of_its_own_local_server() -> None:
    """A vector env of more than 256 sub-environments (a shared server's per-client cap) on the process's own local
    server: the discrete one steps all of them (before: session_limit, "256 live sessions per client", at entry 256);
    the server's whole limit (1024) stays, with its own error."""
    from ycgym import ProtocolError, YCBenchDiscreteVectorEnv

    envs = YCBenchDiscreteVectorEnv(300)
    try:
        _, info = envs.reset(seed=1)
        *_, info = envs.step(info["action_mask"].argmax(axis=1))
        assert info["step"].tolist() == [1] * 300
        with pytest.raises(ProtocolError, match=r"session limit reached \(1024 live sessions\)"):
            YCBenchDiscreteVectorEnv(1024 - 300 + 1)
        # The one that could not start left nothing behind: as many again fit.
        YCBenchDiscreteVectorEnv(1024 - 300).close()
        # A text vector env whose reset fails half way keeps the sessions made (closed with it, reused by its next reset).
        text = YCBenchVectorEnv(1024 - 300 + 1)
        try:
            with pytest.raises(ProtocolError, match=r"session limit reached"):
                text.reset(seed=1)
            made = [s for s in text.sessions if s is not None]
            assert len(made) == 1024 - 300
            envs.close()
            text.reset(seed=2)
            assert [s for s in text.sessions[: len(made)]] == made
        finally:
            text.close()
        YCBenchDiscreteVectorEnv(1024).close()
    finally:
        envs.close()


def test_vector_snapshot_and_render() -> None:
    envs = YCBenchVectorEnv(2, render_mode="ansi")
    try:
        envs.reset(seed=[1, 2])
        envs.step(["employee list", "client list"])
        texts = envs.render()
        assert texts is not None and '"employees"' in texts[0] and "Cortex" in texts[1]
        snaps = envs.snapshot()
        assert [s["steps"] for s in snaps] == [1, 1]
    finally:
        envs.close()


def _dtypes(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _dtypes(v) for k, v in x.items()}
    return x.dtype if isinstance(x, np.ndarray) else type(x)


def _info_cases() -> list[list[tuple[int, dict[str, Any]]]]:
    status: dict[str, Any] = {
        "sim_time": "2025-01-01T09:00:00",
        "funds_cents": 20000000,
        "runway_months": 5.26,
        "prestige": {"research": 1.0, "training": 1.5},
        "trust": {"A": 0.0, "B": 0.25},
        "bankrupt": False,
        "events": [],
    }

    def info(i: int, **over: Any) -> dict[str, Any]:
        st = dict(status, funds_cents=status["funds_cents"] + i, events=[{"type": "x", "i": i}] if i % 3 == 0 else [])
        base = {"reward_cents": -i, "step": i, "terminal_reason": None, "status": st, "command": "company status", "session": f"s{i}"}
        base.update(over)
        return base

    n = 4
    return [
        [(i, info(i)) for i in range(n)],  # every env, one shape: the fast path
        [(i, info(i)) for i in (0, 2, 3)],  # a sub-environment missing
        [(i, info(i, terminal_reason="stall" if i == 1 else None)) for i in range(n)],  # str and None mixed
        [(i, info(i, reward_cents=1.5 if i == 2 else 1)) for i in range(n)],  # int and float mixed
        [(i, info(i, text_truncated=True) if i == 1 else info(i)) for i in range(n)],  # keys differ
        [(i, dict(info(i), final_obs={"text": "t"}, final_info={"k": i})) for i in range(n)],  # final_obs
        [(i, info(i, arr=np.arange(3) + i)) for i in range(n)],  # ndarray column
        [(i, info(i, status=dict(status, trust={"A": 0.0} if i else {"A": 0.0, "B": 1.0}))) for i in range(n)],  # nested keys differ
        [(i, info(i, step=np.int32(i))) for i in range(n)],  # numpy scalars
    ]


@pytest.mark.parametrize("case", range(9))
def test_batched_infos_equal_gymnasiums_add_info_fold(case: int) -> None:
    """The vector info built a column at a time (and its all-envs fast path) is Gymnasium's `_add_info`
    folded over the sub-environments: same keys, dtypes and values."""
    entries = _info_cases()[case]
    v = YCBenchVectorEnv.__new__(YCBenchVectorEnv)
    v.num_envs = 4
    got = v._batch_infos(entries)
    ref: dict[str, Any] = {}
    for i, inf in entries:
        ref = gym.vector.VectorEnv._add_info(v, ref, inf, i)
    assert _dtypes(got) == _dtypes(ref)
    assert same(got, ref)


def test_a_single_command_or_seed_of_the_wrong_type_is_named() -> None:
    """``step("company status")`` on a vector env is one command, not N: a TypeError saying so (it read the string as
    14 one-character actions: "expected 3 actions, got 14"); a float seed is a TypeError naming the seed (it was
    "'float' object is not iterable"), for the text and the Discrete vector env alike."""
    from ycgym import YCBenchDiscreteVectorEnv

    env = YCBenchVectorEnv(3)
    denv = YCBenchDiscreteVectorEnv(3)
    try:
        env.reset(seed=0)
        for bad in ("company status", b"company status"):
            with pytest.raises(TypeError, match=r"^actions must be a sequence of 3 actions, one per sub-environment, got a single (str|bytes)$"):
                env.step(bad)  # type: ignore[arg-type]  # one action where a sequence of them is due: the mistake tested
        assert env.step(["company status"] * 3)[4]["step"].tolist() == [1, 1, 1]
        for e in (env, denv):
            for bad_seed in (1.5, "1", {1: 2}):
                with pytest.raises(TypeError, match=r"^seed must be an int, a sequence of 3 ints \(or None\) or None, got "):
                    e.reset(seed=bad_seed)  # type: ignore[arg-type]
        assert env.step(["company status"] * 3)[4]["step"].tolist() == [2, 2, 2]
        assert env.reset(seed=np.arange(3))[1]["step"].tolist() == [0, 0, 0]  # an array of seeds is a sequence too
    finally:
        env.close()
        denv.close()


def test_a_bad_seed_in_a_seed_list_resets_no_sub_environment() -> None:
    """A seed list with a non-integer (``1.5``, ``"2"``, ``True``) or a seed the protocol cannot carry (above 2**53 - 1)
    raises before anything is sent and leaves every episode as it was. A float was taken as its integer part (seed 1.5
    played seed 1, where Gymnasium's vector envs refuse it), and a seed too large failed at the server after the
    sub-environments before it had been reset (their new episodes never returned to the caller)."""
    from ycgym import YCBenchDiscreteVectorEnv

    env = YCBenchVectorEnv(3)
    denv = YCBenchDiscreteVectorEnv(3)
    try:
        env.reset(seed=0)
        denv.reset(seed=0)
        env.step(["company status"] * 3)
        denv.step([0, 0, 0])
        for e in (env, denv):
            for bad in ([1.5, 2, 3], [1, "2", 3], [1, 2, True]):
                with pytest.raises(TypeError, match="seed"):
                    e.reset(seed=bad)  # type: ignore[arg-type]
            for out_of_range in ([1, 2, 2**53], [1, 2**64, 3], 2**53 - 2):
                with pytest.raises(ValueError, match="seed"):
                    e.reset(seed=out_of_range)
        assert env.step(["company status"] * 3)[4]["step"].tolist() == [2, 2, 2]
        assert denv.step([0, 0, 0])[4]["step"].tolist() == [2, 2, 2]
        assert env.reset(seed=[None, np.int64(2), 2**53 - 1])[1]["step"].tolist() == [0, 0, 0]
    finally:
        env.close()
        denv.close()


@pytest.mark.parametrize("kind", ["text", "discrete"])
def test_a_vector_env_above_the_servers_session_limit_says_what_to_do(kind: str) -> None:
    """Before, only "session limit reached (4 live sessions); close one first (batch entry 4)": no word of the env's
    size or of the server flags that raise the limit."""
    from ycgym import LocalServer, ProtocolError, YCBenchDiscreteVectorEnv

    with LocalServer(args=["--max-sessions", "4"]) as srv:
        with pytest.raises(ProtocolError) as e:
            if kind == "text":
                env = YCBenchVectorEnv(6, endpoint=srv.endpoint)
                try:
                    env.reset(seed=1)
                finally:
                    env.close()
            else:
                YCBenchDiscreteVectorEnv(6, endpoint=srv.endpoint)
        name = "YCBenchVectorEnv" if kind == "text" else "YCBenchDiscreteVectorEnv"
        assert e.value.code == "session_limit"
        assert e.value.message.startswith("session limit reached (4 live sessions)")
        assert f"{name}(6) needs 6 sessions at once" in e.value.message
        assert f"the server at {srv.endpoint}" in e.value.message and "--max-sessions" in e.value.message and "--max-sessions-per-client" in e.value.message
