"""Closes started by the garbage collector, kept out of this package's locked sections.

An environment dropped without ``close()`` is closed by a ``weakref.finalize`` (``_backend.attach_finalizer``), and a
finalizer runs wherever the garbage collector runs: at any allocation, in any thread, including an allocation made
inside this package while it holds a lock that the close itself needs. The pipe transport's read and write locks and
the shared server's lock are plain locks: a close started there waited forever on a lock its own thread held (a test
run hung in ``PipeConnection._take``, called from another env's ``reset``, with a collected env's close waiting on the
pipe's lock below it on the same stack).

So those sections are entered with :func:`enter` and left with :func:`leave` (per thread, nested), and a finalizer's
close goes through :func:`close_or_defer`: outside every section it runs at once, as before; inside one it is queued,
and the thread that leaves its outermost section runs the queue (its own locks released, the pipe's stream whole).
"""

from __future__ import annotations

import collections
import threading
import warnings
from collections.abc import Callable


class _Depth(threading.local):
    n = 0
    """How deep the current thread is in this package's locked sections."""


_depth = _Depth()
_queued: collections.deque[Callable[[], None]] = collections.deque()
"""Closes started inside a section, oldest first (``deque.append`` and ``popleft`` are atomic: safe from a finalizer
that interrupts either, and from several threads)."""


def enter() -> None:
    """Entering a section that holds a lock a close may need (pair with :func:`leave` in a ``finally``)."""
    _depth.n += 1


def leave() -> None:
    """Leaving a section; the outermost one runs the closes queued meanwhile (by any thread)."""
    d = _depth
    d.n -= 1
    if d.n == 0 and _queued:
        run_queued()


def in_section() -> bool:
    """Whether the current thread is inside a section."""
    return _depth.n > 0


def close_or_defer(close: Callable[[], None]) -> None:
    """Run ``close`` now, or, inside a section, once the thread leaves its outermost one."""
    if _depth.n > 0:
        _queued.append(close)
    else:
        close()


def run_queued() -> None:
    """Run the queued closes (each once, whichever thread takes it). A close that fails is reported as a warning, as a
    finalizer's exception is, and the others still run."""
    while True:
        try:
            close = _queued.popleft()
        except IndexError:
            return
        try:
            close()
        except Exception as e:  # noqa: BLE001 - a finalizer's failure must not fail the call that ran it
            warnings.warn(f"ycgym: closing a garbage-collected environment failed: {e!r}", RuntimeWarning, stacklevel=2)
