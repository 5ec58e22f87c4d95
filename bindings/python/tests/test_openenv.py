"""The OpenEnv adapter, end to end: real OpenEnv servers (uvicorn processes on loopback) driven by
OpenEnv's own client classes, compared with the plain ycgym env and client for the same seeds and actions."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue
from threading import Thread
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosedError

from helpers import golden_commands, wait_reaped
from ycgym import Client, YCBenchEnv
from ycgym.integrations.openenv import (
    ToolCall,
    YCBenchAction,
    YCBenchEnvClient,
    YCBenchTurnAction,
    YCBenchTurnEnvClient,
)
from ycgym.integrations.score import funds_multiple

MAX_STEPS = 30

#: Every line each OpenEnv server printed so far (stdout and stderr), by its URL.
OUTPUT: dict[str, list[str]] = {}


def _start(kind: str, endpoint: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ycgym.integrations.openenv", "--kind", kind, "--port", "0", "--endpoint", endpoint, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: Queue[str] = Queue()
    output: list[str] = []
    assert proc.stdout is not None

    def drain() -> None:
        for x in proc.stdout:  # type: ignore[union-attr]
            lines.put(x)
            output.append(x)

    Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + 120
    seen: list[str] = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if line.startswith("{"):
            url: str = json.loads(line)["url"]
            OUTPUT[url] = output
            return proc, url
    proc.kill()
    raise RuntimeError(f"OpenEnv server ({kind}) did not start: {''.join(seen)}")


@pytest.fixture(scope="module")
def servers(endpoint: str) -> Iterator[dict[str, str]]:
    """One ``step`` and one ``turns`` OpenEnv server for the module, both on the session's ycgym server."""
    procs: list[subprocess.Popen[str]] = []
    try:
        step, step_url = _start("step", endpoint, "--max-steps", str(MAX_STEPS))
        procs.append(step)
        turns, turns_url = _start("turns", endpoint)
        procs.append(turns)
        yield {"step": step_url, "turns": turns_url}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def test_step_episode_matches_plain_env(servers: dict[str, str], endpoint: str) -> None:
    """A whole (truncated) episode through OpenEnv's client equals the gymnasium env step for step."""
    commands = golden_commands("traj-default-greedy-seed-1.json.gz")
    assert len(commands) > MAX_STEPS
    plain = YCBenchEnv(endpoint=endpoint, max_steps=MAX_STEPS)
    try:
        _, pinfo = plain.reset(seed=1)
        with YCBenchEnvClient(base_url=servers["step"]).sync() as env:
            r = env.reset(seed=1)
            assert r.done is False and r.reward is None
            assert r.observation.funds_cents == pinfo["funds_cents"] == r.observation.status["funds_cents"]
            total_cents = 0
            for i, cmd in enumerate(commands):
                r = env.step(YCBenchAction(command=cmd))
                pobs, preward, pterm, ptrunc, pinfo = plain.step(cmd)
                o = r.observation
                assert o.text == pobs["text"], f"step {i}: {cmd}"
                assert (r.reward, o.reward_cents, o.funds_cents, o.step) == (preward, pinfo["reward_cents"], pinfo["funds_cents"], pinfo["step"])
                assert o.status == pinfo["status"]
                assert r.done == (pterm or ptrunc)
                total_cents += o.reward_cents
                if r.done:
                    break
            assert r.done and o.step == MAX_STEPS and o.terminal_reason == pinfo["terminal_reason"] == "max_steps"
            st = env.state()
            assert (st.seed, st.step_count, st.funds_cents, st.terminal_reason) == (1, MAX_STEPS, o.funds_cents, "max_steps")
            with pytest.raises(RuntimeError, match="episode is over"):
                env.step(YCBenchAction(command="company status"))
            # The session survives the error and a new episode starts cleanly.
            assert env.reset(seed=1).observation.funds_cents == r.observation.funds_cents - total_cents
    finally:
        plain.close()


def test_readme_client_example_runs_as_written(servers: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """The README's OpenEnv client example (RL stacks), its URL pointed at the module's step server: a reset, one
    command, and the printed text, reward and done flag."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "YCBenchEnvClient(" in b)
    assert 'base_url="http://127.0.0.1:8000"' in code
    exec(compile(code.replace("http://127.0.0.1:8000", servers["step"]), "README.md#openenv", "exec"), {})
    out = capsys.readouterr().out
    text, _, flags = out.rstrip("\n").rpartition("}")
    assert len(json.loads(text + "}")["tasks"]) == 5 and flags == " 0.0 False", out[-200:]


def test_a_client_that_closes_leaves_no_traceback_in_the_server_log(servers: dict[str, str]) -> None:
    """OpenEnv's own client closes its WebSocket right after its close message; openenv-core 0.3's endpoint then
    closes the socket again and starlette raises ``WebSocketDisconnect``, which uvicorn logged as ``ERROR: Exception
    in ASGI application`` with a 60-line traceback after every session of the README's client example (OpenEnv
    issue 1159). The adapter's middleware drops that exception: a clean close leaves the log empty."""
    for kind in ("step", "turns"):
        client = YCBenchEnvClient if kind == "step" else YCBenchTurnEnvClient
        with client(base_url=servers[kind]).sync() as env:
            env.reset(seed=1)
    time.sleep(1.0)  # the server handles the close after the client has gone
    for kind in ("step", "turns"):
        log = "".join(OUTPUT[servers[kind]])
        assert "Traceback" not in log and "Exception in ASGI application" not in log, (kind, log[-2000:])


