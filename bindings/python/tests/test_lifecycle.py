"""The client's life with real processes: Ctrl-C, a server that dies, and a Python that dies.

* Ctrl-C (SIGINT to the foreground process group, as a terminal or a notebook kernel's interrupt sends it) during
  a step, between steps, and during a vector step leaves the environments usable: the server does not get the
  signal, and the interrupted request's late reply is not taken for the next one's. A step stopped while its reply
  was awaited leaves its env (or sub-environment) due for a reset, which ResetNeeded says; one stopped elsewhere
  does not.
* A local server that has exited makes calls fail at once with ServerExitedError (not a 30 s TimeoutError), and
  the next reset() starts a new one.
* A LocalServer never outlives its Python process, whichever thread started it and however Python dies
  (SIGKILL included, and while a forked child of Python lives on).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from helpers import alive
from ycgym import Client, LocalServer, ProtocolError
from ycgym.client import ServerExitedError

CHILD_TIMEOUT = 240


def child(code: str) -> subprocess.Popen[str]:
    """A Python child in its own session (like a terminal's foreground job: killpg reaches its group)."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        start_new_session=True,
    )


def read_line(proc: subprocess.Popen[str], want: str) -> str:
    """The next stdout line of ``proc`` starting with ``want`` (fails with its stderr if it exits first)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=30)
            raise AssertionError(f"child exited ({proc.returncode}) before printing {want!r}:\n{proc.stderr.read() if proc.stderr else ''}")
        if line.startswith(want):
            return line.strip()


def child_result(proc: subprocess.Popen[str]) -> Any:
    """The JSON a child prints on its ``result `` line, once it has exited with status 0 (killed if anything fails)."""
    try:
        result = json.loads(read_line(proc, "result ")[len("result ") :])
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return result


def wait_until(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


CTRL_C = """
    import json, signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in an interactive terminal
    import gymnasium as gym
    import ycgym
    from ycgym import server

    # These loops step until interrupted without advancing time: the stall rule (200 steps) is turned off.
    env = ycgym.YCBenchEnv(reset_options={"stall_steps": 0})
    env.reset(seed=1)
    vec = ycgym.YCBenchVectorEnv(4, reset_options={"stall_steps": 0})
    vec.reset(seed=1)
    pid = server._shared.pid
    out = {}

    def after(tag, call, check):
        t = time.monotonic()
        got = call()
        out[tag] = {"seconds": time.monotonic() - t, "ok": bool(check(got))}

    def step_or_reset_then_step(cmd):
        # A step stopped while its reply was awaited (most of the time is spent there) leaves the env due for a
        # reset: the server ran that step unseen, so its reward and its end were never taken in. ResetNeeded says
        # so, and after reset() the env steps. A Ctrl-C landing outside that wait leaves the env stepping as before.
        try:
            got = env.step(cmd)
            out["during_step_path"] = "stepped"
            return got
        except gym.error.ResetNeeded as e:
            assert "stopped (KeyboardInterrupt)" in str(e), str(e)
            out["during_step_path"] = "reset"
            env.reset(seed=1)
            return env.step(cmd)

    print("interrupt-1", flush=True)  # during steps: most of the time is spent waiting for a reply
    try:
        while True:
            env.step("market browse --limit 200")
    except KeyboardInterrupt:
        pass
    after("during_step", lambda: step_or_reset_then_step("company status"), lambda r: r[0]["command"] == "company status" and r[0]["ok"] == 1)

    print("interrupt-2", flush=True)  # between steps
    try:
        while True:
            time.sleep(0.01)
    except KeyboardInterrupt:
        pass
    after("between_steps", lambda: env.step("employee list"), lambda r: r[0]["command"] == "employee list")

    print("interrupt-3", flush=True)  # during vector steps
    try:
        while True:
            vec.step(["market browse --limit 200"] * 4)
    except KeyboardInterrupt:
        pass
    # Each sub-environment steps, or (its step interrupted while its reply was awaited: the server ran it unseen) is
    # reset: never a late reply of the interrupted step ("market browse").
    after(
        "during_vector_step",
        lambda: vec.step(["company status"] * 4),
        lambda r: all(c == "company status" or s == 0 for c, s in zip(r[0]["command"], r[4]["step"])),
    )
    after("reset_after", lambda: env.reset(seed=2), lambda r: r[1]["step"] == 0)

    out["server_still_running"] = bool(server._shared.running and server._shared.pid == pid)
    print("result " + json.dumps(out), flush=True)
