"""The adapters' replies (``TurnRun``, which the verifiers, TRL and OpenEnv turn adapters share, and the OpenEnv step
env) are checked as the Gym envs' are: a malformed ``turn_reset``/``turn_step``/``reset``/``step`` result is
``ProtocolError("bad_reply")`` (it was a bare KeyError or TypeError, or a null session id taken as the run's), the
session a malformed reset named is still the backend's (closed with it), and what the adapter holds is left as it was
(after a turn or step the server played, due for a reset)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

import ycgym
from ycgym._replies import BAD_REPLY_WHY
from ycgym.client import Client
from ycgym.integrations.score import TurnRun

Spoil = Callable[[dict[str, Any]], None]


def _spoil(monkeypatch: pytest.MonkeyPatch, which: Callable[[dict[str, Any]], bool], spoil: Spoil) -> list[str]:
    """Spoil every reply whose result ``which`` picks (``spoil`` changes the result in place); the list returned holds
    the session each spoiled result named before it was spoiled (``""`` for none)."""
    decode = Client._decode
    named: list[str] = []

    def spoiling(frames: list[bytes]) -> dict[str, Any]:
        reply: dict[str, Any] = decode(frames)
        result = reply.get("result")
        if reply.get("ok") and isinstance(result, dict) and which(result):
            named.append(str(result.get("session", "")))
            spoil(result)
        return reply

    monkeypatch.setattr(Client, "_decode", staticmethod(spoiling))
    return named


def _is_turn_reset(r: dict[str, Any]) -> bool:
    return "tool_choice" in r


def _is_turn_step(r: dict[str, Any]) -> bool:
    return "tool_results" in r


def _set(key: str, value: Any) -> Spoil:
    return lambda r: r.__setitem__(key, value)


def _set_info(key: str, value: Any) -> Spoil:
    return lambda r: r["info"].__setitem__(key, value)


def _drop(key: str) -> Spoil:
    return lambda r: r.pop(key)


TURN_RESET = {
    "no session": _drop("session"),
    "session null": _set("session", None),
    "no info": _drop("info"),
    "info a list": _set("info", []),
    "funds a string": _set_info("funds_cents", "1"),
    "messages an object": _set("messages", {}),
    "tools a string": _set("tools", "x"),
}

TURN_STEP = {
    "no info": _drop("info"),
    "terminal detail a number": _set_info("terminal_detail", 1),
    "funds a float": _set_info("funds_cents", 1.5),
    "reward a string": _set_info("reward_cents", "0"),
    "done a string": _set("done", "false"),
    "terminal reason a number": _set("terminal_reason", 3),
    "tool results an object": _set("tool_results", {}),
}


@pytest.mark.parametrize("how", sorted(TURN_RESET))
def test_turn_run_a_malformed_turn_reset_is_bad_reply_and_its_session_is_kept(how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    run = TurnRun(endpoint)
    try:
        with monkeypatch.context() as m:
            named = _spoil(m, _is_turn_reset, TURN_RESET[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                run.reset(1)
        assert e.value.code == "bad_reply", e.value
        assert named and named[0], named
        # No run was taken in; the session the server made is the backend's, closed with it.
        assert run.session is None and run.seed is None and run.last is None
        assert None not in run._backend.sessions, run._backend.sessions
        if "session" not in how:  # the result still names it (else the server's idle timeout frees it: its id is lost)
            assert named[0] in run._backend.sessions, (named, run._backend.sessions)
        run.reset(1)  # whole replies again: it runs
        run.step(["company status"])
    finally:
        run.close()


@pytest.mark.parametrize("how", sorted(TURN_STEP))
def test_turn_run_a_malformed_turn_step_is_bad_reply_and_leaves_the_run_due(how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    run = TurnRun(endpoint)
    try:
        run.reset(1)
        before = (run.session, run.funds_cents, run.done, run.terminal_reason, run.last)
        with monkeypatch.context() as m:
            _spoil(m, _is_turn_step, TURN_STEP[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                run.step(["company status"])
        assert e.value.code == "bad_reply", e.value
        assert (run.session, run.funds_cents, run.done, run.terminal_reason, run.last) == before
        # The turn was played on the server: the run is due for a reset (it used to step on from the funds of before).
        with pytest.raises(RuntimeError, match="due for a reset"):
            run.step(["company status"])
        run.reset(1)
        run.step(["company status"])
    finally:
        run.close()


STEP_RESET = {
    "no session": _drop("session"),
    "session null": _set("session", None),
    "no info": _drop("info"),
    "funds a string": _set_info("funds_cents", "1"),
    "no observation": _drop("observation"),
}

STEP_STEP = {
    "no info": _drop("info"),
    "step a string": _set_info("step", "1"),
    "no reward": _drop("reward"),
    "terminated a string": _set("terminated", "no"),
    "no observation": _drop("observation"),
    "text a number": lambda r: r["observation"].__setitem__("text", 5),
}


def _openenv() -> Any:
    pytest.importorskip("openenv")
    from ycgym.integrations import openenv

    return openenv


@pytest.mark.parametrize("how", sorted(STEP_RESET))
def test_openenv_step_env_a_malformed_reset_is_bad_reply(how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    oe = _openenv()
    env = oe.YCBenchEnvironment(endpoint=endpoint)
    try:
        with monkeypatch.context() as m:
            named = _spoil(m, lambda r: "observation" in r and "session" in r, STEP_RESET[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                env.reset(seed=2)
        assert e.value.code == "bad_reply", e.value
        assert named and None not in env._backend.sessions, env._backend.sessions
        if "session" not in how:  # the result still names it
            assert named[0] in env._backend.sessions, (named, env._backend.sessions)
        with pytest.raises(RuntimeError, match="reset"):
            env.step(oe.YCBenchAction(command="company status"))
        env.reset(seed=2)
        env.step(oe.YCBenchAction(command="company status"))
    finally:
        env.close()


@pytest.mark.parametrize("how", sorted(STEP_STEP))
def test_openenv_step_env_a_malformed_step_is_bad_reply_and_the_episode_is_due_for_a_reset(how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    oe = _openenv()
    env = oe.YCBenchEnvironment(endpoint=endpoint)
    try:
        env.reset(seed=2)
        before = env.state.model_dump()
        with monkeypatch.context() as m:
            _spoil(m, lambda r: "reward" in r and "terminated" in r, STEP_STEP[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                env.step(oe.YCBenchAction(command="company status"))
        assert e.value.code == "bad_reply", e.value
        # Nothing half taken in, and the state says its figures are stale (state.due: why the episode is due).
        assert env.state.model_dump() == {**before, "due": BAD_REPLY_WHY}
        # The server ran that step, the env never saw its result: it is due for a reset, as the Gym envs are.
        with pytest.raises(RuntimeError, match="reset"):
            env.step(oe.YCBenchAction(command="company status"))
        env.reset(seed=2)
        env.step(oe.YCBenchAction(command="company status"))
    finally:
        env.close()


TURN_READS: dict[str, Spoil] = {
    "no field": lambda r: r.pop(next(k for k in ("messages", "snapshot") if k in r)),
    "field a string": lambda r: r.__setitem__(next(k for k in ("messages", "snapshot") if k in r), "x"),
    "field null": lambda r: r.__setitem__(next(k for k in ("messages", "snapshot") if k in r), None),
}


@pytest.mark.parametrize("how", sorted(TURN_READS))
@pytest.mark.parametrize("op", ["turn_messages", "turn_snapshot"])
def test_turn_messages_and_turn_snapshot_a_malformed_reply_is_bad_reply(op: str, how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """``Client.turn_messages`` (``TurnRun.messages``, what the verifiers harness sends the model) and
    ``Client.turn_snapshot`` read their field unchecked: a bare KeyError, or a non-list / non-object handed on. Now
    ``bad_reply``; the run goes on."""
    run = TurnRun(endpoint)
    try:
        run.reset(1)
        with monkeypatch.context() as m:
            # A turn_messages result is {"messages"} alone, a turn_snapshot result {"snapshot"} alone.
            _spoil(m, lambda r: set(r) == ({"messages"} if op == "turn_messages" else {"snapshot"}), TURN_READS[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                run.messages() if op == "turn_messages" else run.client.turn_snapshot(cast(str, run.session))
        assert e.value.code == "bad_reply" and f"{op} reply is a malformed result" in e.value.message, e.value
        run.step(["company status"])
        assert run.messages()
    finally:
        run.close()


PAYS = [
    "yc-bench task accept --task-id Task-10",
    "yc-bench task assign --task-id Task-10 --employees Emp_1,Emp_2,Emp_3,Emp_4",
    "yc-bench task dispatch --task-id Task-10",
    "yc-bench sim resume",
]
"""A turn of seed 7 that changes the funds (the time it runs costs payroll)."""


def _unreadable(r: dict[str, Any]) -> None:
    """The reply the client makes of one it cannot read (``bad_reply``: the request may have run)."""
    rid = r["id"]
    r.clear()
    r.update({"id": rid, "ok": False, "error": {"code": "bad_reply", "message": "server reply is not JSON (the request may have run)"}})


def _spoil_one(run: Any, op: str, how: str) -> None:
    """Spoil the reply to ``run``'s next ``op`` request: its result malformed (``funds`` a float), or unreadable."""
    from helpers import spoil_reply

    spoil_reply(run, op, _unreadable if how == "unreadable" else lambda r: _set_info("funds_cents", 1.5)(r["result"]))


