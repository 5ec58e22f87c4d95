"""The single envs (``YCBenchEnv``, ``YCBenchDiscreteEnv``) refuse a reply whose values are malformed as the vector envs
refuse such an entry: ``ProtocolError("bad_reply")``, raised before the env takes any of it in, the env then due for a
reset (the server ran that step, or made that reset: it holds a state the env never saw), and usable again once reset.

The malformed values are the vector tests' own (``test_vector_atomicity``): each reply is spoiled after decoding, as a
broken proxy or a server of another version could send it. Each env runs next to a twin that never sees the spoiled
reply: after the refusal and a reset of both with the same seed, both go on alike; a seedless reset draws the same seed
in both (the refused reset left ``np_random`` as it was).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from test_vector_atomicity import CONVERTIBLE, DISCRETE_JSON_VALUES, OUT_OF_RANGE, RESET_SPOILS, put_status_value

from helpers import same, spoil_reply
from ycgym import LocalServer, ProtocolError, YCBenchDiscreteEnv, YCBenchEnv


@pytest.fixture(scope="module", params=["pipe", "zmq"])
def server(request: pytest.FixtureRequest) -> Iterator[LocalServer]:
    with LocalServer("pipe" if request.param == "pipe" else "tcp://127.0.0.1:0") as srv:
        yield srv


def without_sessions(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: without_sessions(v) for k, v in x.items() if k != "session"}
    if isinstance(x, tuple):
        return tuple(without_sessions(v) for v in x)
    return x


# ---------------------------------------------------------------------------------------------------- spoils

def _result(reply: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = reply["result"]
    return result


def _status_spoil(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """The vector tests' CONVERTIBLE and OUT_OF_RANGE values, put where they put them."""
    return lambda reply: put_status_value(_result(reply)["observation"], key, value)


def _first(d: dict[str, Any]) -> str:
    return next(iter(d))


TEXT_STEP_SPOILS: dict[str, Callable[[dict[str, Any]], Any]] = {
    # test_a_step_entry_with_wrong_fields_is_its_bad_reply's
    "no observation": lambda reply: _result(reply).pop("observation"),
    "reward": lambda reply: _result(reply).__setitem__("reward", "much"),
    "huge reward": lambda reply: _result(reply).__setitem__("reward", 10**400),
    "huge info count": lambda reply: _result(reply)["info"].__setitem__("reward_cents", 2**70),
    "no info": lambda reply: _result(reply).pop("info"),
    "no status": lambda reply: _result(reply)["observation"].pop("status"),
    # test_a_step_entry_with_a_malformed_status_block_is_its_bad_reply's
    "funds": lambda reply: _result(reply)["observation"]["status"].pop("funds_cents"),
    "prestige": lambda reply: (st := _result(reply)["observation"]["status"])["prestige"].__setitem__(_first(st["prestige"]), "high"),
    "trust": lambda reply: (st := _result(reply)["observation"]["status"])["trust"].pop(_first(st["trust"])),
    "tasks": lambda reply: _result(reply)["observation"]["status"].__setitem__("active_tasks", "two"),
    "time": lambda reply: _result(reply)["observation"]["status"].__setitem__("sim_time", "yesterday"),
    "ok": lambda reply: _result(reply)["observation"].__setitem__("ok", "yes"),
    **{how: _status_spoil(*kv) for how, kv in CONVERTIBLE.items()},
    **{how: _status_spoil(*kv) for how, kv in OUT_OF_RANGE.items()},
    # flags of the wrong type (the vector envs' step_flags refuses them)
    "terminated int": lambda reply: _result(reply).__setitem__("terminated", 0),
    "truncated null": lambda reply: _result(reply).__setitem__("truncated", None),
}


