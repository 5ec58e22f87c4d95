"""Connection plumbing shared by the single and vector environments."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ._version import PROTOCOL_VERSION
from .client import Client, ProtocolError
from .server import LocalServer, release_shared_server, shared_server
from .spaces import SpaceParams, micros_to_time, parse_time

_params_lock = threading.Lock()
_params_cache: dict[tuple[str, str], SpaceParams] = {}


class Backend:
    """A client connection plus (when no endpoint was given) a reference to the shared local server."""

    def __init__(
        self,
        endpoint: str | None,
        *,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
        timeout: float | None = 30.0,
    ) -> None:
        self.server: LocalServer | None = None
        if endpoint is None:
            self.server = shared_server()
            endpoint = self.server.endpoint
        try:
            self.client = Client(
                endpoint,
                timeout=timeout,
                server_public_key=server_public_key,
                public_key=public_key,
                secret_key=secret_key,
            )
        except BaseException:
            if self.server is not None:
                release_shared_server(self.server)
                self.server = None
            raise
        self.endpoint = endpoint
        self.sessions: set[str] = set()
        self.closed = False

    def close(self) -> None:
        """Close the sessions this backend opened, the socket, and release the server. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            server_gone = self.server is not None and not self.server.running
            if self.sessions and not self.client.closed and not server_gone:
                ids = [self.client.send("close", session=s) for s in sorted(self.sessions)]
                try:
                    self.client.gather(ids, timeout=2.0, raise_errors=False)
                except (TimeoutError, ProtocolError):  # server gone or busy: idle timeout frees them
                    pass
        finally:
            self.sessions.clear()
            self.client.close()
            if self.server is not None:
                release_shared_server(self.server)
                self.server = None


def attach_finalizer(owner: object, backend: Backend) -> weakref.finalize[[], Any]:
    """Close ``backend`` when ``owner`` is garbage-collected or at interpreter exit."""
    return weakref.finalize(owner, backend.close)


def open_backend(
    owner: object,
    endpoint: str | None,
    preset: str,
    *,
    server_public_key: str | bytes | None,
    public_key: str | bytes | None,
    secret_key: str | bytes | None,
    timeout: float | None,
) -> tuple[Backend, weakref.finalize[[], Any], SpaceParams]:
    """Connect (or start the shared local server), tie its release to ``owner``, and fetch the preset's space facts."""
    backend = Backend(endpoint, server_public_key=server_public_key, public_key=public_key, secret_key=secret_key, timeout=timeout)
    finalizer = attach_finalizer(owner, backend)
    try:
        params = space_params(backend, preset)
    except BaseException:
        finalizer()
        raise
    return backend, finalizer, params


def space_params(backend: Backend, preset: str) -> SpaceParams:
    """The observation-space parameters of ``preset`` on this server (probed once per endpoint)."""
    key = (backend.endpoint, preset)
    with _params_lock:
        got = _params_cache.get(key)
    if got is not None:
        return got
    c = backend.client
    hello = c.hello()
    proto = hello.get("protocol")
    if proto != PROTOCOL_VERSION:
        raise ProtocolError("unsupported_version", f"server speaks protocol {proto!r}, this client speaks {PROTOCOL_VERSION}")
    described = _from_hello(hello, preset)
    if described is None:
        # Probe: one throwaway episode gives the client names (and the snapshot the preset's bounds).
        r = c.reset(0, preset)
        try:
            config: Mapping[str, Any] | None = None
            try:
                snap = c.snapshot(r["session"])
                sim = snap.get("sim") if isinstance(snap, dict) else None
                config = sim.get("config") if isinstance(sim, dict) else None
            except ProtocolError:
                config = None
            described = SpaceParams.from_status(r["observation"]["status"], config)
        finally:
            try:
                c.close(r["session"])
            except ProtocolError:
                pass
    with _params_lock:
        _params_cache[key] = described
    return described


def _from_hello(hello: Mapping[str, Any], preset: str) -> SpaceParams | None:
    """Use the server's own description of a preset's spaces when it gives one."""
    spaces = hello.get("spaces")
    if not isinstance(spaces, Mapping):
        return None
    per = spaces.get("presets")
    desc = per.get(preset) if isinstance(per, Mapping) else None
    if not isinstance(desc, Mapping):
        return None
    clients = desc.get("clients")
    if not isinstance(clients, list) or not all(isinstance(x, str) for x in clients):
        return None
    kw: dict[str, Any] = {"clients": tuple(sorted(clients))}
    for k in ("prestige_max", "trust_max"):
        v = desc.get(k)
        if isinstance(v, (int, float)):
            kw[k] = float(v)
    return SpaceParams(**kw)


def snapshot_start(snapshot: Mapping[str, Any], fallback: datetime) -> datetime:
    """The episode's start time recorded in an env snapshot (``sim.state.startTime``, µs since epoch)."""
    try:
        us = snapshot["sim"]["state"]["startTime"]
        return micros_to_time(int(us))
    except (KeyError, TypeError, ValueError):
        return fallback


def status_time(obs: Mapping[str, Any]) -> datetime:
    return parse_time(obs["status"]["sim_time"])
