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

Interrupts (Ctrl-C, a signal handler that raises) may come at any bytecode, so the byte streams' state changes only
in single C-level operations: a read appends its bytes to the buffer inside one C call chain (no bytecode runs
between ``os.read`` returning and the bytes being stored), a message leaves the buffer in one ``del`` when its socket
takes it (messages wait in the buffer, not in per-socket queues), and requests go through a ``BufferedWriter`` that
keeps what an interrupted write did not send and sends it first next time. An interrupted call loses at most its
own reply (which the client then treats as abandoned), never the framing of the stream.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import operator
import os
import secrets
import select
import struct
import threading
import time

import zmq

from . import _sections
from ._protocol import DEFAULT_MAX_MESSAGE_BYTES, MAX_PIPE_FRAMES
from ._spin import resolve_spin_us, spin
from .client import ServerExitedError

__all__ = ["PipeConnection", "PipeSocket", "PipeClosedError", "PipeWriteTimeout", "connection_for", "register", "unregister_connection"]

_U32 = struct.Struct("<I")
_READ_BYTES = 1 << 16
MAX_FRAMES = MAX_PIPE_FRAMES
"""Most frames in one message (the server's ``MAX_PIPE_FRAMES``)."""
_WAIT_S = 0.05
"""Longest wait of a thread for another thread's read before it looks again."""
_WRITE_BUFFER = DEFAULT_MAX_MESSAGE_BYTES + (1 << 20)
"""The request writer's buffer: a request up to this size (the server's default ``max_message_bytes`` is 8 MiB) is
copied into it whole before any byte is written, so an interrupt never leaves part of a request behind unrecorded
(only touched pages of it become resident)."""


class PipeClosedError(ServerExitedError):
    """The server's end of the pipe is closed: it has exited (or ended the stream)."""


class PipeWriteTimeout(TimeoutError):
    """A message was not all taken by the server within the send timeout (it stays queued, see ``write``)."""


