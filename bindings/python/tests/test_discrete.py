"""YCBenchDiscreteEnv and its vector env against the real server: spaces, masks, greedy, episode ends, pickling."""

from __future__ import annotations

import pickle
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ycgym
from helpers import check_env_without_warnings, golden_episode
from ycgym import ProtocolError, YCBenchDiscreteEnv, YCBenchDiscreteVectorEnv
from ycgym.policies import DiscreteGreedy, DiscreteValue, random_masked

STATEFUL = ("task accept", "task assign", "task dispatch", "sim resume", "task cancel")
GOLDEN_OPTIONS = {"start_date": "2025-01-01", "company_name": "BenchCo", "horizon_years": 1}


@pytest.mark.parametrize("dict_obs", [False, True])
def test_check_env_passes_without_warnings(dict_obs: bool) -> None:
    check_env_without_warnings("ycgym/YCBench-Discrete-v0", dict_obs=dict_obs)


def test_spaces_mask_and_info() -> None:
    env = YCBenchDiscreteEnv(market_slots=6, task_slots=2)
    try:
        spec = env.discrete_spec
        assert env.action_space == gym.spaces.Discrete(1 + 6 + 2 * (3 + 8)) and spec["n_actions"] == env.action_space.n
        assert env.observation_space.shape == (spec["obs_size"],) and env.observation_space.dtype == np.float32
        obs, info = env.reset(seed=1)
        assert obs in env.observation_space
        mask = info["action_mask"]
        assert mask.dtype == np.bool_ and mask.shape == (env.action_space.n,)
        assert np.array_equal(mask, env.action_masks())
        assert not mask[0] and mask[1:7].all() and not mask[7:].any()
        obs, reward, terminated, truncated, info = env.step(1)
        assert info["ok"] and info["action_text"].startswith("task accept --task-id ")
        assert reward == 0.0 and not terminated and not truncated
        # A masked-out action is refused: an ordinary step that changes nothing.
        snap = env.snapshot()["sim"]
        obs, reward, terminated, truncated, info = env.step(0)
        assert not info["ok"] and "action_text" not in info and reward == 0.0
        assert env.snapshot()["sim"] == snap
        with pytest.raises(ProtocolError) as e:
            env.step(env.action_space.n)
        assert e.value.code == "invalid_request" and "integer in" in str(e.value)
        assert env.step(np.int64(7))[4]["action_text"].startswith("task assign --task-id ")  # numpy integers work
    finally:
        env.close()


def test_dict_obs() -> None:
    env = gym.make("ycgym/YCBench-Discrete-v0", dict_obs=True)
    try:
        obs, info = env.reset(seed=2)
        assert set(obs) == {"observations", "action_mask"}
        assert np.array_equal(obs["action_mask"].astype(bool), info["action_mask"])
        assert obs in env.observation_space
    finally:
        env.close()


@pytest.mark.parametrize("name", ["traj-default-greedy-seed-1.json.gz", "traj-default-greedy-seed-3.json.gz", "traj-multi-greedy-seed-1.json.gz"])
def test_greedy_in_the_discrete_space_reproduces_the_golden_trajectory(name: str) -> None:
    ep = golden_episode(name)
    expected = [(s["cmd"], s["exit"]) for s in ep["steps"] if " ".join(s["cmd"].split()[:2]) in STATEFUL]
    env = YCBenchDiscreteEnv(preset=ep["preset"], reset_options=GOLDEN_OPTIONS)
    try:
        policy = DiscreteGreedy(env.discrete_spec)
        obs, info = env.reset(seed=ep["seed"])
        got = []
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info["action_mask"]))
            got.append((info["action_text"], 0 if info["ok"] else 1))
            done = terminated or truncated
        assert got == expected
        final = next(s["out"] for s in ep["steps"] if s["cmd"] == "company status")
        assert info["funds_cents"] == final["funds_cents"]
    finally:
        env.close()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(1, 4), rng_seed=st.integers(0, 2**32 - 1))