"""


def test_ctrl_c_during_and_between_steps_leaves_the_envs_usable() -> None:
    proc = child(CTRL_C)
    try:
        for k in (1, 2, 3):
            read_line(proc, f"interrupt-{k}")
            time.sleep(0.5)
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        result = json.loads(read_line(proc, "result ")[len("result ") :])
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert result["server_still_running"], result
    assert result["during_step_path"] in ("stepped", "reset"), result
    for tag in ("during_step", "between_steps", "during_vector_step", "reset_after"):
        # Right reply, and no wait for a timeout (the default is 30 s; a healthy call takes milliseconds).
        assert result[tag]["ok"] and result[tag]["seconds"] < 10, (tag, result)


def test_an_interrupted_request_is_abandoned_and_its_late_reply_dropped(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # One request (not split into parts): its reply comes hundreds of milliseconds after the interrupt, which lands
    # while the client waits: the timer is armed when the wait begins (armed before the call, on a loaded machine it
    # could fire before the request was even sent). A split batch's first part can come back within the 20 ms, and an
    # interrupt landing while a reply is being taken in loses that reply: its id stays among the abandoned ones (see
    # client.py).
    c = Client(endpoint, timeout=60, split_batches=False)
    try:
        n = min(int(c.hello()["limits"]["max_batch"]), 512)
        sess = c.reset(1, options={"stall_steps": 0})["session"]  # a batch of n browses: no stall truncation

        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        real_wait = Client._recv_reply

        def arm_then_wait(self: Client, request_id: object, timeout: float | None) -> object:
            signal.setitimer(signal.ITIMER_REAL, 0.02)
            return real_wait(self, request_id, timeout)  # type: ignore[arg-type]

        old = signal.signal(signal.SIGALRM, interrupt)
        monkeypatch.setattr(Client, "_recv_reply", arm_then_wait)
        try:
            with pytest.raises(KeyboardInterrupt):
                c.step_batch([(sess, "market browse --limit 200")] * n)  # hundreds of ms of server work
        finally:
            monkeypatch.setattr(Client, "_recv_reply", real_wait)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        # The next request gets its own reply although the batch's reply is still on its way.
        r = c.step(sess, "company status")
        assert r["observation"]["command"] == "company status"
        # Once the late reply has arrived it is dropped, not kept.
        assert wait_until(lambda: (c.hello(), not c._abandoned)[1], 30), c._abandoned
        assert c._stash == {} and c._pending == {}
    finally:
        c.close()

class _RaisingClock:
    """``ycgym.client``'s ``time`` with a ``monotonic`` that raises KeyboardInterrupt while ``client`` has requests in
    flight: a Ctrl-C landing at the first clock read after a send."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def monotonic(self) -> float:
        if self.client._pending:
            raise KeyboardInterrupt
        return time.monotonic()

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def _settled(c: Client, sess: str | None) -> None:
    """The next request gets its own reply, and every late reply is dropped when it comes, none kept (the next request:
    a step of ``sess``, or a hello when None)."""
    if sess is None:
        assert c.hello()["protocol"] == 1
    else:
        assert c.step(sess, "company status")["observation"]["command"] == "company status"
    assert wait_until(lambda: (c.hello(), not c._abandoned)[1], 30), c._abandoned
    assert c._stash == {} and c._pending == {}


class _InterruptingSocket:
    """A client's socket whose ``send`` raises KeyboardInterrupt once it has sent the request ``when(payload)`` picks
    (the Ctrl-C landing as that send returns); everything else is the real socket's."""

    def __init__(self, real: Any, when: Callable[[bytes], bool]) -> None:
        self.real = real
        self.when = when

    def send(self, payload: bytes, *args: object, **kwargs: object) -> object:
        got = self.real.send(payload, *args, **kwargs)
        if self.when(bytes(payload)):
            raise KeyboardInterrupt
        return got

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


