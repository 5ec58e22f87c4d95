"""ShardedVectorEnv: a vector env over K local servers returns exactly what the unsharded env returns."""

from __future__ import annotations

import copy
import os
import pickle
import signal
import threading
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import given, settings
from hypothesis import strategies as st

import ycgym
from helpers import alive, same, spoil_reply
from ycgym import EpisodeOverError, ProtocolError, ShardedVectorEnv, VectorStepError, YCBenchDiscreteVectorEnv, YCBenchVectorEnv
from ycgym import sharded as sharded_module

N = 5
KW: dict[str, Any] = {"max_steps": 6, "market_slots": 3, "task_slots": 2, "render_mode": "ansi"}


def strip(v: Any) -> Any:
    """``v`` without the session ids (each server names its own)."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("session", "_session")}
    if isinstance(v, tuple):
        return tuple(strip(x) for x in v)
    return v


def outcome(call: Any) -> Any:
    try:
        return ("ok", strip(call()))
    except Exception as e:  # noqa: BLE001 - compared
        r = e.result if isinstance(e, VectorStepError) else None
        return (type(e).__name__, str(e), getattr(e, "index", None), strip(r), getattr(e, "errors", {}).keys())


def check(a: Any, b: Any) -> Any:
    assert same(a[0], b[0]), (a[0], b[0])
    assert same(a, b)
    return a


def both(plain: Any, sharded: Any, call: Any) -> Any:
    return check(outcome(lambda: call(plain)), outcome(lambda: call(sharded)))


@pytest.fixture(scope="module", params=["NextStep", "SameStep", "Disabled"])
def pairs(request: pytest.FixtureRequest) -> Iterator[tuple[YCBenchDiscreteVectorEnv, list[ShardedVectorEnv]]]:
    mode = AutoresetMode(request.param)
    plain = YCBenchDiscreteVectorEnv(N, autoreset_mode=mode, **KW)
    sharded = [ShardedVectorEnv(N, servers=k, autoreset_mode=mode, **KW) for k in (1, 2, 3)]
    yield plain, sharded
    plain.close()
    for s in sharded:
        s.close()


@settings(max_examples=6)
@given(seed=st.integers(0, 2**31 - 2), choices=st.lists(st.integers(0, 2**16), min_size=30, max_size=60), k=st.sampled_from([0, 1, 2]))
def test_same_as_unsharded(pairs: tuple[YCBenchDiscreteVectorEnv, list[ShardedVectorEnv]], seed: int, choices: list[int], k: int) -> None:
    """Random valid actions (and masked resets, reset(seed=None), DISABLED's refusals) over episode ends: every
    observation, mask, reward, flag, info, render and error is the unsharded env's, for K = 1, 2, 3."""
    plain, sharded = pairs[0], pairs[1][k]
    both(plain, sharded, lambda e: e.reset(seed=seed))
    for c in choices:
        masks = plain.action_masks()
        assert same(masks, sharded.action_masks())
        if c % 17 == 0:  # a masked reset (None seeds: drawn from each sub-environment's generator)
            mask = np.array([(c >> j) & 1 == 1 for j in range(N)], dtype=np.bool_)
            mask[c % N] = True
            both(plain, sharded, lambda e, m=mask: e.reset(options={"reset_mask": m}))
            continue
        if c % 23 == 0:
            both(plain, sharded, lambda e: e.reset())
            continue
        acts = np.array([np.flatnonzero(m)[(c >> j) % max(1, int(m.sum()))] if m.any() else 0 for j, m in enumerate(masks)])
        got = both(plain, sharded, lambda e, a=acts: e.step(a))
        assert same(plain.render(), sharded.render())
        if got[0] == "EpisodeOverError":  # DISABLED: reset the ended ones
            due = plain._autoreset.copy()
            both(plain, sharded, lambda e, m=due: e.reset(options={"reset_mask": m}))


def test_text_kind_and_seeds() -> None:
    """kind="text": the same observations (text tuples), infos and snapshots; reset(seed=[...]) per sub-environment."""
    kw: dict[str, Any] = {"max_steps": 3, "render_mode": "ansi", "autoreset_mode": AutoresetMode.SAME_STEP}
    with closing(YCBenchVectorEnv(3, **kw)) as plain, closing(ShardedVectorEnv(3, servers=2, kind="text", **kw)) as sharded:
        both(plain, sharded, lambda e: e.reset(seed=3))
        both(plain, sharded, lambda e: e.reset(seed=[7, None, 9]))  # None: drawn from sub-environment 1's generator
        for t in range(8):
            both(plain, sharded, lambda e, t=t: e.step(["company status", "employee list", "client list"][t % 3 :] + ["company status"] * (t % 3)))
            assert same(plain.render(), sharded.render())
        assert same(strip_snapshots(plain.snapshot()), strip_snapshots(sharded.snapshot()))
        with closing(pickle.loads(pickle.dumps(sharded))) as copied:
            for _ in range(4):
                want = outcome(lambda: plain.step(["company status"] * 3))
                check(outcome(lambda c=copied: c.step(["company status"] * 3)), want)


def strip_snapshots(snaps: list[Any]) -> list[Any]:
    return [{k: v for k, v in s.items() if k != "session"} for s in snaps]


def test_refused_before_any_shard_steps() -> None:
    """Bad actions, a step before reset and DISABLED's refusal name global indices and step no shard."""
    with closing(ShardedVectorEnv(4, servers=2, max_steps=2, autoreset_mode=AutoresetMode.DISABLED)) as env:
        with pytest.raises(RuntimeError, match="reset"):
            env.step([0] * 4)
        env.reset(seed=1)
        with pytest.raises(ProtocolError) as bad:
            env.step([0, 0, 0, 10**6])
        assert bad.value.index == 3
        with pytest.raises(ValueError, match="expected 4 actions"):
            env.step([0] * 3)
        steps = env.step([0, 0, 0, 0])[4]["step"].tolist()
        assert steps == [1, 1, 1, 1]
        env.step([0] * 4)  # the episodes end (max_steps 2)
        env.reset(options={"reset_mask": np.array([True, True, True, False])})
        with pytest.raises(EpisodeOverError) as over:
            env.step([0] * 4)
        assert over.value.index == 3 and "sub-environment 3" in str(over.value)
        env.reset(options={"reset_mask": np.array([False, False, False, True])})
        assert env.step([0] * 4)[4]["step"].tolist() == [1, 1, 1, 1]  # none stepped by the refused steps


def test_partial_failure_global_indices() -> None:
    """A lost session in shard 1 fails alone: the other sub-environments' results are taken in and the error names
    the global index; a retried step goes on (nothing lost or stepped twice)."""
    with closing(ShardedVectorEnv(4, servers=2, max_steps=50)) as env, closing(YCBenchDiscreteVectorEnv(4, max_steps=50)) as plain:
        env.reset(seed=5)
        plain.reset(seed=5)
        shard = env.shards[1]
        shard.client.close(shard.sessions[1])  # global sub-environment 3
        with pytest.raises(VectorStepError) as err:
            env.step([0] * 4)
        want = plain.step([0] * 4)
        assert list(err.value.errors) == [3] and err.value.index == 3 and err.value.code == "unknown_session"
        assert err.value.stepped.tolist() == [True, True, True, False]
        assert same(strip(err.value.result[:4])[0][:3], want[0][:3])
        assert err.value.result[4]["step"].tolist() == [1, 1, 1, 0]
        env.reset(options={"reset_mask": np.array([False, False, False, True])})
        assert env.step([0] * 4)[4]["step"].tolist() == [2, 2, 2, 1]


def test_interrupt_leaves_unreturned_steps_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in the main thread while another shard steps: the other shard finishes, and its step, which nobody
    returned, is not played on (those sub-environments are due for a reset, as the plain env marks a stopped step)."""
    with closing(ShardedVectorEnv(4, servers=2, max_steps=50, autoreset_mode=AutoresetMode.DISABLED)) as env:
        env.reset(seed=2)
        first = env.shards[0]

        def interrupted(actions: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(first, "step", interrupted)
        with pytest.raises(KeyboardInterrupt):
            env.step([0] * 4)
        monkeypatch.undo()
        with pytest.raises(EpisodeOverError) as over:
            env.step([0] * 4)
        assert over.value.index == 2 and "due for a reset" in str(over.value)
        env.reset(seed=2)
        assert env.step([0] * 4)[4]["step"].tolist() == [1, 1, 1, 1]


def test_pickle_copy_and_close_leave_nothing() -> None:
    """A pickled (or deep-copied) env goes on as the original; close() ends every server and thread."""
    threads = threading.active_count()
    env = ShardedVectorEnv(4, servers=2, max_steps=8, render_mode="ansi")
    env.reset(seed=11)
    env.step([0] * 4)
    pids = [s.pid for s in env._servers]
    for other in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        try:
            assert isinstance(other, ShardedVectorEnv) and other.servers == 2
            for _ in range(10):
                acts = env.action_masks().argmax(1)
                check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts, o=other: o.step(a)))
            pids += [s.pid for s in other._servers]
        finally:
            other.close()
        env.reset(seed=11)
        env.step([0] * 4)
    env.close()
    assert not any(alive(p) for p in pids)
    assert threading.active_count() == threads
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.step([0] * 4)


def test_servers_argument() -> None:
    bads: list[Any] = [0, 5, 1.5, True, "2"]
    for bad in bads:
        with pytest.raises(ValueError, match="servers"):
            ShardedVectorEnv(4, servers=bad)
    with pytest.raises(ValueError, match="endpoint"):
        ShardedVectorEnv(4, servers=2, endpoint="tcp://127.0.0.1:1")
    env = gym.make_vec("ycgym/YCBench-Discrete-v0", num_envs=3, vector_kwargs={"servers": 2, "autoreset_mode": AutoresetMode.SAME_STEP}, max_steps=3)
    try:
        assert isinstance(env, ShardedVectorEnv) and env.servers == 2 and env.autoreset_mode == AutoresetMode.SAME_STEP
        assert [s.num_envs for s in env.shards] == [2, 1]
    finally:
        env.close()
    text = gym.make_vec(ycgym.ENV_ID, num_envs=2, servers=2)
    try:
        assert isinstance(text, ShardedVectorEnv) and text.kind == "text"
    finally:
        text.close()


def test_first_reset_masked() -> None:
    """A first reset that leaves a whole shard out: the plain env steps after any reset (the others' first sessions),
    and so does the sharded one."""
    with closing(YCBenchDiscreteVectorEnv(4, **KW)) as plain, closing(ShardedVectorEnv(4, servers=2, **KW)) as sharded:
        mask = np.array([True, False, False, False])
        both(plain, sharded, lambda e: e.reset(seed=4, options={"reset_mask": mask}))
        for _ in range(3):
            got = both(plain, sharded, lambda e: e.step(e.action_masks().argmax(1)))
            assert got[0] == "ok"


def test_default_spin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards poll (the plain env's spin) only where the process has a CPU for each shard's wait and server, or where
    YCGYM_SPIN_US says so."""
    from ycgym import sharded

    monkeypatch.delenv("YCGYM_SPIN_US", raising=False)
    monkeypatch.setattr(sharded, "_usable_cpus", lambda: 4)
    assert [sharded.default_spin_us(k) for k in (1, 2, 3)] == [None, None, 0]
    monkeypatch.setenv("YCGYM_SPIN_US", "200")
    assert sharded.default_spin_us(3) is None


def test_refused_reset_resets_no_shard() -> None:
    """A reset the plain env refuses before sending anything (a seed past 2**53 - 1 for sub-environment 2) is refused
    alike, naming sub-environment 2, with no shard reset or marked due."""
    with closing(YCBenchDiscreteVectorEnv(4, **KW)) as plain, closing(ShardedVectorEnv(4, servers=2, **KW)) as sharded:
        both(plain, sharded, lambda e: e.reset(seed=1))
        got = both(plain, sharded, lambda e: e.reset(seed=[1, 2, 2**60, 3]))
        assert got[0] == "ValueError" and "sub-environment 2" in got[1]
        for _ in range(3):
            assert both(plain, sharded, lambda e: e.step(e.action_masks().argmax(1)))[0] == "ok"


def test_failed_reset_leaves_the_reset_owed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard's reset fails after another shard's went through: that one's sub-environments are due for the reset
    asked for (its seeds), as the plain env marks the part of a reset the server made; the error names global indices."""
    with closing(YCBenchDiscreteVectorEnv(4, **KW)) as plain, closing(ShardedVectorEnv(4, servers=2, **KW)) as sharded:
        sharded.reset(seed=1)
        want = plain.reset(seed=7)[0]

        def refused(**kwargs: Any) -> Any:
            raise ProtocolError("invalid_request", "sub-environment 0: refused", index=0)

        monkeypatch.setattr(sharded.shards[1], "reset", refused)
        with pytest.raises(ProtocolError) as err:
            sharded.reset(seed=7)
        assert err.value.index == 2 and "sub-environment 2" in str(err.value)
        monkeypatch.undo()
        obs, _, _, _, info = sharded.step([0] * 4)  # NEXT_STEP: the owed resets, seeds 7 and 8
        assert same(obs[:2], want[:2]) and info["step"].tolist()[:2] == [0, 0] and info["step"].tolist()[2:] == [1, 1]


def test_close_closes_every_server_when_a_shard_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ShardedVectorEnv(3, servers=3)
    pids = [s.pid for s in env._servers]

    def broken() -> None:
        raise OSError("cannot close")

    monkeypatch.setattr(env.shards[0], "close", broken)
    with pytest.raises(OSError, match="cannot close"):
        env.close()
    assert not any(alive(p) for p in pids)


def test_interrupted_automatic_resets_draw_the_same_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """NEXT_STEP: Ctrl-C in the main thread while shard 1 makes its automatic resets: they are not kept, and the next
    step makes them again with the seeds the plain env draws (the generators are put back)."""
    kw: dict[str, Any] = {**KW, "max_steps": 2}
    with closing(YCBenchDiscreteVectorEnv(4, **kw)) as plain, closing(ShardedVectorEnv(4, servers=2, **kw)) as sharded:
        for e in (plain, sharded):
            e.reset(seed=3)
            e.step([0] * 4)
            e.step([0] * 4)  # every episode ends
        want = plain.step([0] * 4)

        def interrupted(actions: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(sharded.shards[0], "step", interrupted)
        with pytest.raises(KeyboardInterrupt):
            sharded.step([0] * 4)
        monkeypatch.undo()
        got = sharded.step([0] * 4)
        assert same(strip(got), strip(want))


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_shard_whose_server_exited_is_restarted_by_reset(kind: str) -> None:
    """A shard's server killed (OOM, crash): a step raises what the plain env raises (ServerExitedError, saying that
    reset() starts a new server, at once); a reset that does not cover that shard leaves it so; one that does starts a
    new server for it alone, after which every step is the unsharded env's. The dead server is closed (reaped), the new
    one by close(). Before, the shard stayed broken for ever."""
    kw: dict[str, Any] = dict(KW) if kind == "discrete" else {"max_steps": 6, "render_mode": "ansi"}
    plain: Any = YCBenchDiscreteVectorEnv(N, **kw) if kind == "discrete" else YCBenchVectorEnv(N, **kw)

    def actions() -> Any:
        if kind == "discrete":
            return np.array([int(np.flatnonzero(m)[-1]) for m in plain.action_masks()])
        return ["company status", "employee list", "client list", "market browse", "company status"]

    with closing(plain), closing(ShardedVectorEnv(N, servers=2, kind=kind, **kw)) as env:
        both(plain, env, lambda e: e.reset(seed=3))
        acts = actions()
        both(plain, env, lambda e: e.step(acts))
        kept, dead = env._servers
        os.kill(dead.pid, signal.SIGKILL)
        dead._proc.wait()
        for reset in (None, {"reset_mask": np.array([True, False, True, False, False])}):
            if reset is not None:
                env.reset(seed=1, options=reset)  # shard 0 only: shard 1 is left as it is
            with pytest.raises(ycgym.ServerExitedError, match="killed by signal 9") as err:
                env.step(actions())
            assert "reset() starts a new server" in str(err.value)
            assert env._servers[1] is dead
        both(plain, env, lambda e: e.reset(seed=7))
        assert env._servers[0] is kept and env._servers[1] is not dead and env._servers[1].running
        assert not alive(dead.pid)
        for _ in range(10):
            acts = actions()
            both(plain, env, lambda e, a=acts: e.step(a))
            assert same(plain.render(), env.render())
        pids = [s.pid for s in env._servers]
    assert not any(alive(p) for p in pids)


def test_a_failed_restart_is_tried_again_by_the_next_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The new server of a shard whose server exited fails to start (a machine out of memory, where servers die): that
    reset raises the start's error, and the next reset tries again and recovers. Before, the first failure left the
    shard's backend with its client closed and no server, so every later reset failed ("the client is closed")."""
    with closing(ShardedVectorEnv(4, servers=2, **KW)) as env, closing(YCBenchDiscreteVectorEnv(4, **KW)) as plain:
        env.reset(seed=2)
        dead = env._servers[1]
        os.kill(dead.pid, signal.SIGKILL)
        dead._proc.wait()
        real = sharded_module._start_servers
        tries: list[int] = []

        def failing_once(k: int, spin_us: int | None) -> list[ycgym.LocalServer]:
            tries.append(k)
            if len(tries) == 1:
                raise ycgym.ServerStartError("no memory for a new server")
            return real(k, spin_us)

        monkeypatch.setattr(sharded_module, "_start_servers", failing_once)
        with pytest.raises(ycgym.ServerStartError, match="no memory"):
            env.reset(seed=4)
        both(plain, env, lambda e: e.reset(seed=4))
        assert len(tries) == 2 and env._servers[1].running
        for _ in range(5):
            acts = plain.action_masks().argmax(1)
            both(plain, env, lambda e, a=acts: e.step(a))


def test_a_split_reset_restarts_shard_0s_server() -> None:
    """Shard 0's server killed before any ``split`` reset: ``reset(seed=..., options={"split": ...})`` restarts it, as
    the plain env's does, and returns the unsharded env's episodes. Before, the reset's checks (made before any shard
    resets) asked shard 0's dead server for its splits and raised ServerExitedError, every time."""
    with closing(ShardedVectorEnv(4, servers=2, **KW)) as env, closing(YCBenchDiscreteVectorEnv(4, **KW)) as plain:
        both(plain, env, lambda e: e.reset(seed=2))
        dead = env._servers[0]
        os.kill(dead.pid, signal.SIGKILL)
        dead._proc.wait()
        # A split reset of shard 1's sub-environments alone: checked on shard 1's server, shard 0 left as it is.
        mask = np.array([False, False, True, True])
        both(plain, env, lambda e: e.reset(seed=9, options={"split": "train", "reset_mask": mask}))
        assert env._servers[0] is dead
        both(plain, env, lambda e: e.reset(seed=9, options={"split": "validation"}))
        assert env._servers[0] is not dead and env._servers[0].running
        acts = plain.action_masks().argmax(1)
        both(plain, env, lambda e: e.step(acts))


def _kill(server: ycgym.LocalServer) -> None:
    os.kill(server.pid, signal.SIGKILL)
    server._proc.wait()


def _kind_kw(kind: str) -> dict[str, Any]:
    return dict(KW) if kind == "discrete" else {"max_steps": 6, "render_mode": "ansi"}


def _plain(kind: str, n: int, **kw: Any) -> Any:
    return YCBenchDiscreteVectorEnv(n, **kw) if kind == "discrete" else YCBenchVectorEnv(n, **kw)


def _acts(kind: str, env: Any) -> Any:
    if kind == "discrete":
        return np.array([int(np.flatnonzero(m)[-1]) for m in env.action_masks()])
    return ["company status", "employee list", "client list", "market browse", "company status"][: env.num_envs]


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_after_a_restart_the_sub_environments_a_masked_reset_left_out_are_refused(kind: str) -> None:
    """The plain vector env (a ShardedVectorEnv's one shard: a vector env on a local server of its own) whose server
    was killed, then reset in part (``reset_mask``): a step refuses before anything is sent ("call reset() before
    step()", naming the sub-environments left out, whose sessions were the dead server's), every time, changing
    nothing; once those are reset the env steps as a fresh env of the same seeds. Before, the Discrete env stepped the
    others and failed the ones left out with the new server's raw ``unknown_session`` (a VectorStepError)."""
    kw = _kind_kw(kind)
    with closing(ShardedVectorEnv(3, servers=1, kind=kind, **kw)) as holder, closing(_plain(kind, 3, **kw)) as fresh:
        env = holder.shards[0]
        env.reset(seed=3)
        env.step(_acts(kind, env))
        _kill(holder._servers[0])
        env.reset(seed=1, options={"reset_mask": np.array([True, False, True])})
        assert env.sessions[1] is None and None not in (env.sessions[0], env.sessions[2])
        for _ in range(2):
            with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\): sub-environment 1 has no session") as err:
                env.step(_acts(kind, env))
            assert "restarted" in str(err.value)
        env.reset(seed=[None, 6, None], options={"reset_mask": np.array([False, True, False])})
        fresh.reset(seed=[1, 6, 3])
        for _ in range(8):  # over the episodes' ends (max_steps 6): the automatic resets' seeds too
            acts = _acts(kind, fresh)
            check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts: fresh.step(a)))
        _kill(holder._servers[0])
        env.reset(seed=2, options={"reset_mask": np.array([False, True, True])})
        with pytest.raises(RuntimeError, match=r"sub-environment 0 has no session"):
            env.step(_acts(kind, env))
        check(outcome(lambda: env.reset(seed=9)), outcome(lambda: fresh.reset(seed=9)))  # a full reset recovers
        for _ in range(3):
            acts = _acts(kind, fresh)
            check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts: fresh.step(a)))


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_sharded_env_names_the_global_sub_environments_a_restart_left_without_a_session(kind: str) -> None:
    """Shard 1's server killed, then a masked reset covering part of shard 1: the sharded env's step refuses before any
    shard steps, naming the global indices left out; a full reset recovers (the unsharded env's results)."""
    kw = _kind_kw(kind)
    with closing(ShardedVectorEnv(N, servers=2, kind=kind, **kw)) as env, closing(_plain(kind, N, **kw)) as plain:
        env.reset(seed=3)
        _kill(env._servers[1])
        env.reset(seed=1, options={"reset_mask": np.array([True, False, False, True, False])})
        steps = env.shards[0]._due_flags().copy()
        acts = _acts(kind, env)
        with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\): sub-environment 4 has no session"):
            env.step(acts)
        assert same(env.shards[0]._due_flags(), steps)
        both(plain, env, lambda e: e.reset(seed=7))
        for _ in range(3):
            acts = _acts(kind, plain)
            both(plain, env, lambda e, a=acts: e.step(a))


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_full_reset_after_a_restart_makes_its_sessions_pipelined(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full reset of 64 sub-environments after their server was killed: the 64 new sessions' resets go out together
    (one ``send_all``, no reset request on its own: a round trip each), and the env returns what a fresh env returns
    for the same seeds, then steps as it does. Before, the Discrete env sent the dead sessions' ids, got 64
    ``unknown_session`` errors, then reset each in a new session one round trip at a time."""
    n = 64
    kw = _kind_kw(kind)
    with closing(ShardedVectorEnv(n, servers=1, kind=kind, **kw)) as holder, closing(_plain(kind, n, **kw)) as fresh:
        env = holder.shards[0]
        env.reset(seed=3)
        _kill(holder._servers[0])
        sent: list[tuple[str, int]] = []
        request, send_all = ycgym.Client.request, ycgym.Client.send_all

        def one(self: Any, op: str, **fields: Any) -> Any:
            sent.append((op, 1))
            return request(self, op, **fields)

        def many(self: Any, op: str, requests: Any, ids: Any = None) -> Any:
            requests = list(requests)
            sent.append((op, len(requests)))
            return send_all(self, op, requests, ids)

        monkeypatch.setattr(ycgym.Client, "request", one)
        monkeypatch.setattr(ycgym.Client, "send_all", many)
        got = outcome(lambda: env.reset(seed=11))
        monkeypatch.undo()
        assert [s for s in sent if s[0] == "reset"] == [("reset", n)]
        assert len(set(env.sessions)) == n and None not in env.sessions
        check(got, outcome(lambda: fresh.reset(seed=11)))
        for _ in range(3):
            acts = _acts(kind, fresh) if kind == "discrete" else ["company status"] * n
            check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts: fresh.step(a)))


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_pickled_copy_keeps_the_sub_environments_a_restart_left_without_a_session(kind: str) -> None:
    """Pickled after a restart and a masked reset that left sub-environment 3 out: the copy holds no session for it
    either, refuses to step (naming it), and once it is reset steps as the original does."""
    kw = _kind_kw(kind)
    with closing(ShardedVectorEnv(4, servers=2, kind=kind, **kw)) as env:
        env.reset(seed=3)
        _kill(env._servers[1])
        env.reset(seed=5, options={"reset_mask": np.array([True, True, True, False])})
        with closing(pickle.loads(pickle.dumps(env))) as copied:
            assert copied.sessions[3] is None and None not in copied.sessions[:3]
            with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\): sub-environment 3 has no session"):
                copied.step(_acts(kind, env))
            for e in (env, copied):
                e.reset(seed=[None, None, None, 8], options={"reset_mask": np.array([False, False, False, True])})
            for _ in range(8):
                acts = _acts(kind, env)
                check(outcome(lambda a=acts: copied.step(a)), outcome(lambda a=acts: env.step(a)))


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_spoiled_reset_reply_after_a_restart_keeps_every_new_session(kind: str) -> None:
    """The reset after a restart whose reply for sub-environment 1 cannot be taken in (its frame missing): bad_reply
    naming it; every session that reset made is the env's (none None; closed with it) and every sub-environment is due
    for that reset, which the next step makes in those sessions: then the env steps as a fresh env of the same seeds."""
    kw = _kind_kw(kind)
    with closing(ShardedVectorEnv(3, servers=1, kind=kind, **kw)) as holder, closing(_plain(kind, 3, **kw)) as fresh:
        env = holder.shards[0]
        env.reset(seed=3)
        _kill(holder._servers[0])
        env._ensure_server()  # what reset does first: the new server (and client) to hook
        frame = "discrete" if kind == "discrete" else "text"
        spoil_reply(env, "reset", lambda reply: reply["result"]["observation"].pop(frame), k=1)
        with pytest.raises(ProtocolError) as err:
            env.reset(seed=4)
        assert err.value.code == "bad_reply" and err.value.index == 1
        assert None not in env.sessions and set(env.sessions) <= env._backend.sessions
        fresh.reset(seed=4)
        env.step(_acts(kind, fresh))  # the owed resets (seeds 4, 5, 6), actions ignored
        for _ in range(8):
            acts = _acts(kind, fresh)
            check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts: fresh.step(a)))


def test_the_reset_needed_message_names_at_most_ten() -> None:
    """``call reset() before step()`` alone before any reset (every sub-environment without a session); else it names
    those without one: each of up to ten, then the first ten and how many in all."""
    from ycgym.vector import reset_needed

    assert str(reset_needed([], 3)) == str(reset_needed([0, 1, 2], 3)) == "call reset() before step()"
    assert str(reset_needed([2], 3)).startswith("call reset() before step(): sub-environment 2 has no session")
    assert "sub-environments 1, 4 have no session" in str(reset_needed([1, 4], 5))
    many = str(reset_needed(list(range(1, 40)), 64))
    assert "sub-environments 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... (39 in all) have no session" in many and "11" not in many


@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_shard_pickled_alone_after_its_server_restarted_connects_to_the_live_server(kind: str) -> None:
    """A shard (a plain vector env on a ``Backend.serve_from`` server) whose server was killed and restarted by a reset,
    pickled alone: the copy connects to the server the env now uses (the env was made with an endpoint: its copy
    connects to the endpoint the env is at) and goes on as a fresh env of the same seeds. Before, the copy connected to
    the dead server's endpoint (the pipe's: refused as stopped; a socket's: no reply)."""
    kw = {**_kind_kw(kind), "timeout": 10}
    with closing(ShardedVectorEnv(3, servers=1, kind=kind, **kw)) as holder, closing(_plain(kind, 3, **kw)) as fresh:
        env = holder.shards[0]
        env.reset(seed=3)
        dead = env.client.endpoint
        _kill(holder._servers[0])
        env.reset(seed=4)
        assert env.client.endpoint != dead
        fresh.reset(seed=4)
        for _ in range(2):
            acts = _acts(kind, fresh)
            check(outcome(lambda a=acts: env.step(a)), outcome(lambda a=acts: fresh.step(a)))
        with closing(pickle.loads(pickle.dumps(env))) as copied:
            assert copied.client.endpoint == env.client.endpoint
            for _ in range(8):  # over the episodes' ends (max_steps 6)
                acts = _acts(kind, fresh)
                check(outcome(lambda a=acts: copied.step(a)), outcome(lambda a=acts: fresh.step(a)))
