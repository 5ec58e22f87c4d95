"""The pipe transport's client side: a local server child process reached over two pipes instead of ZeroMQ.

A :class:`ycgym.LocalServer` started with ``endpoint="pipe"`` (the default of the environments' own local server on
POSIX) passes the child a request pipe and a reply pipe (``ycgym serve --pipe-fds IN,OUT``). A lockstep round trip
then costs a few system calls on each side and no I/O threads (``bench_step.py``: ``pipe_echo_rtt_per_s`` against
``echo_rtt_per_s``). The server is reachable only from the process that started it: its endpoint is
``pipe://PID/N``, which :class:`ycgym.Client` resolves in this process's registry.

Framing (both directions, ``docs/protocol.md``): a little-endian u32 frame count, then each frame as a little-endian
u32 length and its bytes. The frames are a ZeroMQ ROUTER's: ``[routing id, payload]`` out, ``[routing id, body,
...arrays]`` back. Every :class:`PipeSocket` (one per client) has its own random routing id, as a ZeroMQ ``DEALER``
of :class:`ycgym.Client` does, so sessions belong to their client as over ZeroMQ; replies are dispatched to the
socket whose id they carry.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import secrets
import select
import struct
import threading
import time

import zmq

from .client import ServerExitedError

__all__ = ["PipeConnection", "PipeSocket", "PipeClosedError", "connection_for", "register", "unregister_connection"]

_U32 = struct.Struct("<I")
_READ_BYTES = 1 << 16
MAX_FRAMES = 128
"""Most frames in one message (the server's ``MAX_PIPE_FRAMES``)."""


class PipeClosedError(ServerExitedError):
    """The server's end of the pipe is closed: it has exited (or ended the stream)."""


class PipeConnection:
    """The two pipes to one server child process, shared by every :class:`PipeSocket` of this process."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.pid = os.getpid()
        # poll, not select: select cannot wait on a descriptor above FD_SETSIZE (1024), which a process with many
        # open files gets.
        self._poller = select.poll()
        self._poller.register(read_fd, select.POLLIN)
        self._cond = threading.Condition(threading.Lock())
        self._reading = False  # a thread is reading the pipe (the others wait on _cond)
        self._write_lock = threading.Lock()
        self._buf = bytearray()
        self._inbox: dict[bytes, collections.deque[list[bytes]]] = {}
        self.closed = False
        self.eof = False

    def open_socket(self) -> PipeSocket:
        if os.getpid() != self.pid:
            raise RuntimeError("ycgym: a pipe endpoint belongs to the process that started its server (this is a forked copy)")
        rid = b"p" + secrets.token_hex(16).encode("ascii")
        self._inbox[rid] = collections.deque()
        return PipeSocket(self, rid)

    def _forget(self, rid: bytes) -> None:
        self._inbox.pop(rid, None)

    def write(self, frames: list[bytes]) -> None:
        parts = [_U32.pack(len(frames))]
        for f in frames:
            parts.append(_U32.pack(len(f)))
            parts.append(f)
        data = memoryview(b"".join(parts))
        with self._write_lock:
            if self.closed:
                raise PipeClosedError("the pipe to the server is closed")
            try:
                while data:
                    n = os.write(self.write_fd, data)
                    data = data[n:]
            except OSError as e:  # BrokenPipeError: the server has exited
                raise PipeClosedError(f"the server closed its pipe ({e})") from None

    def pump(self, rid: bytes, timeout_s: float | None) -> list[bytes] | None:
        """The next message for ``rid``: from its inbox, else read from the pipe (dispatching other sockets'
        messages to their inboxes) until one comes or ``timeout_s`` runs out (None).

        One thread reads at a time; the others wait on a condition that the reader signals whenever it has
        dispatched messages, and one of them becomes the reader when it stops.
        """
        box = self._inbox.get(rid)
        if box is None:
            raise RuntimeError("the pipe socket is closed")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while True:
                if box:
                    return box.popleft()
                if self.eof:
                    raise PipeClosedError("the server closed its pipe")
                if not self._reading:
                    self._reading = True
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
        try:
            while True:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if self._read_once(remaining):
                    if box:
                        return box.popleft()
                    with self._cond:  # replies for other sockets came
                        self._cond.notify_all()
                elif deadline is not None and time.monotonic() >= deadline:
                    return None
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()

    def _read_once(self, timeout_s: float | None) -> bool:
        """Read what the pipe has (waiting up to ``timeout_s``) and dispatch every whole message; False if nothing came."""
        if timeout_s is not None and not self._poller.poll(max(0, math.ceil(timeout_s * 1000))):
            return False
        chunk = os.read(self.read_fd, _READ_BYTES)
        if not chunk:
            self.eof = True
            raise PipeClosedError("the server closed its pipe")
        buf = self._buf
        if buf:
            buf += chunk
            data: bytes | bytearray = buf
        else:
            data = chunk
        at = 0
        n = len(data)
        while n - at >= 4:
            (k,) = _U32.unpack_from(data, at)
            if k < 1 or k > MAX_FRAMES:
                self.eof = True
                raise PipeClosedError(f"malformed reply from the server ({k} frames)")
            # The frames' spans first: a message still arriving (a large reply takes several reads) is not copied
            # again on every read, only once whole.
            p = at + 4
            spans: list[tuple[int, int]] = []
            for _ in range(k):
                if n - p < 4:
                    break
                (m,) = _U32.unpack_from(data, p)
                p += 4
                if n - p < m:
                    break
                spans.append((p, p + m))
                p += m
            else:
                at = p
                box = self._inbox.get(bytes(data[spans[0][0] : spans[0][1]]))
                if box is not None:  # else: the reply of a closed socket
                    box.append([bytes(data[a:b]) for a, b in spans[1:]])
                continue
            break
        if data is buf:
            del buf[:at]
        elif at < n:
            self._buf = bytearray(data[at:])
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for fd in (self.write_fd, self.read_fd):
            try:
                os.close(fd)
            except OSError:
                pass


class PipeSocket:
    """What :class:`ycgym.Client` uses of a ZeroMQ ``DEALER`` socket, over a :class:`PipeConnection`."""

    def __init__(self, conn: PipeConnection, rid: bytes) -> None:
        self._conn = conn
        self._rid = rid
        self._rcvtimeo = -1

    def setsockopt(self, opt: int, value: int) -> None:
        if opt == zmq.RCVTIMEO:
            self._rcvtimeo = int(value)

    def send(self, payload: bytes, flags: int = 0, copy: bool = True) -> None:
        self._conn.write([self._rid, payload])

    def recv_multipart(self) -> list[bytes]:
        got = self._conn.pump(self._rid, None if self._rcvtimeo < 0 else self._rcvtimeo / 1000)
        if got is None:
            raise zmq.Again()
        return got

    def close(self, linger: int | None = None) -> None:
        self._conn._forget(self._rid)


_registry: dict[str, PipeConnection] = {}
_counter = itertools.count(1)
_registry_lock = threading.Lock()


def register(conn: PipeConnection) -> str:
    """Name ``conn`` in this process's registry; returns its endpoint (``pipe://PID/N``)."""
    endpoint = f"pipe://{os.getpid()}/{next(_counter)}"
    with _registry_lock:
        _registry[endpoint] = conn
    return endpoint


def unregister_connection(conn: PipeConnection) -> None:
    """Remove ``conn`` from the registry (its server is being stopped)."""
    with _registry_lock:
        for k in [k for k, v in _registry.items() if v is conn]:
            del _registry[k]


def connection_for(endpoint: str) -> PipeConnection:
    """The connection behind a ``pipe://`` endpoint of this process; a clear error otherwise."""
    with _registry_lock:
        conn = _registry.get(endpoint)
    if conn is None or conn.closed or conn.pid != os.getpid():
        raise ValueError(
            f"ycgym: {endpoint!r} is a pipe to a local server of another process (or one that was stopped): a pipe endpoint "
            "works only in the process that started its LocalServer. Start the server with LocalServer(endpoint='tcp://127.0.0.1:0') "
            "to share it between processes."
        )
    return conn


def _after_fork_in_child() -> None:
    # The parent's pipes are not ours (reading them would steal its replies): forget them and close our copies of
    # their descriptors, so that the server's end-of-input stays tied to the parent alone.
    global _registry_lock
    _registry_lock = threading.Lock()  # another thread may have held it at the fork
    conns = list(_registry.values())
    _registry.clear()
    for c in conns:
        c.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