def _discrete_spoil(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """The vector tests' DISCRETE_JSON_VALUES, put where they put them: the first frame (``obs``) or mask value, or the
    info's ``key``."""

    def spoil(reply: dict[str, Any]) -> None:
        result = _result(reply)
        if key in ("obs", "mask"):
            result["observation"]["discrete"][key][0] = value
        else:
            result["info"][key] = value

    return spoil


DISCRETE_STEP_SPOILS: dict[str, Callable[[dict[str, Any]], Any]] = {
    **{how: _discrete_spoil(*kv) for how, kv in DISCRETE_JSON_VALUES.items()},
    "no frame": lambda reply: _result(reply)["observation"].pop("discrete"),
    "frame too short": lambda reply: _result(reply)["observation"]["discrete"]["obs"].pop(),
    "reward": lambda reply: _result(reply).__setitem__("reward", "much"),
    "huge reward": lambda reply: _result(reply).__setitem__("reward", 10**400),
    "no info": lambda reply: _result(reply).pop("info"),
    "ok": lambda reply: _result(reply)["observation"].__setitem__("ok", 1),
    "terminated int": lambda reply: _result(reply).__setitem__("terminated", 0),
}

TEXT_RESET_SPOILS = dict(RESET_SPOILS)
DISCRETE_RESET_SPOILS = {how: spoil for how, spoil in RESET_SPOILS.items() if how not in ("no status", "tasks past int64", "prestige past float")}
DISCRETE_RESET_SPOILS.update({how: DISCRETE_STEP_SPOILS[how] for how in ("obs str", "obs null", "mask int", "mask str", "frame too short")})


# ---------------------------------------------------------------------------------------------------- envs

def make(kind: str, endpoint: str) -> Any:
    if kind == "text":
        return YCBenchEnv(endpoint=endpoint, render_mode="ansi")
    return YCBenchDiscreteEnv(endpoint=endpoint, render_mode="ansi")


def action(env: Any, t: int) -> Any:
    if isinstance(env, YCBenchEnv):
        return ("company status", "sim resume", "client list")[t % 3]
    return int(np.flatnonzero(env.action_masks())[-1 - (t % 2)])


def step_both(env: Any, twin: Any, t: int) -> None:
    a = action(twin, t)
    got, want = env.step(a), twin.step(a)
    assert same(without_sessions(got), without_sessions(want)), f"step {t} differs from the twin's"


def started(kind: str, endpoint: str) -> tuple[Any, Any]:
    env, twin = make(kind, endpoint), make(kind, endpoint)
    for e in (env, twin):
        e.reset(seed=5)
    for t in range(2):
        step_both(env, twin, t)
    return env, twin


def held(env: Any) -> Any:
    """What the env holds between calls (its observation's text, its mask, its seed, its generator)."""
    mask = env.action_masks() if isinstance(env, YCBenchDiscreteEnv) else None
    return env.render(), mask, env.seed_used, env.np_random.bit_generator.state


def refused_then_usable(env: Any, twin: Any, before: Any, call: Callable[[], Any]) -> None:
    """``call()`` raises ``bad_reply`` and changes nothing the env holds; the env is then due for a reset (a step raises
    ``ResetNeeded`` saying why, without stepping), and once reset it goes on as its twin."""
    with pytest.raises(ProtocolError) as err:
        call()
    e = err.value
    assert type(e) is ProtocolError and e.code == "bad_reply", repr(e)
    assert "malformed result" in e.message or "could not be read" in e.message, e.message
    got = held(env)
    assert got[0] == before[0] and same(got[1], before[1]) and got[2:] == before[2:], "the refused reply was taken in"
    with pytest.raises(gym.error.ResetNeeded, match="bad_reply"):
        env.step(action(twin, 0))
    # A seedless reset draws the seed the twin draws (the generator is as it was), then both go on alike.
    got_reset, want_reset = env.reset(), twin.reset()
    assert env.seed_used == twin.seed_used
    assert same(without_sessions(got_reset), without_sessions(want_reset))
    for t in range(3):
        step_both(env, twin, t)


@pytest.mark.parametrize(("kind", "how"), [*(("text", h) for h in TEXT_STEP_SPOILS), *(("discrete", h) for h in DISCRETE_STEP_SPOILS)])
def test_a_step_reply_with_malformed_values_is_bad_reply_and_leaves_the_env_due(kind: str, how: str, server: LocalServer) -> None:
    """A step whose reply holds a value its protocol type does not allow (the vector tests' values): it used to raise a
    bare TypeError/ValueError/OverflowError/KeyError (the text env after taking the observation's text in), or to take it
    in without a word (numpy converting ``"5"``, null or true for a number, ``1`` or ``"x"`` for a mask entry; an info
    count past int64 kept as it was), and the env went on stepping."""
    env, twin = started(kind, server.endpoint)
    try:
        spoils = TEXT_STEP_SPOILS if kind == "text" else DISCRETE_STEP_SPOILS
        twin.step(action(twin, 2))
        before = held(env)
        spoil_reply(env, "step", spoils[how])
        refused_then_usable(env, twin, before, lambda: env.step(action(twin, 2)))
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize(("kind", "how"), [*(("text", h) for h in TEXT_RESET_SPOILS), *(("discrete", h) for h in DISCRETE_RESET_SPOILS)])
def test_a_reset_reply_with_malformed_values_is_bad_reply_and_leaves_the_env_due(kind: str, how: str, server: LocalServer) -> None:
    """A seedless reset whose reply cannot be read (the vector tests' reset spoils; the Discrete env's frame values
    too): the server made that reset, so the env cannot go on with its old episode either. It used to raise a bare
    KeyError/TypeError/OverflowError after taking the session, the start time, the seed and (the Discrete env) the mask
    in, or to take malformed values in without a word; the env then stepped the server's new episode from what it had."""
    env, twin = started(kind, server.endpoint)
    try:
        spoils = TEXT_RESET_SPOILS if kind == "text" else DISCRETE_RESET_SPOILS
        before = held(env)
        spoil_reply(env, "reset", spoils[how])
        refused_then_usable(env, twin, before, env.reset)
    finally:
        env.close()
        twin.close()



def _spoil_first_spec_reply(spoil: Callable[[dict[str, Any]], Any], monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Make ``spoil`` damage the first reply that carries a Discrete spec (a Discrete env's own first reset) as the
    client decodes it; the list returned holds True once it has."""
    from ycgym.client import Client

    decode = Client._decode
    spoiled: list[bool] = []

    def spoiling(frames: list[bytes]) -> dict[str, Any]:
        reply: dict[str, Any] = decode(frames)
        result = reply.get("result")
        if not spoiled and reply.get("ok") and isinstance(result, dict) and "discrete_spec" in result.get("info", {}):
            spoiled.append(True)
            spoil(reply)
        return reply

    monkeypatch.setattr(Client, "_decode", staticmethod(spoiling))
    return spoiled

@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda r: r["result"]["info"].pop("discrete_spec"), id="no discrete_spec"),
        pytest.param(lambda r: r["result"]["info"]["discrete_spec"].pop("n_actions"), id="no n_actions"),
        pytest.param(lambda r: r["result"].pop("session"), id="no session"),
        pytest.param(lambda r: r["result"]["info"].__setitem__("discrete_spec", "spec"), id="spec not an object"),
    ],
)
def test_a_discrete_env_whose_first_reset_reply_is_malformed_fails_with_bad_reply(server: LocalServer, spoil: Callable[[dict[str, Any]], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The constructor's own reset (the spec of the frame) is taken in like any other reply: a malformed one is
    ``bad_reply``, not a bare KeyError or TypeError from the middle of ``__init__``."""
    spoiled = _spoil_first_spec_reply(spoil, monkeypatch)
    with pytest.raises(ProtocolError) as e:
        YCBenchDiscreteEnv(endpoint=server.endpoint)
    assert spoiled and e.value.code == "bad_reply" and "first reset reply" in e.value.message


@pytest.mark.parametrize("kind", ["text", "discrete"])
@pytest.mark.parametrize("stop", [KeyboardInterrupt, TimeoutError])
def test_a_single_env_whose_step_is_stopped_while_waiting_is_due_for_a_reset(server: LocalServer, kind: str, stop: type[BaseException]) -> None:
    """A step stopped after it went out (Ctrl-C, a timeout while waiting for its reply) ran on the server, or will: the
    env is due for a reset (``ResetNeeded`` saying why), as the vector envs mark such a sub-environment, not stepped on
    from a state it never saw; a reset makes it usable again."""
    env: Any = YCBenchEnv(endpoint=server.endpoint) if kind == "text" else YCBenchDiscreteEnv(endpoint=server.endpoint)
    try:
        env.reset(seed=3)
        action: Any = "company status" if kind == "text" else 0
        c = env.client
        recv = c.recv
        sent: list[int] = []

        def stopped(rid: int, *args: Any, **kwargs: Any) -> Any:
            sent.append(rid)
            c.recv = recv  # once
            raise stop("stopped while waiting")

        c.recv = stopped
        with pytest.raises(stop):
            env.step(action)
        assert sent, "the step went out before it was stopped"
        with pytest.raises(gym.error.ResetNeeded, match="stopped"):
            env.step(action)
        env.reset(seed=3)
        env.step(action)
    finally:
        env.close()


ADMISSIBLE_SPOILS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "admissible a string": lambda reply: _result(reply)["info"].__setitem__("admissible_commands", "company status"),
    "admissible an object": lambda reply: _result(reply)["info"].__setitem__("admissible_commands", {"company status": 1}),
    "admissible null": lambda reply: _result(reply)["info"].__setitem__("admissible_commands", None),
    "admissible an int in the list": lambda reply: _result(reply)["info"]["admissible_commands"].__setitem__(0, 7),
    "admissible a list in the list": lambda reply: _result(reply)["info"]["admissible_commands"].__setitem__(0, ["a"]),
    "action_text an int": lambda reply: _result(reply)["info"].__setitem__("action_text", 7),
    "action_text a list": lambda reply: _result(reply)["info"].__setitem__("action_text", ["company", "status"]),
}
"""Values of a Discrete step (reset) result's info lists and texts its protocol type does not allow
(``admissible_commands`` a list of strings, ``action_text`` a string). They were taken in as they came: ``list()`` made a
string a list of its characters and an object a list of its keys."""


@pytest.mark.parametrize(
    ("how", "op"),
    # A reset result has no action_text: its spoils are a step's only.
    [(how, op) for how in ADMISSIBLE_SPOILS for op in ("step", "reset") if op == "step" or not how.startswith("action_text")],
)
@pytest.mark.parametrize("kind", ["discrete", "text"])
def test_a_reply_with_malformed_admissible_commands_is_bad_reply(server: LocalServer, kind: str, how: str, op: str) -> None:
    """With the ``admissible_commands`` reset option: a step (reset) reply whose ``admissible_commands`` or
    ``action_text`` is of the wrong type is ``bad_reply``, and the env is due for a reset, as for any malformed value
    (the text env passed them into its info as they came)."""
    opts = {"admissible_commands": True}
    cls = YCBenchEnv if kind == "text" else YCBenchDiscreteEnv
    env = cls(endpoint=server.endpoint, render_mode="ansi", reset_options=opts)
    twin = cls(endpoint=server.endpoint, render_mode="ansi", reset_options=opts)
    try:
        for e in (env, twin):
            e.reset(seed=5)
        for t in range(2):
            step_both(env, twin, t)
        if op == "step":
            twin.step(action(twin, 2))
        before = held(env)
        spoil_reply(env, op, ADMISSIBLE_SPOILS[how])
        refused_then_usable(env, twin, before, (lambda: env.step(action(twin, 2))) if op == "step" else env.reset)
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda r: r["result"]["info"].pop("discrete_spec"), id="no discrete_spec"),
        pytest.param(lambda r: r["result"].pop("session"), id="no session"),
        pytest.param(lambda r: r["result"].__setitem__("session", None), id="session null"),
        pytest.param(lambda r: r["result"].__setitem__("session", 7), id="session a number"),
        pytest.param(lambda r: r["result"]["info"].__setitem__("discrete_spec", "spec"), id="spec not an object"),
    ],
)
def test_a_discrete_vector_env_whose_first_reset_reply_is_malformed_fails_with_bad_reply(server: LocalServer, spoil: Callable[[dict[str, Any]], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The Discrete vector env's own first resets (the frame's spec) are taken in like any other reply: a malformed one
    is ``bad_reply``. It was a bare KeyError or TypeError from the middle of ``__init__``, or a session id that is no
    string made one with ``str()`` (``"None"``, ``"7"``), which the env would then step."""
    from ycgym import YCBenchDiscreteVectorEnv

    spoiled = _spoil_first_spec_reply(spoil, monkeypatch)
    with pytest.raises(ProtocolError) as e:
        YCBenchDiscreteVectorEnv(3, endpoint=server.endpoint)
    assert spoiled and e.value.code == "bad_reply" and "first reset" in e.value.message, e.value
