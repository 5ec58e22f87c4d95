"""Environments pickle (pickle, cloudpickle) and continue their episode exactly, in this process or another;
``gymnasium.vector.AsyncVectorEnv`` of the text env builds quickly and returns each step's texts."""

from __future__ import annotations

import functools
import multiprocessing
import pickle
import time
from typing import Any, cast

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest

import ycgym
from helpers import same
from ycgym.spaces import MAX_TEXT_LENGTH, SharedTexts

COMMANDS = ["company status", "market browse --limit 5", "employee list", "sim resume", "client list", "sim resume"]


def without_session(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k != "session"}


def play(env: Any, commands: list[str]) -> list[tuple[Any, ...]]:
    out = []
    for c in commands:
        obs, r, term, trunc, info = env.step(c)
        out.append((obs, r, term, trunc, without_session(info)))
    return out


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_an_env_pickled_mid_episode_continues_exactly(dumps: Any) -> None:
    env = gym.make("ycgym/YCBench-v0", max_steps=40)
    env.reset(seed=5)
    play(env, COMMANDS[:3])
    copy = pickle.loads(dumps(env))
    original = cast(ycgym.YCBenchEnv, env.unwrapped)
    try:
        assert copy.unwrapped.session is not None and copy.unwrapped.session != original.session
        assert copy.unwrapped.seed_used == 5 and copy.unwrapped.endpoint == original.endpoint  # same process, same server
        assert same(play(copy, COMMANDS), play(env, COMMANDS))
        # The random generator travelled too: the next seedless reset draws the same seed.
        copy.reset()
        env.reset()
        assert copy.unwrapped.seed_used == original.seed_used
    finally:
        copy.close()
        env.close()


def test_an_env_without_an_episode_and_a_closed_env() -> None:
    env = ycgym.YCBenchEnv()
    copy = pickle.loads(pickle.dumps(env))
    assert copy.session is None
    copy.close()
    env.close()
    with pytest.raises(pickle.PicklingError, match="closed"):
        pickle.dumps(env)


@pytest.mark.parametrize("make", [lambda: ycgym.YCBenchVectorEnv(2), lambda: ycgym.YCBenchDiscreteEnv(), lambda: ycgym.YCBenchDiscreteVectorEnv(2)], ids=["vector", "discrete", "discrete-vector"])
def test_every_closed_env_refuses_to_pickle(make: Any) -> None:
    """As ``YCBenchEnv`` does: the Discrete env used to pickle a closed env (its copy came back open, with a local
    server of its own) and the Discrete vector env raised ``RuntimeError: the client is closed``."""
    env = make()
    env.reset(seed=1)
    env.close()
    with pytest.raises(pickle.PicklingError, match="closed"):
        pickle.dumps(env)


def test_a_vector_env_pickled_mid_episode_continues_exactly() -> None:
    vec = ycgym.YCBenchVectorEnv(3, max_steps=4, autoreset_mode="SameStep")
    vec.reset(seed=11)
    vec.step(["company status", "sim resume", "employee list"])
    copy = cloudpickle.loads(cloudpickle.dumps(vec))
    try:
        assert copy.autoreset_mode == vec.autoreset_mode and len(set(copy.sessions) & set(vec.sessions)) == 0
        for _ in range(4):  # through an automatic reset (max_steps)
            acts = ["sim resume", "market browse --limit 2", "company status"]
            a, b = copy.step(acts), vec.step(acts)
            for info in (a[4], b[4], a[4].get("final_info", {}), b[4].get("final_info", {})):
                info.pop("session", None), info.pop("_session", None)  # the new sessions' ids differ
            assert same(a, b)
    finally:
        copy.close()
        vec.close()


def _step_in_child(env: ycgym.YCBenchEnv, commands: list[str]) -> list[tuple[Any, ...]]:
    try:
        return play(env, commands)
    finally:
        env.close()


def test_a_pickled_env_continues_in_another_process_on_its_own_server() -> None:
    env = ycgym.YCBenchEnv()
    env.reset(seed=8)
    play(env, COMMANDS[:2])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.apply(_step_in_child, (env, COMMANDS))
    try:
        assert same(got, play(env, COMMANDS))
    finally:
        env.close()