def _stop_while_waiting(m: pytest.MonkeyPatch) -> None:
    """Make every wait for a reply stop (``TimeoutError``) once the reply has come: the request ran on the server, and
    the caller never took its reply in (as a timeout or Ctrl-C while waiting)."""
    recv = Client.recv

    def stopped(self: Client, rid: Any, timeout: Any = None) -> Any:
        recv(self, rid) if timeout is None else recv(self, rid, timeout)
        raise TimeoutError("stopped while waiting")

    m.setattr(Client, "recv", stopped)


@pytest.mark.parametrize("how", ["malformed", "unreadable"])
def test_turn_run_after_a_bad_reply_turn_score_and_step_refuse_until_reset(how: str, endpoint: str) -> None:
    """A turn whose reply could not be read (``bad_reply``) was played on the server: the run's funds, ``done`` and
    terminal reason are no longer known. ``score()`` used to answer from the funds of before that turn (the TRL
    adapter's reward, the OpenEnv turn env's ``score``), and ``step`` went on as if the turn had not been played (its
    reward lost to the OpenEnv env's sum). Now both refuse, naming why, until a reset, as the single env is due for
    a reset after a bad_reply step; ``messages()`` (the server's own) still answers."""
    run, twin = TurnRun(endpoint), TurnRun(endpoint)
    try:
        run.reset(7)
        twin.reset(7)
        twin.step(PAYS)
        assert twin.score() != run.score()  # the failed turn changed the funds: the cached ones are stale
        _spoil_one(run, "turn_step", how)
        with pytest.raises(ycgym.ProtocolError) as e:
            run.step(PAYS)
        assert e.value.code == "bad_reply", e.value
        with pytest.raises(RuntimeError, match=r"due for a reset.*bad_reply"):
            run.score()
        with pytest.raises(RuntimeError, match=r"due for a reset.*bad_reply"):
            run.step(["company status"])
        assert run.messages() == twin.messages()  # the server's history holds the turn
        run.reset(7)
        assert run.score() == 1.0
        run.step(PAYS)
        assert run.score() == twin.score()
    finally:
        run.close()
        twin.close()