def test_without_the_extra_the_import_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m ycgym.integrations.openenv`` from a wheel installed without ``[openenv]`` said only ``No module
    named 'fastapi'``; it names the extra now."""
    for name in ("fastapi", "openenv"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "ycgym.integrations.openenv")
    with pytest.raises(ImportError, match=re.escape("pip install 'ycgym[openenv]'")):
        importlib.import_module("ycgym.integrations.openenv")


def test_step_errors_are_structured(servers: dict[str, str]) -> None:
    with YCBenchEnvClient(base_url=servers["step"]).sync() as env:
        with pytest.raises(RuntimeError, match="call reset before step"):
            env.step(YCBenchAction(command="company status"))
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env._send_and_receive({"type": "step", "data": {"cmd": "company status"}})
        # A bad command is an ordinary step, as in the gym env.
        env.reset(seed=4)
        r = env.step(YCBenchAction(command="task accept --task-id Nope"))
        assert r.observation.exit_code == 1 and r.reward == 0.0 and not r.done
    health = _get(servers["step"] + "/health")
    assert health["status"] == "healthy"
    schema = _get(servers["step"] + "/schema")
    assert "command" in schema["action"]["properties"]
    assert {"text", "status", "funds_cents"} <= set(schema["observation"]["properties"])


def _reply(call: int, *commands: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"c{call}_{i}", "name": "run_command", "arguments": json.dumps({"command": c})} for i, c in enumerate(commands)]}


TURNS = [
    ("yc-bench company status", "yc-bench market browse --limit 3"),
    ("yc-bench employee list",),
    ("yc-bench task accept --task-id Task-10", "yc-bench task assign --task-id Task-10 --employees Emp_1,Emp_2,Emp_3,Emp_4"),
    ("yc-bench task dispatch --task-id Task-10", "yc-bench sim resume"),
    (),
]


def test_turn_episode_matches_the_turn_protocol(servers: dict[str, str], endpoint: str) -> None:
    """The paper's protocol over OpenEnv: messages, tool results and rewards equal the server's turn ops."""
    opts = {"max_turns": len(TURNS)}
    with Client(endpoint) as c, YCBenchTurnEnvClient(base_url=servers["turns"]).sync() as env:
        direct = c.turn_reset(7, options=opts)
        r = env.reset(seed=7, options=opts)
        assert r.observation.messages == direct["messages"]
        assert r.observation.tools == direct["tools"] and r.observation.tools[0]["function"]["name"] == "run_command"
        start = r.observation.info["funds_cents"]
        for n, cmds in enumerate(TURNS, start=1):
            reply = _reply(n, *cmds)
            want = c.turn_step(direct["session"], reply)
            r = env.step(YCBenchTurnAction(tool_calls=[ToolCall(**t) for t in reply["tool_calls"]]))
            o = r.observation
            assert o.tool_results == want["tool_results"]
            assert r.reward == want["info"]["reward_cents"] / 100
            assert r.done == want["done"]
            assert o.messages == ([] if r.done else c.turn_messages(direct["session"]))
        assert r.done and o.terminal_reason == "error" and o.info["terminal_detail"] == f"max_turns={len(TURNS)} reached"
        assert o.score == funds_multiple(o.info["funds_cents"], start)
        st = env.state()
        assert (st.seed, st.step_count, st.start_funds_cents, st.funds_cents) == (7, len(TURNS), start, o.info["funds_cents"])
        with pytest.raises(RuntimeError, match="the run is over"):
            env.step(YCBenchTurnAction())


def test_turn_episode_to_the_end_is_deterministic(servers: dict[str, str]) -> None:
    """Two OpenEnv sessions given the same seed and replies see identical observations."""

    def play() -> list[dict[str, Any]]:
        out = []
        with YCBenchTurnEnvClient(base_url=servers["turns"]).sync() as env:
            r = env.reset(seed=3, options={"max_turns": 3})
            out.append(r.observation.model_dump())
            n = 0
            while not r.done:
                n += 1
                r = env.step(YCBenchTurnAction(tool_calls=[ToolCall(id=f"t{n}", name="run_command", arguments={"command": "yc-bench sim resume"})]))
                out.append(r.observation.model_dump())
        return out

    a, b = play(), play()
    assert a == b and len(a) == 4


def _post(url: str, path: str, body: bytes, *, claim: int | None = None, chunked: bool = False) -> tuple[int, bytes]:
    """POST ``body`` (``claim``: a Content-Length sent without the body; ``chunked``: in 1 MiB chunks, no length);
    the status and reply body. A server that answers before the body is all sent may close the connection on it."""
    import http.client
    import urllib.parse

    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=60)
    c.putrequest("POST", path)
    c.putheader("Content-Type", "application/json")
    if chunked:
        c.putheader("Transfer-Encoding", "chunked")
    else:
        c.putheader("Content-Length", str(claim if claim is not None else len(body)))
    c.endheaders()
    try:
        if chunked:
            for i in range(0, len(body), 1 << 20):
                part = body[i : i + (1 << 20)]
                c.send(b"%x\r\n%b\r\n" % (len(part), part))
            c.send(b"0\r\n\r\n")
        elif claim is None:
            c.send(body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = c.getresponse()
    out = (r.status, r.read())
    c.close()
    return out


def test_request_bodies_above_the_limit_are_refused_without_being_read(servers: dict[str, str]) -> None:
    """An HTTP body above 8 MiB gets a short 413 (before: read whole, and the 422 validation error echoed the whole
    input back: a 20 MB command made a 20 MB reply), whether its Content-Length says so or it comes chunked; a
    WebSocket message above it closes that connection; the server goes on serving."""
    big = json.dumps({"action": {"command": "x" * (9 << 20)}}).encode()
    for kwargs in ({"claim": len(big)}, {"chunked": True}):
        status, body = _post(servers["step"], "/step", big, **kwargs)
        assert status == 413 and len(body) < 200 and b"8388608" in body, (kwargs, status, body[:200])
    # Under the limit, the same route answers as before (a command too long for the wire: a short 422).
    status, body = _post(servers["step"], "/step", json.dumps({"action": {"command": "x" * 70_000}}).encode())
    assert status == 422 and len(body) < 200_000
    with YCBenchEnvClient(base_url=servers["step"]).sync() as env:
        env.reset(seed=4)
        # The server closes the connection with 1009 (message too big), naming the limit.
        with pytest.raises(ConnectionClosedError, match=r"1009 \(message too big\).*8388608"):
            env._send_and_receive({"type": "step", "data": {"command": "x" * (9 << 20)}})
    with YCBenchEnvClient(base_url=servers["step"]).sync() as env:
        env.reset(seed=4)
        assert env.step(YCBenchAction(command="company status")).observation.exit_code == 0
    assert _get(servers["step"] + "/health")["status"] == "healthy"


def test_bad_flags_are_usage_errors_before_serving(endpoint: str, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flag is checked before the server listens: a usage error (exit 2) naming it. Before, a port outside
    0-65535 and --max-concurrent-envs 0 were tracebacks (OverflowError, a pydantic ValidationError), --max-steps 0 or
    with --kind turns (where it means nothing) was taken, and an unknown --preset or an --endpoint where no ycgym
    server answers served, and failed every reset."""
    import socket as socket_mod

    from ycgym.integrations import openenv as oe

    monkeypatch.setattr("ycgym._backend.SERVER_CHECK_TIMEOUT_S", 0.5)
    taken = socket_mod.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    busy = taken.getsockname()[1]
    cases = [
        (["--port", "-1"], "argument --port: must be an integer from 0 to 65535"),
        (["--port", "70000"], "argument --port: must be an integer from 0 to 65535"),
        (["--max-concurrent-envs", "0"], "argument --max-concurrent-envs: must be an integer >= 1"),
        (["--kind", "step", "--max-steps", "0"], "argument --max-steps: must be an integer >= 1"),
        (["--max-steps", "5"], "--max-steps goes with --kind step"),
        (["--preset", "bogus"], "--preset: unknown preset 'bogus' (available: "),
        (["--config", "bogus"], "--preset: unknown preset 'bogus' (available: "),  # the alias of every command
        (["--endpoint", "tcp://127.0.0.1:9"], "--endpoint: no ycgym server answers at tcp://127.0.0.1:9"),
        (["--port", str(busy)], f"cannot listen on 127.0.0.1:{busy}: "),
    ]
    try:
        for args, message in cases:
            argv = ["--port", "0", *args] if "--port" not in args else list(args)
            if "--endpoint" not in args:
                argv += ["--endpoint", endpoint]
            with pytest.raises(SystemExit) as e:
                oe.main(argv)
            err = capsys.readouterr().err
            assert e.value.code == 2, (args, err)
            assert f"error: {message}" in err, (args, err)
    finally:
        taken.close()


def test_a_reset_after_the_server_reaped_the_session_starts_a_new_one() -> None:
    """An OpenEnv session idle past the ycgym server's idle timeout (10 minutes by default; a GRPO trainer can leave an
    env that long between rollouts) resets into a new session, as the Gym envs do. Before, its reset asked for the
    reaped session and failed with unknown_session."""
    from ycgym import LocalServer
    from ycgym.integrations.openenv import YCBenchEnvironment

    with LocalServer(args=["--idle-timeout", "0.5"]) as srv:
        env = YCBenchEnvironment(endpoint=srv.endpoint)
        try:
            first = env.reset(seed=1)
            assert wait_reaped(srv, 1)
            again = env.reset(seed=1)
            assert again.text == first.text and again.status == first.status
            assert env.step(YCBenchAction(command="company status")).step == 1
        finally:
            env.close()