def test_async_vector_env_of_the_text_env() -> None:
    n = 2
    fns = [functools.partial(ycgym.YCBenchEnv, max_steps=6)] * n
    t = time.monotonic()
    avec = gym.vector.AsyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    build_s = time.monotonic() - t
    vec = ycgym.YCBenchVectorEnv(n, max_steps=6, autoreset_mode="SameStep")
    try:
        print(f"AsyncVectorEnv({n}) of the text env built in {build_s:.1f} s")
        # Shared memory of the text fields: a length and max_length code points per environment.
        assert isinstance(avec.single_observation_space, gym.spaces.Dict)
        text_space = avec.single_observation_space["text"]
        assert isinstance(text_space, gym.spaces.Text) and text_space.max_length == MAX_TEXT_LENGTH
        texts = avec.observations["text"]
        assert isinstance(texts, SharedTexts) and texts._rows.shape == (n, MAX_TEXT_LENGTH + 1)
        a_obs, _ = avec.reset(seed=3)
        v_obs, _ = vec.reset(seed=3)
        assert same(a_obs, v_obs)
        for acts in [["company status", "employee list"], ["market browse --limit 200", "sim resume"], ["client list", "market browse --limit 1"]]:
            a_obs, a_r, a_te, a_tr, _ = avec.step(acts)
            v_obs, v_r, v_te, v_tr, _ = vec.step(acts)
            # Each step's texts, not the first ones again (Gymnasium's own Text shared memory is read once).
            assert isinstance(a_obs["text"], tuple) and a_obs["text"] == v_obs["text"]
            assert a_obs["command"] == v_obs["command"] == tuple(a.rsplit(" --", 1)[0] for a in acts)
            assert same((a_r, a_te, a_tr), (v_r, v_te, v_tr))
            assert np.array_equal(a_obs["funds_cents"], v_obs["funds_cents"])
    finally:
        avec.close()
        vec.close()


def public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class the package exports (``__all__`` of ycgym, ycgym.llm, ycgym.ray), by qualified name."""
    import importlib
    import inspect

    out: dict[str, type[BaseException]] = {}
    for name in ("ycgym", "ycgym.llm", "ycgym.ray"):
        mod = importlib.import_module(name)
        for n in mod.__all__:
            obj = getattr(mod, n)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                out[f"{name}.{n}"] = obj
    return out


def exception_examples() -> list[BaseException]:
    """One instance of every public exception, each field set to a value of its own (a ``VectorStepError`` with two
    failures, a result and a stepped mask as a vector env raises it)."""
    from ycgym.llm import EndpointError
    from ycgym.ray import RunError

    first = ycgym.ProtocolError("unknown_session", "no session s9", request_id=7, index=1)
    over = ycgym.EpisodeOverError(2, "next_step", reason="its last step's reply could not be read")
    over.request_id = 11
    result: tuple[Any, ...] = ({"funds_cents": np.array([1.0, 2.0, 3.0]), "text": ("a", "b", "c")}, np.zeros(3), np.zeros(3, dtype=np.bool_), np.zeros(3, dtype=np.bool_), {})
    return [
        ycgym.ProtocolError("capacity", "over the memory budget", request_id=5, index=3),
        over,
        ycgym.VectorStepError({2: over, 1: first}, result, np.array([True, False, False])),
        ycgym.ServerExitedError("the local server exited with code 1"),
        ycgym.ServerStartError("node not found"),
        EndpointError(404, "no such model"),
        EndpointError(None, "refused"),
        RunError("shard 3 failed"),
    ]


def test_every_public_exception_is_covered_by_the_round_trip_test() -> None:
    """Each public exception class has an example below (a new one must be added there)."""
    covered = {type(e) for e in exception_examples()}
    assert set(public_exceptions().values()) <= covered, set(public_exceptions().values()) - covered


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("k", range(len(exception_examples())))
def test_every_public_exception_round_trips_through_pickle_with_its_fields(dumps: Any, k: int) -> None:
    """gymnasium's ``AsyncVectorEnv`` and Ray send a worker's exception to the parent pickled: each public exception
    comes back of its class, with the same message, ``args`` and fields (``code``, ``message``, ``index``,
    ``request_id``; a VectorStepError's ``errors``, ``result`` and ``stepped``; an EndpointError's ``status``). An
    EndpointError failed to unpickle (TypeError: a missing ``message`` argument: its ``args`` held the formatted text
    only), which in a Ray actor or a worker process turns the real error into an unpickling failure; an EpisodeOverError
    came back through its constructor with the code as its index, so its ``args`` held a garbled message
    ("sub-environment episode_over is due ...")."""
    e = exception_examples()[k]
    got = pickle.loads(dumps(e))
    assert type(got) is type(e)
    assert str(got) == str(e) and repr(got) == repr(e) and got.args == e.args
    fields = {k: v for k, v in vars(e).items() if k != "errors"}  # exceptions compare by identity: compared below
    assert same({k: v for k, v in vars(got).items() if k != "errors"}, fields) and set(vars(got)) == set(vars(e)), (vars(got), vars(e))
    if isinstance(e, ycgym.VectorStepError):
        assert isinstance(got, ycgym.VectorStepError) and list(got.errors) == list(e.errors)
        for i, err in e.errors.items():
            assert type(got.errors[i]) is type(err) and vars(got.errors[i]) == vars(err) and got.errors[i].args == err.args


def _spoil_restores(monkeypatch: pytest.MonkeyPatch, spoil: Any) -> tuple[list[str], list[Any]]:
    """Spoil the reply to the second ``restore`` request any client reads from now on (``spoil`` changes the decoded
    reply in place); returns the sessions the other restore replies named and the backends ``reopen`` makes."""
    from ycgym import _backend
    from ycgym.client import Client

    decode, reopen = Client._decode, _backend.reopen
    made: list[str] = []
    backends: list[Any] = []
    seen: list[int] = []

    def spoiling(frames: list[bytes]) -> dict[str, Any]:
        reply: dict[str, Any] = decode(frames)
        result = reply.get("result")
        if reply.get("ok") and isinstance(result, dict) and "session" in result and "observation" in result:
            seen.append(1)
            if len(seen) == 2:
                spoil(reply)
            else:
                made.append(result["session"])
        return reply

    def reopening(*args: Any, **kwargs: Any) -> Any:
        got = reopen(*args, **kwargs)
        backends.append(got[0])
        return got

    monkeypatch.setattr(Client, "_decode", staticmethod(spoiling))
    # The single env's and the vector envs' (both vector envs unpickle through vector.Shardable's __setstate__).
    for mod in ("env", "vector"):
        monkeypatch.setattr(f"ycgym.{mod}.reopen", reopening)
    return made, backends


@pytest.fixture(scope="module")
def own_server() -> Any:
    """A server of the restore tests' own: a spoiled restore reply leaves the session the server made (its id lost), which
    would count against the shared server's session limit until its idle timeout."""
    with ycgym.LocalServer("tcp://127.0.0.1:0") as srv:
        yield srv