def test_an_interrupt_right_after_a_batch_is_sent_leaves_no_reply_behind(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal can land at any call once a batch is out, before the client waits (CI caught one: the reply of a batch
    kept in the stash for nobody). Here the first clock read after the send raises, as a Ctrl-C there would."""
    import ycgym.client as client_mod

    c = Client(endpoint, timeout=60, split_batches=False)
    try:
        sess = c.reset(1, options={"stall_steps": 0})["session"]
        monkeypatch.setattr(client_mod, "time", _RaisingClock(c))
        with pytest.raises(KeyboardInterrupt):
            c.step_batch([(sess, "company status")] * 40)
        monkeypatch.setattr(client_mod, "time", time)
        _settled(c, sess)
    finally:
        c.close()


def test_an_interrupt_before_gather_waits_abandons_its_requests(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import ycgym.client as client_mod

    c = Client(endpoint, timeout=60)
    try:
        sess = c.reset(1, options={"stall_steps": 0})["session"]
        ids = [c.send("step", session=sess, action="company status") for _ in range(3)]
        monkeypatch.setattr(client_mod, "time", _RaisingClock(c))
        with pytest.raises(KeyboardInterrupt):
            c.gather(ids)  # its first clock read raises, before it waits for anything
        monkeypatch.setattr(client_mod, "time", time)
        _settled(c, sess)
    finally:
        c.close()


def test_an_interrupt_as_a_send_returns_abandons_the_request(endpoint: str) -> None:
    """The signal lands once the socket has taken the request (the send returned): the request is out, so its reply
    must be dropped when it comes, not kept."""
    c = Client(endpoint, timeout=60)
    try:
        sess = c.reset(1, options={"stall_steps": 0})["session"]
        real = c._sock
        c._sock = _InterruptingSocket(real, lambda payload: True)
        try:
            with pytest.raises(KeyboardInterrupt):
                c.step(sess, "company status")
        finally:
            c._sock = real
        _settled(c, sess)
    finally:
        c.close()


def test_requests_to_a_dead_local_server_fail_fast_and_reset_restarts_it() -> None:
    proc = child(
        """
        import json, os, signal, time
        import ycgym
        from ycgym import server
        env = ycgym.YCBenchEnv()
        env.reset(seed=1)
        vec = ycgym.YCBenchVectorEnv(2)
        vec.reset(seed=1)
        first = server._shared
        os.kill(first.pid, signal.SIGKILL)
        first._proc.wait()
        out = {}
        for name, call in [("step", lambda: env.step("company status")), ("vector_step", lambda: vec.step(["company status"] * 2))]:
            t = time.monotonic()
            try:
                call()
                out[name] = "no error"
            except ycgym.ServerExitedError as e:
                out[name] = {"seconds": time.monotonic() - t, "message": str(e)}
        obs, info = env.reset(seed=1)
        vobs, vinfo = vec.reset(seed=1)
        out["restarted"] = server._shared is not first and server._shared.running
        out["same_new_server"] = env.endpoint == vec.endpoint == server._shared.endpoint
        out["works"] = bool(env.step("company status")[0]["ok"] == 1 and list(vec.step(["company status"] * 2)[0]["ok"]) == [1, 1])
        print("result " + json.dumps(out), flush=True)
        """
    )
    result = child_result(proc)
    for name in ("step", "vector_step"):
        assert isinstance(result[name], dict), result
        assert result[name]["seconds"] < 5, result
        assert "was killed by signal 9" in result[name]["message"] and "reset()" in result[name]["message"], result
    assert result["restarted"] and result["same_new_server"] and result["works"], result


def test_a_wait_for_a_reply_ends_when_the_server_exits(shared: LocalServer) -> None:
    """The liveness check runs while waiting, not only before sending."""
    with LocalServer() as srv:
        c = Client(srv.endpoint, timeout=60, liveness=srv.exit_message)
        sess = c.reset(1)["session"]
        n = min(int(c.hello()["limits"]["max_batch"]), 512)
        rid = c.send("step_batch", steps=[{"session": sess, "action": "market browse --limit 200"}] * n)
        os.kill(srv.pid, signal.SIGKILL)
        t = time.monotonic()
        with pytest.raises(ServerExitedError, match="killed by signal 9"):
            c.recv(rid)
        assert time.monotonic() - t < 5
        with pytest.raises(ServerExitedError):
            c.hello()
        c.close()


def test_a_server_started_from_a_thread_outlives_that_thread() -> None:
    """Linux's parent-death signal follows the starting *thread*: it must not stop a server when that thread ends."""
    box: list[LocalServer] = []
    t = threading.Thread(target=lambda: box.append(LocalServer()))
    t.start()
    t.join()
    (srv,) = box
    try:
        time.sleep(1.0)
        assert srv.running
        with Client(srv.endpoint, timeout=30) as c:
            assert c.hello()["protocol"] == 1
    finally:
        srv.close()


def test_servers_die_with_a_sigkilled_python() -> None:
    proc = child(
        """
        import threading, time
        import ycgym
        from ycgym import LocalServer, server
        main = LocalServer()
        box = []
        t = threading.Thread(target=lambda: box.append(LocalServer()))
        t.start(); t.join()
        env = ycgym.YCBenchEnv()   # the shared server
        env.reset(seed=1)
        print("pids", main.pid, box[0].pid, server._shared.pid, flush=True)
        time.sleep(600)
        """
    )
    try:
        pids = [int(x) for x in read_line(proc, "pids").split()[1:]]
        assert all(alive(p) for p in pids)
        proc.kill()  # SIGKILL: no finalizer, no atexit
        proc.wait(timeout=30)
        assert wait_until(lambda: not any(alive(p) for p in pids), 20), [p for p in pids if alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_server_dies_with_its_python_while_a_forked_child_lives_on() -> None:
    """A fork copies the write end of the server's stdin pipe: the child closes its copy, so the parent's death
    still reaches the server (started from a thread: no parent-death signal helps here)."""
    proc = child(
        """
        import os, threading, time
        from ycgym import LocalServer
        box = []
        t = threading.Thread(target=lambda: box.append(LocalServer()))
        t.start(); t.join()
        kid = os.fork()
        if kid == 0:
            time.sleep(60)
            os._exit(0)
        print("pids", box[0].pid, kid, flush=True)
        time.sleep(600)
        """
    )
    kid = 0
    try:
        server_pid, kid = (int(x) for x in read_line(proc, "pids").split()[1:])
        proc.kill()
        proc.wait(timeout=30)
        assert wait_until(lambda: not alive(server_pid), 20), "the server outlived its Python parent"
        assert alive(kid), "the forked child should still be running (it holds no copy of the pipe)"
    finally:
        if proc.poll() is None:
            proc.kill()
        if kid and alive(kid):
            os.kill(kid, signal.SIGKILL)


def test_request_all_returns_what_gather_of_sends_returns(endpoint: str) -> None:
    c = Client(endpoint, timeout=60)
    try:
        sess = [c.reset(seed, options={"stall_steps": 0})["session"] for seed in (1, 2)]
        reqs = [{"session": sess[0], "action": "company status"}, {"session": "s-unknown", "action": "x"}, {"session": sess[1], "action": "employee list"}]
        a = c.request_all("step", reqs, raise_errors=False)
        b = c.gather([c.send("step", **r) for r in reqs], raise_errors=False)
        assert [x["observation"] if isinstance(x, dict) else (x.code, x.index) for x in a] == [
            x["observation"] if isinstance(x, dict) else (x.code, x.index) for x in b
        ]
        assert isinstance(a[1], ProtocolError) and a[1].code == "unknown_session" and a[1].index == 1
        with pytest.raises(ProtocolError):
            c.request_all("step", reqs)
        assert c._stash == {} and c._pending == {}
    finally:
        c.close()


def test_an_interrupt_between_pipelined_requests_abandons_those_sent(endpoint: str) -> None:
    """`YCBenchVectorEnv.snapshot` sends a snapshot request per sub-environment, then waits: a Ctrl-C as the second
    send returns must abandon the first as well (a list comprehension of sends loses its ids)."""
    from ycgym import YCBenchVectorEnv

    venv = YCBenchVectorEnv(3, endpoint=endpoint)
    try:
        venv.reset(seed=1)
        c = venv._backend.client
        real = c._sock
        sent = [0]

        def second_snapshot(payload: bytes) -> bool:
            if b'"snapshot"' in payload:
                sent[0] += 1
            return sent[0] == 2

        c._sock = _InterruptingSocket(real, second_snapshot)
        try:
            with pytest.raises(KeyboardInterrupt):
                venv.snapshot()
        finally:
            c._sock = real
        _settled(c, venv._sessions[0])
    finally:
        venv.close()


def test_an_interrupt_during_a_discrete_step_abandons_its_pipelined_resets(endpoint: str) -> None:
    """The Discrete vector env sends its automatic resets ahead of the step batch: a Ctrl-C as the batch goes out must
    abandon the resets too (their replies would otherwise be kept in the client)."""
    import numpy as np

    from ycgym import YCBenchDiscreteVectorEnv

    env = YCBenchDiscreteVectorEnv(3, endpoint=endpoint, max_steps=2)
    try:
        _, info = env.reset(seed=1)
        _, _, _, trunc, info = env.step(info["action_mask"].argmax(axis=1))
        _, info = env.reset(options={"reset_mask": np.array([True, False, False])})  # sub-environment 0 starts over
        _, _, _, trunc, info = env.step(info["action_mask"].argmax(axis=1))
        # 1 and 2 ended: reset on the next step, their resets sent ahead of the batch that steps 0.
        assert trunc.tolist() == [False, True, True]
        c = env._backend.client
        real = c._sock
        c._sock = _InterruptingSocket(real, lambda p: b'"step_batch"' in p)
        try:
            with pytest.raises(KeyboardInterrupt):
                env.step(info["action_mask"].argmax(axis=1))
        finally:
            c._sock = real
        _settled(c, None)  # (the interrupted batch ran: sub-environment 0's episode is over)
    finally:
        env.close()


def test_an_interrupt_as_a_batch_send_returns_abandons_its_parts(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`YCBenchVectorEnv.step` sends its batch (in parts from 128 sub-environments over ZeroMQ), then waits: a Ctrl-C
    landing as `send_step_batch` returns must abandon the parts it sent (their ids are the caller's before they go)."""
    from ycgym import YCBenchVectorEnv

    venv = YCBenchVectorEnv(130, endpoint=endpoint, reset_options={"stall_steps": 0})
    try:
        venv.reset(seed=3)
        c = venv._backend.client
        real = Client.send_step_batch

        def then_interrupted(self: Client, *args: Any, **kwargs: Any) -> Any:
            real(self, *args, **kwargs)
            raise KeyboardInterrupt

        monkeypatch.setattr(Client, "send_step_batch", then_interrupted)
        with pytest.raises(KeyboardInterrupt):
            venv.step(["company status"] * 130)
        monkeypatch.setattr(Client, "send_step_batch", real)
        _settled(c, venv._sessions[0])
    finally:
        venv.close()



@pytest.mark.parametrize("kind", ["text", "discrete", "vector", "discrete_vector"])
def test_an_env_used_after_close_says_it_is_closed(endpoint: str, kind: str) -> None:
    """reset, step, snapshot and restore of a closed env raise Gymnasium's ClosedEnvironmentError naming the env (they
    said "the client is closed", of a client the user never made, or "call reset() before step()"); close again is
    a no-op."""
    import gymnasium as gym
    import numpy as np

    from ycgym import YCBenchDiscreteEnv, YCBenchDiscreteVectorEnv, YCBenchEnv, YCBenchVectorEnv

    make: dict[str, Callable[[], Any]] = {
        "text": lambda: YCBenchEnv(endpoint=endpoint),
        "discrete": lambda: YCBenchDiscreteEnv(endpoint=endpoint),
        "vector": lambda: YCBenchVectorEnv(2, endpoint=endpoint),
        "discrete_vector": lambda: YCBenchDiscreteVectorEnv(2, endpoint=endpoint),
    }
    action: Any = {"text": "company status", "discrete": 0, "vector": ["company status"] * 2, "discrete_vector": np.zeros(2, dtype=np.int64)}[kind]
    env = make[kind]()
    env.reset(seed=1)
    calls: list[Callable[[], Any]] = [lambda: env.reset(seed=1), lambda: env.step(action)]
    if hasattr(env, "snapshot"):
        calls.append(env.snapshot)
    if hasattr(env, "restore"):
        snap = env.snapshot()
        calls.append(lambda: env.restore(snap))
    env.close()
    name = type(env).__name__
    for call in calls:
        with pytest.raises(gym.error.ClosedEnvironmentError, match=f"this {name} is closed"):
            call()
    env.close()


def test_a_turn_run_resets_onto_a_new_local_server_after_its_server_died() -> None:
    """TurnRun (the turn protocol behind the TRL, OpenEnv turn and verifiers adapters), like the Gym envs: after the
    shared local server died, its reset starts a new one. Before, every later reset failed with ServerExitedError
    (an OpenEnv turn session keeps its TurnRun across resets)."""
    proc = child(
        """
        import json, os, signal
        import ycgym
        from ycgym import server
        from ycgym.integrations.score import TurnRun
        run = TurnRun()
        first_msgs = run.reset(1)["messages"]
        first = server._shared
        os.kill(first.pid, signal.SIGKILL)
        first._proc.wait()
        out = {}
        try:
            run.step(["yc-bench company status"])
            out["step"] = "no error"
        except ycgym.ServerExitedError as e:
            out["step"] = "exited"
        res = run.reset(1)
        out["same_messages"] = res["messages"] == first_msgs
        out["restarted"] = server._shared is not first and server._shared.running
        out["works"] = run.step(["yc-bench company status"])["info"]["turn"] == 1
        run.close()
        print("result " + json.dumps(out), flush=True)
        """
    )
    result = child_result(proc)
    assert result == {"step": "exited", "same_messages": True, "restarted": True, "works": True}, result


def test_a_discrete_vector_env_resets_onto_a_new_local_server_after_its_server_died() -> None:
    """YCBenchDiscreteVectorEnv, like YCBenchVectorEnv: after the shared local server died, a step fails at once
    (ServerExitedError saying reset() starts a new server) and the next reset starts a new one, on which the env steps
    as a fresh env of the same seeds does. Before, its reset raised ServerExitedError for ever."""
    proc = child(
        """
        import json, os, signal
        import numpy as np
        import ycgym
        from ycgym import server
        vec = ycgym.YCBenchDiscreteVectorEnv(3, max_steps=6)
        vec.reset(seed=5)
        first = server._shared
        os.kill(first.pid, signal.SIGKILL)
        first._proc.wait()
        out = {}
        try:
            vec.step([0, 0, 0])
            out["step"] = "no error"
        except ycgym.ServerExitedError as e:
            out["step"] = "reset()" in str(e)
        obs, _ = vec.reset(seed=7)
        out["restarted"] = server._shared is not first and server._shared.running and vec.endpoint == server._shared.endpoint
        fresh = ycgym.YCBenchDiscreteVectorEnv(3, max_steps=6)
        want, _ = fresh.reset(seed=7)
        same = bool(np.array_equal(obs, want))
        for _ in range(8):
            acts = [int(np.flatnonzero(m)[0]) for m in fresh.action_masks()]
            a, b = vec.step(acts), fresh.step(acts)
            same = same and all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4]))
        out["same"] = same
        vec.close()
        fresh.close()
        print("result " + json.dumps(out), flush=True)
        """
    )
    result = child_result(proc)
    assert result == {"step": True, "restarted": True, "same": True}, result