def test_random_masked_policies_take_only_valid_steps(seed: int, rng_seed: int) -> None:
    env = YCBenchDiscreteEnv(task_slots=3, reset_options={"admissible_commands": True})
    try:
        rng = np.random.default_rng(rng_seed)
        obs, info = env.reset(seed=seed)
        for _ in range(25):
            assert obs in env.observation_space
            assert len(info["admissible_commands"]) == int(info["action_mask"].sum())
            a = random_masked(info["action_mask"], rng)
            fallback = a == 0 and not info["action_mask"][1:].any()
            obs, _, terminated, truncated, info = env.step(a)
            assert info["ok"] or fallback
            if terminated or truncated:
                break
    finally:
        env.close()


def test_episodes_end_by_default() -> None:
    text = gym.make("ycgym/YCBench-v0")
    try:
        text.reset(seed=1)
        n = 0
        while True:
            _, _, terminated, truncated, info = text.step("market browse --limit 3")
            n += 1
            if terminated or truncated:
                break
        assert (n, terminated, truncated, info["terminal_reason"]) == (200, False, True, "stall")
    finally:
        text.close()
    env = YCBenchDiscreteEnv(stall_steps=5, task_slots=8)
    try:
        env.reset(seed=1)
        for _ in range(5):
            _, _, terminated, truncated, info = env.step(1)  # accept, accept, ... never advancing time
        assert truncated and not terminated and info["terminal_reason"] == "stall"
    finally:
        env.close()


def test_text_env_admissible_commands() -> None:
    env = gym.make("ycgym/YCBench-v0", reset_options={"admissible_commands": True})
    try:
        _, info = env.reset(seed=1)
        cmds = info["admissible_commands"]
        assert len(cmds) == 10 and all(c.startswith("task accept --task-id ") for c in cmds)
        _, _, _, _, info = env.step(cmds[0])
        assert info["command"] == "task accept"
        assert any(c.startswith("task dispatch") or c.startswith("task assign") for c in info["admissible_commands"])
    finally:
        env.close()


def test_pickle_continues_the_episode_exactly() -> None:
    env = YCBenchDiscreteEnv()
    try:
        env.reset(seed=5)
        for a in (1, 1 + 10):
            env.step(a)
        copy = pickle.loads(pickle.dumps(env))
        try:
            assert np.array_equal(copy.action_masks(), env.action_masks())
            a = int(np.flatnonzero(env.action_masks())[0])
            r1 = env.step(a)
            r2 = copy.step(a)
            assert np.array_equal(r1[0], r2[0]) and r1[1:4] == r2[1:4] and r1[4]["action_text"] == r2[4]["action_text"]
        finally:
            copy.close()
    finally:
        env.close()


def test_make_vec_batches_with_stacked_masks() -> None:
    venv = gym.make_vec("ycgym/YCBench-Discrete-v0", num_envs=64)
    try:
        assert isinstance(venv, YCBenchDiscreteVectorEnv)
        obs, info = venv.reset(seed=10)
        assert obs.shape == (64, venv.discrete_spec["obs_size"]) and obs.dtype == np.float32
        masks = venv.action_masks()
        assert masks.shape == (64, venv.discrete_spec["n_actions"]) and np.array_equal(masks, info["action_mask"])
        rng = np.random.default_rng(0)
        single = YCBenchDiscreteEnv()
        try:
            so, _ = single.reset(seed=13)
            assert np.array_equal(so, obs[3])
            for _ in range(30):
                acts = np.array([random_masked(m, rng) for m in venv.action_masks()])
                obs, rew, term, trunc, info = venv.step(acts)
                so, sr, st_, su, _ = single.step(int(acts[3]))
                assert np.array_equal(so, obs[3]) and sr == rew[3] and st_ == term[3] and su == trunc[3]
                if st_ or su:
                    break
        finally:
            single.close()
        assert obs in venv.observation_space
    finally:
        venv.close()