@pytest.mark.parametrize("kind", ["vector", "discrete-vector"])
@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("session null", "bad_reply"),
        ("session a number", "bad_reply"),
        ("no session", "bad_reply"),
        ("refused", "bad_snapshot"),
    ],
)
def test_unpickling_a_vector_env_whose_restore_fails_keeps_the_sessions_it_made(
    kind: str, how: str, code: str, monkeypatch: pytest.MonkeyPatch, own_server: ycgym.LocalServer
) -> None:
    """Unpickling restores each sub-environment's episode (pipelined restores). One restore whose reply is malformed is
    ``bad_reply`` (a session id that is no string was made one with ``str()``: null as ``"None"``, and the env was
    built to step it; a missing one a bare KeyError); one refused raises its error. Either way the sessions the other
    restores made are the backend's, closed with it (they were dropped, left to the server's idle timeout)."""
    spoils = {
        "session null": lambda r: r["result"].__setitem__("session", None),
        "session a number": lambda r: r["result"].__setitem__("session", 7),
        "no session": lambda r: r["result"].pop("session"),
        "refused": lambda r: r.update({"ok": False, "error": {"code": "bad_snapshot", "message": "refused"}}),
    }
    at = own_server.endpoint
    env: Any = ycgym.YCBenchVectorEnv(3, endpoint=at) if kind == "vector" else ycgym.YCBenchDiscreteVectorEnv(3, endpoint=at)
    try:
        env.reset(seed=4)
        blob = pickle.dumps(env)
    finally:
        env.close()
    made, backends = _spoil_restores(monkeypatch, spoils[how])
    with pytest.raises(ycgym.ProtocolError) as e:
        pickle.loads(blob)
    assert e.value.code == code, e.value
    assert len(made) == 2 and len(backends) == 1, (made, backends)
    assert set(made) <= backends[0].sessions or backends[0].closed, (made, backends[0].sessions)
    assert backends[0].closed or all(type(s) is str and s in made for s in backends[0].sessions)