class PipeConnection:
    """The two pipes to one server child process, shared by every :class:`PipeSocket` of this process."""

    def __init__(self, read_fd: int, write_fd: int, spin_us: int | None = None) -> None:
        self.spin_s = resolve_spin_us(spin_us) / 1e6
        """How long a read polls before it sleeps (seconds; ``ycgym._spin``)."""
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.pid = os.getpid()
        # poll, not select: select cannot wait on a descriptor above FD_SETSIZE (1024), which a process with many
        # open files gets.
        self._poller = select.poll()
        self._poller.register(read_fd, select.POLLIN)
        self._ready = functools.partial(self._poller.poll, 0)  # the pipe has bytes (or its end): a non-empty list
        # Entered as `with self._lock` (a C lock: no bytecode between acquiring it and the block's cleanup being in
        # place), not through the Condition, whose Python-level __enter__ an interrupt can leave with the lock held.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._reading = False  # a thread is reading the pipe (the others wait on _cond)
        self._write_lock = threading.Lock()
        # Bytes read and not yet taken: whole messages for any socket, then the start of the next one.
        self._buf = bytearray()
        # Bytes ever removed from _buf (under _lock): len(_buf) + _taken grows only by what reads append, so a read
        # that appended nothing (end of file) is told apart from one whose bytes another thread's take offset.
        self._taken = 0
        # One read, appended to _buf inside C (see the module's docstring): yields nothing at end of file.
        self._read_chunk = functools.partial(os.read, read_fd, _READ_BYTES)
        # Non-blocking: a write that the server does not take waits in poll, up to the sender's timeout (a blocking
        # write of more than the pipe holds would wait for as long as the server does not read).
        os.set_blocking(write_fd, False)
        self._wpoller = select.poll()
        self._wpoller.register(write_fd, select.POLLOUT)
        self._writer = self._new_writer(_WRITE_BUFFER)
        self._writer_size = _WRITE_BUFFER
        self._open: set[bytes] = set()  # routing ids of open sockets (replies to others are dropped)
        self.closed = False
        self.eof = False

    def open_socket(self) -> PipeSocket:
        if os.getpid() != self.pid:
            raise RuntimeError("ycgym: a pipe endpoint belongs to the process that started its server (this is a forked copy)")
        rid = b"p" + secrets.token_hex(16).encode("ascii")
        self._open.add(rid)
        return PipeSocket(self, rid)

    def _forget(self, rid: bytes) -> None:
        self._open.discard(rid)

    def write(self, frames: list[bytes], timeout_s: float | None = None) -> None:
        """Send one message; raises :class:`PipeWriteTimeout` if the server has not taken all of it within
        ``timeout_s`` (None waits as long as it takes). The message is then queued whole all the same: what was not
        written goes out before the next message, so the stream's framing stays whole."""
        parts = [_U32.pack(len(frames))]
        for f in frames:
            parts.append(_U32.pack(len(f)))
            parts.append(f)
        data = b"".join(parts)
        _sections.enter()  # a garbage-collected env's close waits until the write lock is released (``_sections``)
        try:
            self._write_locked(data, timeout_s)
        finally:
            _sections.leave()

    def _write_locked(self, data: bytes, timeout_s: float | None) -> None:
        with self._write_lock:
            if self.closed:
                raise PipeClosedError("the pipe to the server is closed")
            try:
                # What an earlier write left queued goes out first; then the writer's buffer is empty and takes the
                # message whole (one copy in C: an interrupt queues all of it or none), and it is sent. The writer's
                # position moves with every partial write, so an interrupt or a timeout loses no byte and sends none
                # twice. The deadline is computed only once the pipe is full (a write the server takes at once
                # costs no clock read).
                deadline = None
                try:
                    self._writer.flush()
                except BlockingIOError:
                    deadline = self._drain(timeout_s, None)
                if len(data) > _WRITE_BUFFER or self._writer_size != _WRITE_BUFFER:
                    # A message above the buffer (a client's max_message_bytes above its default) gets a writer of
                    # its size, the next one the usual writer again; the one replaced is empty (drained).
                    size = max(_WRITE_BUFFER, len(data))
                    self._writer = self._new_writer(size)
                    self._writer_size = size
                self._writer.write(data)
                try:
                    self._writer.flush()
                except BlockingIOError:
                    self._drain(timeout_s, deadline)
            except PipeWriteTimeout:
                raise
            except OSError as e:  # BrokenPipeError: the server has exited
                raise PipeClosedError(f"the server closed its pipe ({e})") from None

    def _new_writer(self, size: int) -> io.BufferedWriter:
        # Each writer on a raw file of its own that does not own the descriptor: a writer replaced (and collected)
        # closes its raw file, not the pipe.
        return io.BufferedWriter(io.FileIO(self.write_fd, "wb", closefd=False), size)

    def _drain(self, timeout_s: float | None, deadline: float | None) -> float | None:
        """Write out the writer's buffer, waiting for room in the pipe up to ``timeout_s`` from the first wait (or until
        ``deadline``, monotonic, when one is given; None and None: no end). Returns the deadline it waited by, if any."""
        while True:
            try:
                self._writer.flush()
                return deadline
            except BlockingIOError:
                pass  # the pipe is full: the rest stays in the writer's buffer
            if deadline is None and timeout_s is not None:
                deadline = time.monotonic() + timeout_s
            if deadline is None:
                self._wpoller.poll()
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PipeWriteTimeout()
                self._wpoller.poll(max(1, math.ceil(left * 1000)))

    def pump(self, rid: bytes, timeout_s: float | None) -> list[bytes] | None:
        """The next message for ``rid``: taken from the buffer, else read from the pipe (other sockets' messages
        stay in the buffer for them) until one comes or ``timeout_s`` runs out (None).

        One thread reads at a time; the others wait on a condition that the reader signals after each read that
        brought no message of its own (and when it stops, when one of them becomes the reader).
        """
        if rid not in self._open:
            raise RuntimeError("the pipe socket is closed")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        reader = False
        _sections.enter()  # a garbage-collected env's close waits until the pipe's locks are released (``_sections``)
        try:
            with self._lock:
                while True:
                    got = self._take(rid)
                    if got is not None:
                        return got
                    if self.eof:
                        raise PipeClosedError("the server closed its pipe")
                    if not self._reading:
                        self._reading = reader = True  # one step: no interrupt between the two
                        break
                    wait = _WAIT_S if deadline is None else min(_WAIT_S, deadline - time.monotonic())
                    if wait <= 0:
                        return None
                    # Bounded: a notify that an interrupt cut short costs a waiter at most this long.
                    self._cond.wait(wait)
            while True:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if self._read_once(remaining):
                    with self._lock:
                        got = self._take(rid)
                        if got is not None:
                            return got
                        self._cond.notify_all()  # maybe replies for other sockets came
                elif deadline is not None and time.monotonic() >= deadline:
                    return None
        finally:
            if reader:
                with self._lock:
                    self._reading = False
                    self._cond.notify_all()
            _sections.leave()

    def _read_once(self, timeout_s: float | None) -> bool:
        """Append what the pipe has to the buffer (waiting up to ``timeout_s``); False if nothing came."""
        if self.spin_s > 0:
            budget = self.spin_s if timeout_s is None else min(self.spin_s, timeout_s)
            if self._spin(budget):
                timeout_s = None  # the pipe has bytes (or its end): the read below returns at once
            elif timeout_s is not None:
                timeout_s = max(0.0, timeout_s - budget)
        if timeout_s is not None and not self._poller.poll(max(0, math.ceil(timeout_s * 1000))):
            return False
        with self._lock:
            before = len(self._buf) + self._taken
        # os.read's bytes reach the buffer without a bytecode in between (where a signal handler could raise and
        # drop them): reduce, islice, iter and iadd are all C.
        functools.reduce(operator.iadd, itertools.islice(iter(self._read_chunk, b""), 1), self._buf)
        with self._lock:
            # Not len(_buf) alone: other threads take their replies from the buffer meanwhile (under the lock).
            if len(self._buf) + self._taken == before:
                self.eof = True
                raise PipeClosedError("the server closed its pipe")
        return True

    def _spin(self, budget_s: float) -> bool:
        """Poll the reply pipe without sleeping for up to ``budget_s`` (``_spin.spin``); whether it has bytes. (Reads
        nothing: the state of the streams does not change here.)"""
        return spin(self._ready, budget_s)

    def _take(self, rid: bytes) -> list[bytes] | None:
        """The first whole message for ``rid`` in the buffer, removed from it (messages of closed sockets on the
        way are dropped); None if none is there yet. Called with ``_lock`` held."""
        data = self._buf
        at = 0
        n = len(data)
        while n - at >= 4:
            (k,) = _U32.unpack_from(data, at)
            if k < 1 or k > MAX_FRAMES:
                self.eof = True
                raise PipeClosedError(f"malformed reply from the server ({k} frames)")
            # The frames' spans first: a message still arriving (a large reply takes several reads) is not copied.
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
                # Read through a view of the buffer: each frame copied once, straight into its bytes (a slice of the
                # bytearray would be a copy of its own first). The view is released before the buffer changes size
                # (a bytearray with a live view cannot), on an interrupt as well (the with's exit).
                with memoryview(data) as view:
                    owner = view[spans[0][0] : spans[0][1]].tobytes()
                    frames = [view[a:b].tobytes() for a, b in spans[1:]] if owner == rid else None
                if frames is not None:
                    self._taken += p - at
                    del data[at:p]  # the one change: the message is taken
                    return frames
                if owner not in self._open:  # the reply of a closed socket
                    self._taken += p - at
                    del data[at:p]
                    n = len(data)
                    continue
                at = p  # another open socket's: it takes it
                continue
            break
        return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        # The writer's raw file closed first (it does not own the descriptor): a writer whose raw file is closed
        # neither flushes nor writes again, so bytes an interrupted call left in it never reach a reused descriptor
        # (nor, in a forked child, the parent's pipe).
        self._writer.raw.close()
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
        self._sndtimeo = -1

    def setsockopt(self, opt: int, value: int) -> None:
        if opt == zmq.RCVTIMEO:
            self._rcvtimeo = int(value)
        elif opt == zmq.SNDTIMEO:
            self._sndtimeo = int(value)

    def send(self, payload: bytes, flags: int = 0, copy: bool = True) -> None:
        self._conn.write([self._rid, payload], None if self._sndtimeo < 0 else self._sndtimeo / 1000)

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
    _sections.enter()
    try:
        with _registry_lock:
            _registry[endpoint] = conn
    finally:
        _sections.leave()
    return endpoint


def unregister_connection(conn: PipeConnection) -> None:
    """Remove ``conn`` from the registry (its server is being stopped)."""
    _sections.enter()
    try:
        with _registry_lock:
            for k in [k for k, v in _registry.items() if v is conn]:
                del _registry[k]
    finally:
        _sections.leave()


def connection_for(endpoint: str) -> PipeConnection:
    """The connection behind a ``pipe://`` endpoint of this process; a clear error otherwise."""
    _sections.enter()
    try:
        with _registry_lock:
            conn = _registry.get(endpoint)
    finally:
        _sections.leave()
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
