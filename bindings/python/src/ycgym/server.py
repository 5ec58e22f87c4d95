"""Run the TypeScript ycgym server as a child process.

:class:`LocalServer` starts ``node <entry> serve --endpoint tcp://127.0.0.1:0``, waits for the one JSON
line ``{"event": "listening", "endpoint": "tcp://127.0.0.1:PORT"}`` that the server prints on stdout
once its socket is bound, and stops the process (SIGTERM, then SIGKILL) on :meth:`LocalServer.close`,
when it is garbage-collected, and at interpreter exit. The entry script is found, in order, from:

1. the environment variable ``YCGYM_NODE_ENTRY`` (path of ``dist/src/cli/main.js``);
2. a repository checkout around this package (editable installs): the first parent directory that has
   ``dist/src/cli/main.js``;
3. a ``ycgym`` executable on ``PATH`` (the npm package's ``bin``).

``node`` itself is ``YCGYM_NODE`` if set, else ``node`` on ``PATH``.

:func:`shared_server` / :func:`release_shared_server` hand out one reference-counted server per
process, so many environments reuse a single child; it stops when the last reference is released.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from queue import Empty, Queue

__all__ = ["LocalServer", "ServerStartError", "find_server_command", "shared_server", "release_shared_server"]

_ENTRY_REL = Path("dist") / "src" / "cli" / "main.js"


class ServerStartError(RuntimeError):
    """The server process could not be started or did not report that it is listening."""


def _node() -> str:
    node = os.environ.get("YCGYM_NODE") or shutil.which("node")
    if not node:
        raise ServerStartError("ycgym: `node` was not found on PATH (set YCGYM_NODE to its path); Node.js >= 20 is required")
    return node


def find_server_command() -> list[str]:
    """The command (argv prefix) that runs the ycgym CLI; ``serve ...`` is appended to it."""
    entry = os.environ.get("YCGYM_NODE_ENTRY")
    if entry:
        p = Path(entry)
        if not p.is_file():
            raise ServerStartError(f"ycgym: YCGYM_NODE_ENTRY={entry!r} does not exist (run `npm run build`?)")
        return [_node(), str(p)]
    for parent in Path(__file__).resolve().parents:
        cand = parent / _ENTRY_REL
        if cand.is_file():
            return [_node(), str(cand)]
    exe = shutil.which("ycgym")
    if exe:
        return [exe]
    raise ServerStartError(
        "ycgym: cannot find the ycgym server. Set YCGYM_NODE_ENTRY to dist/src/cli/main.js of a built "
        "checkout (`npm run build`), install the npm package so `ycgym` is on PATH, or pass endpoint=..."
    )


def _drain(stream: object, sink: Queue[str | None] | None, tail: collections.deque[str]) -> None:
    """Read a child's pipe line by line until EOF (so the child never blocks on a full pipe)."""
    try:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            tail.append(line)
            if sink is not None:
                sink.put(line)
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()  # type: ignore[attr-defined]
        except Exception:  # pragma: no cover
            pass
        if sink is not None:
            sink.put(None)