def test_discrete_value_accepts_the_best_reward_per_work_and_otherwise_plays_greedy() -> None:
    """ycgym.policies.DiscreteValue (train_ppo's demonstrator): greedy's task handling, a different accept rule."""
    env = YCBenchDiscreteEnv(market_slots=5, task_slots=2)
    try:
        spec = env.discrete_spec
        value, greedy = DiscreteValue(spec), DiscreteGreedy(spec)
        feat = {n: i for i, n in enumerate(spec["feature_names"])}
        names = spec["action_names"]
        obs, info = env.reset(seed=4)
        a = value.act(obs, info["action_mask"])
        assert info["action_mask"][a] and names[a].startswith("accept[")
        ratios = [obs[feat[f"market[{k}].reward"]] / sum(obs[feat[f"market[{k}].qty.{d}"]] for d in ycgym.DOMAINS) for k in range(5)]
        assert names[a] == f"accept[{int(np.argmax(ratios))}]"
        steps = 0
        while steps < 300:
            m = info["action_mask"]
            a, g = value.act(obs, m), greedy.act(obs, m)
            assert m[a]
            if not names[g].startswith("accept["):
                assert a == g  # staffing, dispatching and resuming are greedy's
            obs, _, term, trunc, info = env.step(a)
            steps += 1
            if term or trunc:
                break
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_discrete_vector_env_autoreset_modes(mode: str) -> None:
    """make_vec(..., vector_kwargs={"autoreset_mode": ...}) gives Gymnasium's SAME_STEP and DISABLED semantics."""
    from gymnasium.vector import AutoresetMode

    v = cast(YCBenchDiscreteVectorEnv, gym.make_vec("ycgym/YCBench-Discrete-v0", num_envs=2, vector_kwargs={"autoreset_mode": AutoresetMode(mode)}, max_steps=3))
    try:
        assert v.metadata["autoreset_mode"] == AutoresetMode(mode)
        obs, info = v.reset(seed=[5, 6])
        first = obs.copy()

        def valid(info: dict[str, Any]) -> np.ndarray:
            # The current masks: after a masked reset info["action_mask"] holds only the reset sub-environments' rows.
            assert (v.action_masks()[info["_action_mask"]] == info["action_mask"][info["_action_mask"]]).all()
            return np.asarray([int(np.flatnonzero(m)[0]) for m in v.action_masks()])

        for _ in range(2):
            obs, _, term, trunc, info = v.step(valid(info))
            assert not (term | trunc).any()
        obs, _, term, trunc, info = v.step(valid(info))
        assert trunc.all() and info["terminal_reason"] is not None
        if mode == "SameStep":
            # The returned observation is the next episode's (reset) one; the last one is in final_obs.
            assert info["_final_obs"].all() and info["_final_info"].all()
            assert info["final_obs"][0].shape == first[0].shape and info["final_info"]["step"].tolist() == [3, 3]
            assert info["final_info"]["terminal_reason"].tolist() == ["max_steps", "max_steps"]
            assert (info["step"] == 0).all()
            obs, _, term, trunc, info = v.step(valid(info))
            assert (info["step"] == 1).all() and not (term | trunc).any()
        else:
            assert (info["step"] == 3).all()
            with pytest.raises(ProtocolError) as e:
                v.step(valid(info))
            assert e.value.code == "episode_over"
            obs, info = v.reset(options={"reset_mask": np.array([True, False])})
            assert info["_step"].tolist() == [True, False] and info["step"][0] == 0
            obs, info = v.reset(options={"reset_mask": np.array([False, True])})
            obs, _, term, trunc, info = v.step(valid(info))
            assert (info["step"] == 1).all()
    finally:
        v.close()


