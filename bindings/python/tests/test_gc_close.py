"""An environment dropped without ``close()`` is closed by the garbage collector, wherever the collector runs.

A collection runs at any allocation, also inside this package while it holds the pipe transport's read or write lock
or the shared server's lock; the dropped env's close needs those locks. Run there at once, it waited forever on a lock
its own thread held: the Python suite hung in ``PipeConnection._take`` under another env's ``reset``. Now such a
close waits until the section is left (``ycgym._sections``) and runs before the call returns.

Each case runs in a child process (a deadlock there fails the test by its timeout instead of hanging the suite): an
env is dropped while reachable only through a reference cycle (so only the collector frees it, with automatic
collection off), and a collection is forced at one point inside a locked section of another env's call.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the pipe transport (the envs' default local server) needs POSIX")

PROLOGUE = textwrap.dedent(
    """
    import gc, sys
    import ycgym
    from ycgym import YCBenchEnv, YCBenchDiscreteEnv, _pipe, _sections
    from ycgym import server as server_mod

    gc.disable()  # only the collections this script forces
    fired = []

    def collect_once():
        if not fired:
            fired.append(True)
            gc.collect()

    def dropped(kind):
        env = kind()
        env.reset(seed=1)
        backend = env._backend
        env.cycle = env  # freed by the collector only
        del env
        return backend

    keep = YCBenchEnv()  # holds the shared server (its pipe) for the whole script
    keep.reset(seed=2)
    """
)

CASES = {
    # A read of the pipe: the collection inside _take, with the pipe's lock held (the hang the suite hit).
    "read": """
        backend = dropped(YCBenchDiscreteEnv)
        take = _pipe.PipeConnection._take
        def taking(self, rid):
            collect_once()
            return take(self, rid)
        _pipe.PipeConnection._take = taking
        keep.step("company status")
    """,
    # A write to the pipe: the collection inside the writer, with the write lock held.
    "write": """
        backend = dropped(YCBenchEnv)
        conn = keep._backend.client._sock._conn
        class Writer:
            def __init__(self, inner):
                self.inner = inner
            def write(self, data):
                collect_once()
                return self.inner.write(data)
            def __getattr__(self, name):
                return getattr(self.inner, name)
        conn._writer = Writer(conn._writer)
        keep.step("company status")
    """,
    # The shared server's lock: the collection while a new env acquires the shared server.
    "shared": """
        backend = dropped(YCBenchEnv)
        running = server_mod.LocalServer.running
        def checking(self):
            if server_mod._shared_lock.locked():
                collect_once()
            return running.fget(self)
        server_mod.LocalServer.running = property(checking)
        other = YCBenchEnv()
        other.reset(seed=3)
        other.close()
    """,
}

EPILOGUE = textwrap.dedent(
    """
    assert fired, "the forced collection did not happen"
    assert backend.closed and not backend.sessions, "the dropped env was not closed"
    assert not _sections.in_section() and not _sections._queued
    keep.step("company status")
    keep.close()
    print("ok")
    """
)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_collection_inside_a_locked_section_closes_the_dropped_env_once_it_is_left(case: str) -> None:
    code = PROLOGUE + textwrap.dedent(CASES[case]) + EPILOGUE
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: the call with a collection inside it never returned (a close waiting on a lock its thread holds)")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"


def test_outside_a_section_a_close_runs_at_once() -> None:
    from ycgym import _sections

    ran: list[int] = []
    _sections.close_or_defer(lambda: ran.append(1))
    assert ran == [1]
    _sections.enter()
    try:
        _sections.enter()
        try:
            _sections.close_or_defer(lambda: ran.append(2))
        finally:
            _sections.leave()
        assert ran == [1]  # still inside the outer section
    finally:
        _sections.leave()
    assert ran == [1, 2]


def test_a_failing_deferred_close_warns_and_the_next_still_runs() -> None:
    from ycgym import _sections

    ran: list[int] = []

    def fail() -> None:
        raise OSError("gone")

    _sections.enter()
    try:
        _sections.close_or_defer(fail)
        _sections.close_or_defer(lambda: ran.append(1))
    finally:
        with pytest.warns(RuntimeWarning, match="gone"):
            _sections.leave()
    assert ran == [1]