def _stop_process(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, wait ``grace`` seconds, then SIGKILL; always reap the child."""
    try:
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        else:
            proc.wait(timeout=0)
    except Exception:  # pragma: no cover - best effort during interpreter shutdown
        pass
    # The pipes are closed by the reader threads when they reach EOF (closing them here could block
    # on a reader holding the buffer's lock).


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: have the kernel SIGTERM the server if this Python process dies without cleaning up."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:
        pass


class LocalServer:
    """A ycgym server running as a child process on a loopback (or ipc) endpoint.

    Args:
        endpoint: where the server binds (default ``tcp://127.0.0.1:0``: a free port, reported back).
        args: extra command-line arguments for ``ycgym serve`` (e.g. ``["--max-sessions", "64"]``).
        env: extra environment variables for the child (e.g. CURVE keys).
        command: argv prefix that runs the CLI (default: :func:`find_server_command`).
        startup_timeout: seconds to wait for the ``listening`` line.
        stop_timeout: seconds between SIGTERM and SIGKILL.

    Use it as a context manager or call :meth:`close`. ``endpoint`` is the address clients connect to.
    """

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:0",
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 5.0,
    ) -> None:
        cmd = list(command) if command is not None else find_server_command()
        argv = [*cmd, "serve", "--endpoint", endpoint, *args]
        child_env = dict(os.environ)
        if env:
            child_env.update(env)
        use_pdeathsig = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env,
                preexec_fn=_pdeathsig if use_pdeathsig else None,
            )
        except OSError as e:
            raise ServerStartError(f"ycgym: cannot run {' '.join(argv)}: {e}") from e
        self.argv = argv
        self.pid = self._proc.pid
        self._finalizer = weakref.finalize(self, _stop_process, self._proc, stop_timeout)
        self._stdout_tail: collections.deque[str] = collections.deque(maxlen=200)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        lines: Queue[str | None] = Queue()
        self._threads = [
            threading.Thread(
                target=_drain, args=(self._proc.stdout, lines, self._stdout_tail), daemon=True, name=f"ycgym-server-{self.pid}-stdout"
            ),
            threading.Thread(
                target=_drain, args=(self._proc.stderr, None, self._stderr_tail), daemon=True, name=f"ycgym-server-{self.pid}-stderr"
            ),
        ]
        for t in self._threads:
            t.start()
        try:
            self.endpoint: str = self._wait_listening(lines, startup_timeout)
        except BaseException:
            self.close()
            raise

    def _wait_listening(self, lines: Queue[str | None], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerStartError(self._failure(f"did not report listening within {timeout:g} s"))
            try:
                line = lines.get(timeout=min(remaining, 0.25))
            except Empty:
                continue
            if line is None:  # stdout closed: the process is exiting
                try:
                    self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
                for t in self._threads:
                    t.join(timeout=1)
                raise ServerStartError(self._failure(f"exited with status {self._proc.poll()} before listening"))
            s = line.strip()
            if not s.startswith("{"):
                continue
            try:
                msg = json.loads(s)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("event") == "listening" and isinstance(msg.get("endpoint"), str):
                return str(msg["endpoint"])

    def _failure(self, what: str) -> str:
        err = "\n".join(self._stderr_tail).strip()
        out = "\n".join(self._stdout_tail).strip()
        msg = f"ycgym server ({' '.join(self.argv)}) {what}"
        if err:
            msg += f"\n--- stderr ---\n{err}"
        if out:
            msg += f"\n--- stdout ---\n{out}"
        return msg

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (for diagnostics)."""
        return "\n".join(self._stderr_tail)

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``stop_timeout``) and reap it. Idempotent."""
        self._finalizer()
        for t in getattr(self, "_threads", ()):
            t.join(timeout=1)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.returncode}"
        return f"LocalServer({getattr(self, 'endpoint', '?')!r}, pid={self.pid}, {state})"


# ---------------------------------------------------------------------- shared server

_shared_lock = threading.Lock()
_shared: LocalServer | None = None
_shared_refs = 0


def shared_server() -> LocalServer:
    """Acquire a reference to this process's shared server (started on first use).

    Every call must be paired with :func:`release_shared_server`; the server stops when the count
    drops to zero (and in any case at interpreter exit).
    """
    global _shared, _shared_refs
    with _shared_lock:
        if _shared is not None and not _shared.running:
            _shared.close()
            _shared = None
            _shared_refs = 0
        if _shared is None:
            _shared = LocalServer()
            _shared_refs = 0
        _shared_refs += 1
        return _shared


def release_shared_server(server: LocalServer) -> None:
    """Release a reference obtained from :func:`shared_server`."""
    global _shared, _shared_refs
    with _shared_lock:
        if server is not _shared:
            return
        _shared_refs -= 1
        if _shared_refs <= 0:
            _shared.close()
            _shared = None
            _shared_refs = 0
