"""What users hand the envs: bytes actions, texts longer than the bound, ``make_vec(..., vector_kwargs=...)``."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import ycgym
from helpers import same
from ycgym import _gym_compat
from ycgym.spaces import MAX_TEXT_LENGTH, action_text


def test_action_text() -> None:
    assert action_text("company status") == "company status"
    assert action_text(np.str_("sim resume")) == "sim resume" and type(action_text(np.str_("x"))) is str
    assert action_text(b"scratchpad write --content caf\xc3\xa9") == "scratchpad write --content café"
    assert action_text(bytearray(b"sim resume")) == action_text(memoryview(b"sim resume")) == "sim resume"
    assert action_text(np.bytes_(b"sim resume")) == "sim resume"
    with pytest.raises(ValueError, match=r"not valid UTF-8 \(invalid start byte at byte 0\)"):
        action_text(b"\xffcompany status")
    with pytest.raises(TypeError, match="got int"):
        action_text(3)
    # A str that is not text (a lone surrogate: no UTF-8 for it) is refused here, as bad bytes are (it raised the
    # JSON codec's own error, when the request was encoded).
    assert action_text("scratchpad write --content ☃ 𝄞") == "scratchpad write --content ☃ 𝄞"
    with pytest.raises(ValueError, match=r"not valid text \(surrogates not allowed at character 14\)"):
        action_text("market browse \ud800")


def test_bytes_actions_are_utf8_commands_and_bad_bytes_change_nothing() -> None:
    a, b = ycgym.YCBenchEnv(), ycgym.YCBenchEnv()
    try:
        a.reset(seed=2)
        b.reset(seed=2)
        ra, rb = a.step(b"market browse --limit 3"), b.step("market browse --limit 3")
        assert ra[0]["command"] == "market browse" and same(ra[0], rb[0])
        with pytest.raises(ValueError, match="UTF-8"):
            a.step(b"task accept --task-id \xff")
        with pytest.raises(ValueError, match="not valid text"):
            a.step("task accept --task-id \udcff")
        # Nothing was sent: both are at the same step and stay identical.
        ra, rb = a.step("sim resume"), b.step("sim resume")
        assert ra[4]["step"] == rb[4]["step"] == 2 and same(ra[0], rb[0])
    finally:
        a.close()
        b.close()


def test_vector_env_checks_every_action_before_sending_any() -> None:
    vec = ycgym.YCBenchVectorEnv(2)
    try:
        vec.reset(seed=1)
        obs, *_ = vec.step([b"company status", "employee list"])
        assert obs["command"] == ("company status", "employee list")
        with pytest.raises(ValueError, match="UTF-8"):
            vec.step(["sim resume", b"\xc3("])
        *_, info = vec.step(["company status", "company status"])
        assert list(info["step"]) == [2, 2]  # the refused step advanced neither environment
    finally:
        vec.close()


def test_text_longer_than_the_bound_is_cut_and_flagged() -> None:
    assert ycgym.YCBenchEnv.__init__.__defaults__ is not None and MAX_TEXT_LENGTH == 1 << 20
    env = ycgym.YCBenchEnv(max_text_length=1000, render_mode="ansi")
    vec = ycgym.YCBenchVectorEnv(2, max_text_length=1000)
    try:
        assert isinstance(env.observation_space, gym.spaces.Dict)
        text_space = env.observation_space["text"]
        assert isinstance(text_space, gym.spaces.Text) and text_space.max_length == 1000
        env.reset(seed=1)
        vec.reset(seed=1)
        note = "x" * 3000
        _, _, _, _, info = env.step("company status")
        assert "text_truncated" not in info and "text_length" not in info
        env.step(f"scratchpad write --content {note}")
        obs, _, _, _, info = env.step("scratchpad read")
        full = env.render()
        assert isinstance(full, str) and note in full and len(full) > 3000
        assert obs["text"] == full[:1000] and env.observation_space.contains(obs)
        assert info["text_truncated"] is True and info["text_length"] == len(full)
        vec.step([f"scratchpad write --content {note}", "company status"])
        vobs, *_, vinfo = vec.step(["scratchpad read", "company status"])
        assert vobs["text"][0] == full[:1000] and len(vobs["text"][1]) < 1000
        assert list(vinfo["_text_truncated"]) == [True, False] and vinfo["text_length"][0] == len(full)
        assert vec.observation_space.contains(vobs)
    finally:
        env.close()
        vec.close()
    with pytest.raises(ValueError, match="max_text_length"):
        ycgym.YCBenchEnv(max_text_length=0)


@pytest.mark.parametrize("mode", [None, "vector_entry_point"])
@pytest.mark.parametrize("autoreset", [AutoresetMode.SAME_STEP, "Disabled"])
def test_make_vec_vector_kwargs_reach_the_batched_env(mode: str | None, autoreset: AutoresetMode | str) -> None:
    assert gym.make_vec is _gym_compat.make_vec
    vec = gym.make_vec("ycgym/YCBench-v0", num_envs=2, vectorization_mode=mode, vector_kwargs={"autoreset_mode": autoreset}, max_steps=3)
    try:
        assert isinstance(vec.unwrapped, ycgym.YCBenchVectorEnv)
        assert vec.metadata["autoreset_mode"] == AutoresetMode(autoreset) and vec.unwrapped.max_steps == 3
        # The spec records it as the constructor argument it became, so the spec rebuilds the same env.
        assert vec.spec is not None and vec.spec.kwargs["autoreset_mode"] == autoreset
        again = gym.make_vec(vec.spec)
        assert again.metadata["autoreset_mode"] == AutoresetMode(autoreset)
        again.close()
    finally:
        vec.close()


def test_make_vec_vector_kwargs_in_sync_mode_and_the_errors() -> None:
    sync = gym.make_vec("ycgym/YCBench-v0", num_envs=2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    try:
        assert isinstance(sync, gym.vector.SyncVectorEnv) and sync.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    finally:
        sync.close()
    with pytest.raises(gym.error.Error, match=r"takes vector_kwargs \['autoreset_mode', 'servers'\].*got \['copy'\]"):
        gym.make_vec("ycgym/YCBench-v0", num_envs=2, vector_kwargs={"copy": False})
    with pytest.raises(gym.error.Error, match="both in vector_kwargs and as keyword arguments"):
        gym.make_vec("ycgym/YCBench-v0", num_envs=2, vector_kwargs={"autoreset_mode": "SameStep"}, autoreset_mode="SameStep")
    # Other environments are Gymnasium's business, unchanged.
    with pytest.raises(gym.error.Error, match="Custom vector environment can be passed arguments only through kwargs"):
        gym.make_vec("CartPole-v1", num_envs=2, vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})


def test_client_calls_with_arguments_of_the_wrong_shape_say_so_and_send_nothing(endpoint: str) -> None:
    """Before: ``step_batch`` of a string, a dict or a 1-tuple raised IndexError from inside (and a list of two-letter
    strings was read as sessions and actions letter by letter), ``request_all`` of ints AttributeError, a bytes action
    orjson's "Type is not JSON serializable: bytes" without the field, and an endpoint that is not one pyzmq's
    ZMQError("Invalid argument")."""
    c = ycgym.Client(endpoint)
    try:
        sid = c.reset(1)["session"]
        pairs = re.escape("step_batch takes (session, action) pairs or mappings")
        for steps, what in [("ab", "a str"), ({"s": "company status"}, "a dict"), (b"xy", "a bytes")]:
            with pytest.raises(TypeError, match=rf"^ycgym: {pairs} \(a list of them\), got {what}$"):
                c.step_batch(steps)  # type: ignore[arg-type]
        cases: list[tuple[list[Any], str]] = [([(sid,)], "('s"), ([(sid, "company status"), "ab"], "'ab'"), ([(sid, "company status", 1)], "('s"), ([5], "5")]
        for entries, bad in cases:
            with pytest.raises(TypeError, match=rf"^ycgym: {pairs}; entry {len(entries) - 1} is {re.escape(bad)}"):
                c.step_batch(entries)
        with pytest.raises(TypeError, match=rf"^ycgym: {pairs}; entry 0 is \["):
            c.step_batch_arrays([[sid]])  # a list pairs by its length (its annotation cannot say "of two")
        # Lists and numpy rows of two are pairs, as before.
        assert [r["info"]["step"] for r in c.step_batch([[sid, "company status"], np.array([sid, "company status"])])] == [1, 2]
        with pytest.raises(TypeError, match=r"^ycgym: the fields of a 'hello' request are a mapping, got int$"):
            c.request_all("hello", [1, 2])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"^ycgym: the 'step' request cannot be sent as JSON: its field 'action' .*bytes"):
            c.step(sid, b"company status")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^ycgym: the 'reset' request cannot be sent as JSON: its field 'options' .*set"):
            c.reset(1, options={"x": {1, 2}})
        # Nothing was sent: the session is where it was.
        assert c.step(sid, "company status")["info"]["step"] == 3
    finally:
        c.close()
    for bad in ("nonsense", "tcp://127.0.0.1"):
        with pytest.raises(ValueError, match=rf"^ycgym: cannot connect to {re.escape(repr(bad))}: .*tcp://HOST:PORT"):
            ycgym.Client(bad)


def test_local_server_args_must_be_a_list_of_strings() -> None:
    # Before: args="--max-sessions 5" was passed letter by letter ("- - m a x ...") and the server failed to start.
    for args, what in [("--max-sessions 5", "a str"), (["--max-sessions", 5], "an int at 1")]:
        with pytest.raises(TypeError, match=rf"^ycgym: LocalServer args are a list of strings \(command-line arguments of ycgym serve\), got {what}"):
            ycgym.LocalServer(args=args)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [ycgym.YCBenchEnv, ycgym.YCBenchDiscreteEnv])
def test_numpy_integer_seeds_are_seeds(cls: type) -> None:
    """``for seed in np.arange(...)`` hands reset numpy integers: taken as the same seeds (Gymnasium's own reset refused
    them: "Seed must be a python integer, actual type: <class 'numpy.int64'>"); the vector envs took them already."""
    a, b = cls(), cls()
    try:
        for seed in np.arange(3, 5):
            oa, _ = a.reset(seed=seed)
            ob, _ = b.reset(seed=int(seed))
            assert same(oa, ob) and a.seed_used == b.seed_used == int(seed)
        with pytest.raises(Exception, match="Seed must be"):
            a.reset(seed=np.float64(3))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("cls", [ycgym.YCBenchEnv, ycgym.YCBenchDiscreteEnv, ycgym.YCBenchVectorEnv, ycgym.YCBenchDiscreteVectorEnv])
def test_reset_options_that_are_not_a_mapping_are_a_type_error(cls: type) -> None:
    """Before: "dictionary update sequence element #0 has length 1; 2 is required" (a str), or "'int' object is not
    iterable"."""
    args = (2,) if "Vector" in cls.__name__ else ()
    for bad in ("text=false", 5, [("text", False)]):
        with pytest.raises(TypeError, match=rf"^reset_options must be a mapping of reset options \(a dict\), got {type(bad).__name__}$"):
            cls(*args, reset_options=bad)
    env = cls(*args)
    try:
        env.reset(seed=1)
        with pytest.raises(TypeError, match=r"^options must be a mapping of reset options \(a dict\), got str$"):
            env.reset(seed=1, options="text=false")
    finally:
        env.close()
