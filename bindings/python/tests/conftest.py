"""Shared fixtures: one real ycgym server (``LocalServer``) for the whole test session.

The server is the TypeScript build: ``make test-py`` runs ``npm run build`` and sets
``YCGYM_NODE_ENTRY=dist/src/cli/main.js``; without the variable the package finds ``dist/`` of the
checkout it lives in.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from ycgym import server as server_mod

# Hypothesis keeps caches in ./.hypothesis by default: keep the working tree clean.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "ycgym-hypothesis")
# No per-example deadline: examples talk to a real server, and on a loaded 2-core CI machine one of them can take
# longer than hypothesis's default 200 ms without anything being wrong (a DeadlineExceeded there is a flake, not a bug).
settings.register_profile("ycgym", database=None, deadline=None)
settings.load_profile("ycgym")


@pytest.fixture(scope="session", autouse=True)
def shared() -> Iterator[server_mod.LocalServer]:
    """Hold a reference to the per-process shared server so every env in the run reuses it."""
    srv = server_mod.shared_server()
    try:
        yield srv
    finally:
        server_mod.release_shared_server(srv)


@pytest.fixture(scope="session")
def tcp_server() -> Iterator[server_mod.LocalServer]:
    """A server on a loopback ZeroMQ endpoint: the shared one (envs with ``endpoint=None``) talks to this process
    over pipes on POSIX, and tests also hand their endpoint to other processes (CLIs, Ray workers)."""
    with server_mod.LocalServer("tcp://127.0.0.1:0") as srv:
        yield srv


@pytest.fixture(scope="session")
def endpoint(tcp_server: server_mod.LocalServer) -> str:
    return tcp_server.endpoint