def test_the_discrete_env_asks_for_no_text_unless_it_renders_it() -> None:
    plain = YCBenchDiscreteEnv()
    shown = YCBenchDiscreteEnv(render_mode="ansi")
    try:
        assert plain._opts["text"] is False and "text" not in shown._opts
        plain.reset(seed=1)
        shown.reset(seed=1)
        o1, *_ = plain.step(0)
        o2, *_ = shown.step(0)
        assert np.array_equal(o1, o2) and plain.render() is None and shown.render() != ""
    finally:
        plain.close()
        shown.close()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_discrete_vector_env_binary_infos_of_a_full_step_equal_the_entry_by_entry_infos(mode: str) -> None:
    """A binary step of every sub-environment builds its infos from the reply's columns as they are; they equal the
    infos built entry by entry (same keys in the same order, dtypes and values), over steps with episode ends."""
    from gymnasium.vector import AutoresetMode

    v = YCBenchDiscreteVectorEnv(4, max_steps=4, autoreset_mode=AutoresetMode(mode))
    fast = 0
    try:
        infos = v._infos

        def checked(results: Any, stepped: Any = None) -> dict[str, Any]:
            nonlocal fast
            out = infos(results, stepped)
            if stepped is not None and len(stepped[0]) == v.num_envs:
                fast += 1
                ref = v._infos_of(results, stepped)
                assert list(out) == list(ref)
                for key, want in ref.items():
                    assert out[key].dtype == want.dtype and out[key].shape == want.shape and out[key].tolist() == want.tolist(), key
            return out

        v._infos = checked  # type: ignore[method-assign]
        v.reset(seed=3)
        ends = set()
        for k in range(16):
            if k == 2:  # out of step: sub-environment 0's episodes end two steps after the others'
                v.reset(options={"reset_mask": np.array([True, False, False, False])})
            _, _, term, trunc, _ = v.step(np.asarray([int(np.flatnonzero(m)[0]) for m in v.action_masks()]))
            ends.add(tuple((term | trunc).tolist()))
        assert fast >= 8 and (False, True, True, True) in ends
    finally:
        v.close()


def test_actions_must_be_integers_as_in_the_discrete_space() -> None:
    """Integers as ``Discrete`` holds them (``int``, numpy integers, an integer array of one element) are actions;
    anything else is a ``TypeError`` and no step: ``int(action)`` used to take ``1.5`` as 1, ``"3"`` as 3 and
    ``True`` as 1, hiding a policy's bug (a float from a continuous head, a mask entry) behind a valid step."""
    env = YCBenchDiscreteEnv()
    venv = YCBenchDiscreteVectorEnv(2)
    try:
        env.reset(seed=1)
        venv.reset(seed=1)
        for bad in (1.5, 2.0, np.float32(2.0), "3", b"3", True, np.True_, None, np.array([1.0]), np.array([1, 2]), [1]):
            with pytest.raises(TypeError, match="integer index"):
                env.step(bad)
        for bads in ([1.5, 1.0], np.array([1.0, 1.0]), np.array([True, True]), ["1", "1"], [None, 1]):
            with pytest.raises(TypeError, match="integer"):
                venv.step(bads)
        # Nothing ran: the first steps taken now are the episodes' first.
        goods = (1, np.int64(1), np.uint8(1), np.array(1), np.array([1]))
        assert [env.step(g)[4]["step"] for g in goods] == [1, 2, 3, 4, 5]
        _, _, _, _, info = venv.step(np.array([1, 1], dtype=np.int32))
        assert info["step"].tolist() == [1, 1]
    finally:
        env.close()
        venv.close()


def _same_info(ours: dict[str, Any], ref: dict[str, Any], sessions: tuple[Any, Any]) -> bool:
    """Whether the vector info ``ours`` equals Gymnasium's ``ref`` exactly, recursively: the same keys, ``_key`` masks,
    dtypes and values, unset entries included (after a masked reset the rows of sub-environments not reset are zeros,
    as ``_add_info`` leaves them). ``session`` values are the envs' own session ids (``sessions``: ours, the reference's
    sub-environments'): each set entry must be its sub-environment's session, each unset one None."""
    from helpers import same

    if ours.keys() != ref.keys():
        return False
    for key, value in ours.items():
        if isinstance(value, dict) or isinstance(ref[key], dict):
            if not (isinstance(value, dict) and isinstance(ref[key], dict) and _same_info(value, ref[key], sessions)):
                return False
        elif key == "session":
            rows = ours["_session"]
            for array, own in ((value, sessions[0]), (ref[key], sessions[1])):
                want = np.asarray([s if r else None for s, r in zip(own, rows)] + [None], dtype=object)[:-1]
                if not same(array, want):
                    return False
        elif not same(value, ref[key]):
            return False
    return True