def test_turn_run_a_turn_stopped_while_waiting_leaves_the_run_due(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """A turn stopped after it went out (a timeout, Ctrl-C) ran on the server, or will: the same as a bad_reply."""
    run = TurnRun(endpoint)
    try:
        run.reset(7)
        with monkeypatch.context() as m:
            _stop_while_waiting(m)
            with pytest.raises(TimeoutError):
                run.step(PAYS)
        with pytest.raises(RuntimeError, match=r"due for a reset.*stopped"):
            run.score()
        run.reset(7)
        run.step(["company status"])
    finally:
        run.close()


@pytest.mark.parametrize("how", ["malformed", "unreadable"])
def test_openenv_turn_env_a_bad_reply_turn_leaves_the_run_due_for_a_reset(how: str, endpoint: str) -> None:
    """The OpenEnv turn env: a turn whose reply could not be read used to leave it stepping on (that turn's reward and
    funds never reported, its state the funds of before); now it is due for a reset, as the OpenEnv step env is."""
    oe = _openenv()
    env = oe.YCBenchTurnEnvironment(endpoint=endpoint)
    try:
        env.reset(seed=7)
        assert env._run is not None
        _spoil_one(env._run, "turn_step", how)
        act = oe.YCBenchTurnAction(tool_calls=[oe.ToolCall(id=f"c{i}", name="run_command", arguments={"command": c}) for i, c in enumerate(PAYS)])
        with pytest.raises(ycgym.ProtocolError):
            env.step(act)
        with pytest.raises(RuntimeError, match="due for a reset"):
            env.step(act)
        env.reset(seed=7)
        env.step(act)
    finally:
        env.close()


def _openenv_env(oe: Any, kind: str, endpoint: str) -> tuple[Any, Any, Any]:
    """An OpenEnv env of ``kind`` reset to seed 7, the object whose client its requests go through, and an action that
    changes the funds (the step env's: the first command of :data:`PAYS`; the turn env's: the whole turn)."""
    if kind == "step":
        env = oe.YCBenchEnvironment(endpoint=endpoint)
        env.reset(seed=7)
        return env, env._backend, oe.YCBenchAction(command=PAYS[0])
    env = oe.YCBenchTurnEnvironment(endpoint=endpoint)
    env.reset(seed=7)
    act = oe.YCBenchTurnAction(tool_calls=[oe.ToolCall(id=f"c{i}", name="run_command", arguments={"command": c}) for i, c in enumerate(PAYS)])
    return env, env._run, act


def _figures(state: Any) -> dict[str, Any]:
    """A state's figures: everything but ``due``."""
    return {k: v for k, v in state.model_dump().items() if k != "due"}


def _due_until_reset(env: Any, act: Any, figures: dict[str, Any], why: str) -> None:
    """``env``'s state says it is due (``due`` holds ``why``) with ``figures`` unchanged, its step refuses naming why,
    and a reset clears it (its next step runs)."""
    st = env.state
    assert st.due is not None and why in st.due, st.due
    assert _figures(st) == figures  # as of the last step taken in, and marked so
    with pytest.raises(RuntimeError, match=f"due for a reset.*{why}"):
        env.step(act)
    env.reset(seed=7)
    assert env.state.due is None and env.state.step_count == 0
    env.step(act)
    assert env.state.due is None


@pytest.mark.parametrize("how", ["malformed", "unreadable"])
@pytest.mark.parametrize("kind", ["step", "turns"])
def test_openenv_state_after_a_bad_reply_says_the_episode_is_due(kind: str, how: str, endpoint: str) -> None:
    """After a step/turn whose reply could not be read, the OpenEnv envs refuse to step (the server ran it, the env never
    saw its result), but their ``state`` (what an OpenEnv client reads at ``/state`` or over the WebSocket) still showed
    the funds and step count of before it as the episode's, with nothing saying they were stale. Now ``state.due`` says
    why the episode is due for a reset (the figures are those of the last step taken in), until a reset clears it. The
    step env also used to step on after an unreadable reply (only a malformed result made it due)."""
    oe = _openenv()
    env, via, act = _openenv_env(oe, kind, endpoint)
    try:
        before = env.state
        assert before.due is None
        figures = _figures(before)
        _spoil_one(via, "step" if kind == "step" else "turn_step", how)
        with pytest.raises(ycgym.ProtocolError) as e:
            env.step(act)
        assert e.value.code == "bad_reply", e.value
        _due_until_reset(env, act, figures, "bad_reply")
    finally:
        env.close()


@pytest.mark.parametrize("kind", ["step", "turns"])
def test_openenv_a_step_stopped_while_waiting_leaves_the_env_due(kind: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """A step/turn stopped after it went out (a timeout, Ctrl-C) ran on the server, or will: the OpenEnv env is due for
    a reset, and its state says so (the step env used to step on from a state it never saw)."""
    oe = _openenv()
    env, _, act = _openenv_env(oe, kind, endpoint)
    try:
        figures = _figures(env.state)
        with monkeypatch.context() as m:
            _stop_while_waiting(m)
            with pytest.raises(TimeoutError):
                env.step(act)
        _due_until_reset(env, act, figures, "stopped")
    finally:
        env.close()


@pytest.mark.parametrize("how", ["unreadable", "stopped"])
def test_openenv_step_env_a_reset_not_taken_in_leaves_it_due(how: str, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """The step env resets its session in place: a reset whose reply could not be read, or whose wait was stopped, may
    have reset the episode on the server. The env used to keep the previous episode's state (not due) and step on in
    the server's new episode; now it is due for a reset and its state says so."""
    oe = _openenv()
    env, via, act = _openenv_env(oe, "step", endpoint)
    try:
        env.step(act)
        figures = _figures(env.state)
        if how == "unreadable":
            _spoil_one(via, "reset", how)
            with pytest.raises(ycgym.ProtocolError, match="bad_reply"):
                env.reset(seed=8)
        else:
            with monkeypatch.context() as m:
                _stop_while_waiting(m)
                with pytest.raises(TimeoutError):
                    env.reset(seed=8)
        _due_until_reset(env, act, figures, "reset")
    finally:
        env.close()


@pytest.mark.parametrize("how", ["refused", "unreadable"])
def test_openenv_turn_env_a_failed_reset_leaves_no_stale_state(how: str, endpoint: str) -> None:
    """The turn env's reset closes the run's session before it asks for a new one: when that reset fails (refused, or
    its reply unread), there is no run, and step says to reset. The state still showed the closed run's seed, turns
    and funds as the episode's; now it is that of no episode."""
    oe = _openenv()
    env, via, act = _openenv_env(oe, "turns", endpoint)
    try:
        env.step(act)
        assert env.state.step_count == 1
        if how == "unreadable":
            _spoil_one(via, "turn_reset", how)
        with pytest.raises(ycgym.ProtocolError):
            env.reset(seed=8, options={"max_turns": -1} if how == "refused" else None)
        assert env.state == oe.YCBenchTurnState(preset="default"), env.state
        with pytest.raises(RuntimeError, match="call reset"):
            env.step(act)
        env.reset(seed=7)
        env.step(act)
        assert env.state.step_count == 1 and env.state.due is None
    finally:
        env.close()