@pytest.mark.parametrize("encoding", ["binary", "json"])
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_discrete_vector_env_matches_sync_vector_env_of_the_discrete_env(mode: str, encoding: str) -> None:
    """Every autoreset mode, with either reply encoding, returns what ``SyncVectorEnv`` of ``YCBenchDiscreteEnv``
    returns: the same observations, rewards and flags, the same ``render()``, and infos equal to Gymnasium's: the same
    keys (``session``, ``action_text`` where an action was taken, ``admissible_commands`` when asked for: they used to
    be missing), masks and values, unset entries included (after a masked reset ``action_mask`` used to hold the current
    masks of the sub-environments not reset, where Gymnasium's rows are zeros); ``final_obs`` and ``final_info`` too (in
    SAME_STEP mode ``final_info`` is, as Gymnasium's vector envs build it, a dict of batched arrays with ``_key``
    masks; it used to be an object array of per-env dicts, so ``info["final_info"]["step"]`` raised)."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from helpers import same

    m = AutoresetMode(mode)
    kw: dict[str, Any] = {"max_steps": 3, "dict_obs": True, "market_slots": 3, "task_slots": 2, "render_mode": "ansi"}
    if encoding == "json":
        kw["reset_options"] = {"admissible_commands": True}
    ours = YCBenchDiscreteVectorEnv(3, autoreset_mode=m, encoding=encoding, **kw)
    ref = SyncVectorEnv([lambda: YCBenchDiscreteEnv(**kw) for _ in range(3)], autoreset_mode=m)

    def sessions() -> tuple[Any, Any]:
        return ours.sessions, tuple(cast(YCBenchDiscreteEnv, e.unwrapped).session for e in ref.envs)

    try:
        assert ours.metadata == ref.metadata and ours.render_mode == ref.render_mode == "ansi"
        got: tuple[Any, ...]  # a reset's, then a step's
        want: tuple[Any, ...]
        got, want = ours.reset(seed=4), ref.reset(seed=4)
        assert same(got[0], want[0]) and _same_info(got[1], want[1], sessions())
        assert ours.render() == ref.render()
        ended = refused = 0
        for t in range(8):
            if t in (1, 5):  # out of step: sub-environment 0's episodes end a step after the others'
                got = ours.reset(options={"reset_mask": np.array([True, False, False])})
                want = ref.reset(options={"reset_mask": np.array([True, False, False])})
                assert same(got[0], want[0]) and _same_info(got[1], want[1], sessions()), t
                assert ours.render() == ref.render()
            masks = ours.action_masks()
            acts = np.array([int(np.flatnonzero(row)[-1]) for row in masks])
            if t % 2 == 0 and not masks[1].all():  # a refused action: no action_text for that sub-environment
                acts[1] = int(np.flatnonzero(~masks[1])[0])
                refused += 1
            got, want = ours.step(acts), ref.step(acts)
            for k in range(4):
                assert same(got[k], want[k]), (t, k)
            assert _same_info(got[4], want[4], sessions()), t
            assert ours.render() == ref.render(), t
            done = got[2] | got[3]
            ended += int(done.sum())
            if m == AutoresetMode.SAME_STEP and done.any():
                assert isinstance(got[4]["final_info"], dict) and got[4]["final_info"]["_step"].tolist() == done.tolist()
            if m == AutoresetMode.DISABLED and done.any():
                got = ours.reset(options={"reset_mask": done})
                want = ref.reset(options={"reset_mask": done})
                assert same(got[0], want[0]) and _same_info(got[1], want[1], sessions())
        assert ended >= 6 and refused >= 2
    finally:
        ours.close()
        ref.close()


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_discrete_vector_reset_options_apply_to_that_reset_as_in_sync_vector_env(encoding: str) -> None:
    """``reset(options=...)`` applies the options to the sub-environments it resets, as ``SyncVectorEnv`` passes them to
    each ``YCBenchDiscreteEnv.reset`` (a ``split`` maps each sub-environment's seed; ``admissible_commands`` adds that
    info column); automatic resets go back to the constructor's options. The vector env used to refuse every option
    but ``reset_mask`` with a ValueError."""
    from gymnasium.vector import SyncVectorEnv

    from helpers import same

    kw: dict[str, Any] = {"max_steps": 2, "market_slots": 3, "task_slots": 2}
    ours = YCBenchDiscreteVectorEnv(2, encoding=encoding, **kw)
    ref = SyncVectorEnv([lambda: YCBenchDiscreteEnv(**kw) for _ in range(2)])

    def sessions() -> tuple[Any, Any]:
        return ours.sessions, tuple(cast(YCBenchDiscreteEnv, e.unwrapped).session for e in ref.envs)

    plain = YCBenchDiscreteVectorEnv(2, encoding=encoding, **kw)
    try:
        resets: list[dict[str, Any]] = [
            {"seed": 3, "options": {"start_date": "2025-03-03", "horizon_years": 1, "admissible_commands": True}},
            {"seed": 7, "options": {"split": "validation", "reset_mask": np.array([False, True])}},
            {"options": {"company_name": "Other", "max_steps": 5}},
        ]
        for t, kwargs in enumerate(resets):
            got = ours.reset(**{**kwargs, "options": dict(kwargs["options"])})
            want = ref.reset(**{**kwargs, "options": dict(kwargs["options"])})
            assert same(got[0], want[0]) and _same_info(got[1], want[1], sessions()), t
            if t == 0:  # the options were applied
                assert got[1]["_admissible_commands"].all() and "admissible_commands" not in plain.reset(seed=3)[1]
            if t == 1:  # sub-environment 1 played seed 8 of the validation split, not seed 8
                assert not same(got[0][1], plain.reset(seed=[7, 8])[0][1])
            for _ in range(3):  # through an automatic reset (the constructor's options)
                masks = ours.action_masks()
                acts = np.array([int(np.flatnonzero(m)[-1]) for m in masks])
                g, w = ours.step(acts), ref.step(acts)
                assert all(same(g[k], w[k]) for k in range(4)) and _same_info(g[4], w[4], sessions()), t
    finally:
        ours.close()
        ref.close()
        plain.close()


def test_a_split_reset_option_of_the_constructor_plays_that_split_in_every_reset() -> None:
    """``reset_options={"split": ...}`` (as ``YCBenchEnv`` takes it): every reset, automatic ones included, plays the
    split's seed of its reset seed. Both Discrete envs used to send ``split`` to the server with their first session's
    reset and raise at construction (``invalid_request``: unknown field 'split')."""
    from gymnasium.vector import SyncVectorEnv

    from helpers import same

    kw: dict[str, Any] = {"max_steps": 1, "reset_options": {"split": "validation"}}
    ours = YCBenchDiscreteVectorEnv(2, **kw)
    ref = SyncVectorEnv([lambda: YCBenchDiscreteEnv(**kw) for _ in range(2)])
    plain = YCBenchDiscreteEnv(max_steps=1)
    try:
        got, want = ours.reset(seed=4), ref.reset(seed=4)
        assert same(got[0], want[0]) and [cast(YCBenchDiscreteEnv, e.unwrapped).seed_used for e in ref.envs] != [4, 5]
        assert not same(got[0][0], plain.reset(seed=4)[0])
        for _ in range(4):  # each step ends the episodes; the next resets them (NEXT_STEP) in the split
            g, w = ours.step(np.zeros(2, dtype=np.int64)), ref.step(np.zeros(2, dtype=np.int64))
            assert all(same(g[k], w[k]) for k in range(4))
    finally:
        ours.close()
        ref.close()
        plain.close()


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_the_vector_infos_say_which_actions_were_refused(encoding: str) -> None:
    """``info["ok"]`` (bool, with ``_ok``), as ``SyncVectorEnv`` of ``YCBenchDiscreteEnv`` gives it: false for a
    sub-environment whose action was masked out (a refused no-op step). Without it, a policy that ignores the mask could
    not tell refused actions from taken ones in a vector env."""
    v = YCBenchDiscreteVectorEnv(3, encoding=encoding)
    try:
        _, info = v.reset(seed=1)
        assert info["ok"].dtype == np.bool_ and info["ok"].tolist() == [True, True, True] and info["_ok"].all()
        masks = v.action_masks()
        refused = int(np.flatnonzero(~masks[1])[0])
        acts = np.array([int(np.flatnonzero(masks[0])[0]), refused, int(np.flatnonzero(masks[2])[0])])
        _, reward, _, _, info = v.step(acts)
        assert info["ok"].tolist() == [True, False, True] and info["_ok"].all()
        assert reward[1] == 0 and info["step"].tolist() == [1, 1, 1]
    finally:
        v.close()


def _no_shared_arrays(info: dict[str, Any]) -> None:
    arrays = [(k, v) for k, v in info.items() if isinstance(v, np.ndarray)]
    for i, (k, a) in enumerate(arrays):
        for k2, b in arrays[i + 1 :]:
            assert not np.shares_memory(a, b), (k, k2)
    for v in info.values():
        if isinstance(v, dict):
            _no_shared_arrays(v)


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_the_vector_infos_arrays_are_their_own(encoding: str) -> None:
    """Every array of a Discrete vector env's infos (the ``_key`` masks among them) is its own, as ``SyncVectorEnv``'s
    ``_add_info`` makes them: the masks were one array shared by every key, so a caller that cleared one mask (to drop
    a key's entries) cleared them all."""
    v = YCBenchDiscreteVectorEnv(3, encoding=encoding)
    try:
        _, info = v.reset(seed=1)
        _no_shared_arrays(info)
        for _ in range(3):
            masks = v.action_masks()
            _, _, _, _, info = v.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
            _no_shared_arrays(info)
        _, info = v.reset(options={"reset_mask": np.array([True, False, True])})
        _no_shared_arrays(info)
        info["_step"][:] = False
        assert info["_ok"].tolist() == [True, False, True]
    finally:
        v.close()


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_an_out_of_range_action_steps_no_sub_environment(encoding: str) -> None:
    """An index outside ``[0, N)`` for one sub-environment raises ``ProtocolError`` (``invalid_request``, naming the
    sub-environment) and steps none: the server used to step the others of the batch, whose results the caller never
    saw (a hidden step; an episode could end unseen)."""
    v = YCBenchDiscreteVectorEnv(3, encoding=encoding)
    try:
        v.reset(seed=1)
        n = int(v.single_action_space.n)
        for bad in ([1, n, 1], [n + 5, 1, 1], [1, 1, -1], [1, 2**40, 1]):
            with pytest.raises(ProtocolError) as e:
                v.step(np.array(bad))
            assert e.value.code == "invalid_request" and f"[0, {n - 1}]" in str(e.value), bad
            assert e.value.index == next(i for i, a in enumerate(bad) if not 0 <= a < n)
        _, _, _, _, info = v.step(np.array([1, 1, 1]))
        assert info["step"].tolist() == [1, 1, 1]
    finally:
        v.close()


@pytest.fixture(scope="module")
def dict_env() -> Any:
    env = YCBenchDiscreteEnv(dict_obs=True, max_steps=8, task_slots=2)
    yield env
    env.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 2), sample_seed=st.integers(0, 2**32 - 1), resets=st.integers(1, 3))
def test_masked_samples_are_valid_observations_stay_in_the_space_and_seedless_resets_repeat(
    dict_env: YCBenchDiscreteEnv, seed: int, sample_seed: int, resets: int
) -> None:
    """Gymnasium's ``action_space.sample(mask=int8 mask)`` draws only valid actions; every observation (terminal ones
    included) lies in ``observation_space`` with ``action_mask`` equal to ``info["action_mask"]``; ``reset(seed=s)``
    then seedless resets play the same seeds and worlds again."""
    env = dict_env
    env.action_space.seed(sample_seed)
    obs, info = env.reset(seed=seed)
    firsts: list[Any] = []
    for _ in range(8):
        assert obs in env.observation_space and info["action_mask"].dtype == np.bool_
        assert np.array_equal(obs["action_mask"], info["action_mask"].astype(np.int8))
        a = env.action_space.sample(mask=obs["action_mask"])
        assert info["action_mask"][a]
        fallback = a == 0 and not info["action_mask"][1:].any()
        obs, _, terminated, truncated, info = env.step(a)
        assert info["ok"] or fallback
        if terminated or truncated:
            break
    assert obs in env.observation_space
    for again in (False, True):
        env.reset(seed=seed)
        got = []
        for _ in range(resets):
            o, _ = env.reset()
            got.append((env.seed_used, o["observations"].tobytes()))
        if again:
            assert got == firsts
        firsts = got


def test_disabled_mode_refuses_a_step_while_an_episode_is_over_and_steps_no_sub_environment() -> None:
    """DISABLED mode, one sub-environment's episode over, the other's not: ``step`` raises ``ProtocolError``
    (``episode_over``, ``index`` the ended one) before anything is sent. The server used to refuse only the ended entry
    and step the other, whose result the caller never saw (here its episode ended unseen: the next step after
    resetting the first failed again)."""
    from gymnasium.vector import AutoresetMode

    v = YCBenchDiscreteVectorEnv(2, max_steps=2, autoreset_mode=AutoresetMode.DISABLED)
    try:
        v.reset(seed=1)
        v.step([0, 0])
        v.reset(options={"reset_mask": np.array([False, True])})
        _, _, term, trunc, info = v.step([0, 0])
        assert (term | trunc).tolist() == [True, False] and info["step"].tolist() == [2, 1]
        with pytest.raises(ProtocolError) as e:
            v.step([0, 0])
        assert e.value.code == "episode_over" and e.value.index == 0
        v.reset(options={"reset_mask": np.array([True, False])})
        _, _, term, trunc, info = v.step([0, 0])
        assert info["step"].tolist() == [1, 2] and (term | trunc).tolist() == [False, True]
    finally:
        v.close()


@pytest.mark.parametrize("where", ["reset", "constructor", "vector_reset"])
def test_options_that_would_change_the_action_frame_are_refused_not_replaced(where: str) -> None:
    """``market_slots``, ``task_slots`` and ``actions`` fix the spaces, so no reset can change them: a reset option
    (or a constructor ``reset_options`` entry) that asks for another value raises ValueError naming it, and the env is
    as it was. They used to be replaced by the constructor's value without a word (the user's value silently ignored).
    The same value is accepted."""
    for key, bad in (("market_slots", 5), ("task_slots", 4), ("actions", "text")):
        if where == "constructor":
            with pytest.raises(ValueError, match=key):
                YCBenchDiscreteEnv(market_slots=3, task_slots=2, reset_options={key: bad})
            continue
        env: Any = YCBenchDiscreteVectorEnv(2, market_slots=3, task_slots=2) if where == "vector_reset" else YCBenchDiscreteEnv(market_slots=3, task_slots=2)
        try:
            first = env.reset(seed=1)
            with pytest.raises(ValueError, match=key):
                env.reset(seed=2, options={key: bad})
            same_value = {"market_slots": 3, "task_slots": 2, "actions": "discrete"}[key]
            again = env.reset(seed=1, options={key: same_value})
            assert np.array_equal(again[0], first[0])
        finally:
            env.close()
