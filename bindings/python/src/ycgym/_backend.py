"""Connection plumbing shared by the single and vector environments."""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, cast

import gymnasium as gym
import numpy as np

from . import _sections
from ._replies import MALFORMED, UNREAD, failed_reset_why, malformed_result, named_session, stopped_step_why
from ._version import PROTOCOL_VERSION
from .client import Client, ProtocolError, ResetResult, StepResult, check_timeout, snapshot_of
from .server import LocalServer, release_shared_server, shared_server
from .spaces import SpaceParams, micros_to_time, parse_time
from .splits import server_splits, split_seed

_params_lock = threading.Lock()
_params_cache: dict[tuple[str, str], SpaceParams] = {}


class ServerSource(Protocol):
    """Where a :class:`Backend` on a local server gets that server (:meth:`acquire`: a running one, started when there
    is none) and gives it back (:meth:`release`, once per acquire)."""

    def acquire(self) -> LocalServer: ...

    def release(self, server: LocalServer) -> None: ...


class _SharedServer:
    """This process's shared local server (:func:`ycgym.server.shared_server`): what a backend with no endpoint uses."""

    def acquire(self) -> LocalServer:
        return shared_server()

    def release(self, server: LocalServer) -> None:
        release_shared_server(server)


class Backend:
    """A client connection plus (when no endpoint was given) a reference to the shared local server (or, after
    :meth:`serve_from`, to a local server of another :class:`ServerSource`).

    With the local server, a server that has exited is noticed at once (requests raise
    :class:`ServerExitedError`) and :meth:`ensure_server` starts a new one.
    """

    def __init__(
        self,
        endpoint: str | None,
        *,
        server_public_key: str | bytes | None = None,
        public_key: str | bytes | None = None,
        secret_key: str | bytes | None = None,
        timeout: float | None = 30.0,
    ) -> None:
        self._client_args: dict[str, Any] = {
            "timeout": timeout,
            "server_public_key": server_public_key,
            "public_key": public_key,
            "secret_key": secret_key,
        }
        self.pid = os.getpid()
        self.server: LocalServer | None = None
        self._source: ServerSource = _SharedServer()
        self.sessions: set[str] = set()
        self.closed = False
        self.endpoint, self.client = self._connect(endpoint)

    def _connect(self, endpoint: str | None) -> tuple[str, Client]:
        if endpoint is not None:
            return endpoint, Client(endpoint, **self._client_args)
        server = self._source.acquire()
        try:
            client = Client(server.endpoint, liveness=server.exit_message, **self._client_args)
        except BaseException:
            self._source.release(server)
            raise
        self.server = server
        return server.endpoint, client

    def serve_from(self, source: ServerSource) -> None:
        """Take the server ``source`` gives, at this backend's endpoint, as its local server: its exit is noticed at
        once (requests raise :class:`ServerExitedError`), :meth:`ensure_server` gets a new one from ``source`` and
        :meth:`close` gives it back there. ValueError when that server is not at this endpoint."""
        server = source.acquire()
        if server.endpoint != self.endpoint or self.server is not None:
            source.release(server)
            raise ValueError(f"serve_from: the server of {source!r} is at {server.endpoint}, this backend's endpoint is {self.endpoint}")
        self.server, self._source = server, source
        self.client.liveness = server.exit_message  # the client watches it as it watches a local server it was made for

    def ensure_server(self) -> bool:
        """If this backend's local server has exited, start (or join) a new one (the shared one, or its
        :meth:`serve_from` source's) and reconnect.

        Returns ``True`` when it did: every session of this backend is gone. When the new server cannot be had
        (:class:`ycgym.ServerStartError`, ...), that is raised and the backend stays as it was, on the dead server: the
        next call tries again.
        """
        if self.server is None or self.server.running or self.closed:
            return False
        old, old_client = self.server, self.client
        self.endpoint, self.client = self._connect(None)  # sets self.server once it has a client
        self.sessions.clear()
        old_client.close()
        self._source.release(old)
        return True

    def reset_session(self, session: str | None, seed: int, preset: str, options: Mapping[str, Any] | None) -> ResetResult:
        """``reset`` in ``session`` (None: a new session), or in a new one when the server reaped it (idle timeout) or
        the local server restarted; a new session is recorded as this backend's."""
        if self.ensure_server():  # the local server had exited: a new one, no session yet
            session = None
        if session is not None:
            try:
                return self.client.reset(seed, preset, session=session, options=options)
            except ProtocolError as e:
                if e.code != "unknown_session":
                    raise
                self.sessions.discard(session)
        r = self.client.reset(seed, preset, options=options)
        sid = named_session(r)  # a malformed result's too (the env checks the rest)
        if sid is not None:
            self.sessions.add(sid)
        return r

    def close(self) -> None:
        """Close the sessions this backend opened, the socket, and release the server. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self.pid:  # a forked copy: the socket and the server belong to the parent
            return
        try:
            server_gone = self.server is not None and not self.server.running
            if self.sessions and not self.client.closed and not server_gone:
                try:
                    self.client.request_all("close", [{"session": s} for s in sorted(self.sessions)], timeout=2.0, raise_errors=False)
                except (TimeoutError, ConnectionError, ProtocolError):  # server gone or busy: idle timeout frees them
                    pass
        finally:
            self.sessions.clear()
            self.client.close()
            if self.server is not None:
                self._source.release(self.server)
                self.server = None


def attach_finalizer(owner: object, backend: Backend) -> weakref.finalize[[], Any]:
    """Close ``backend`` when ``owner`` is garbage-collected or at interpreter exit. A collection that happens inside
    one of this package's locked sections (a read of the pipe, ...) queues the close until the section is left
    (``_sections``): run there, it would wait on a lock its own thread holds."""
    return weakref.finalize(owner, functools.partial(_sections.close_or_defer, backend.close))


SERVER_CHECK_TIMEOUT_S = 10.0
"""How long :func:`hello_at` waits for the server's ``hello``."""


def hello_at(endpoint: str | None) -> Any:
    """The ``hello`` of the ycgym server at ``endpoint`` (None: this process's local one), asked once within
    ``SERVER_CHECK_TIMEOUT_S``: how the command lines check a server before they start. ConnectionError naming the
    endpoint when none answers (a malformed endpoint, a timeout, a local server that cannot start)."""
    where = endpoint or "the local server"
    try:
        b = Backend(endpoint, timeout=SERVER_CHECK_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - ZeroMQ refusing the endpoint, a local server that does not start
        raise ConnectionError(f"no ycgym server answers at {where}: {e}") from None
    try:
        return b.client.hello()
    except Exception as e:  # noqa: BLE001 - a timeout, something else at that address
        raise ConnectionError(f"no ycgym server answers at {where}: {e}") from None
    finally:
        b.close()


def check_server(parser: Any, endpoint: str | None, preset: str) -> Any:
    """A command line's check of its server before it starts: the ``hello`` of the ycgym server at ``endpoint`` (None:
    this process's local one), or a usage error (``parser.error``) when none answers or it has no preset ``preset``
    (the server is the judge of presets: file paths are not sent over the wire)."""
    try:
        hello = hello_at(endpoint)
    except ConnectionError as e:
        parser.error(f"--endpoint: {e}")
    presets = sorted(hello["presets"])
    if preset not in presets:
        parser.error(f"--preset: unknown preset {preset!r} (available: {', '.join(presets)})")
    return hello


def connection(
    endpoint: str | None, server_public_key: str | bytes | None, public_key: str | bytes | None, secret_key: str | bytes | None, timeout: float | None
) -> dict[str, Any]:
    """An env's connection arguments, kept so that an unpickled copy connects the same way (:func:`reopen`); the
    timeout checked here, before a server is started."""
    check_timeout(timeout)
    return {"endpoint": endpoint, "server_public_key": server_public_key, "public_key": public_key, "secret_key": secret_key, "timeout": timeout}


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


def pickled_connection(connect: Mapping[str, Any], backend: Backend) -> dict[str, Any]:
    """The connection arguments an env pickles (:func:`reopen` connects its copy with them): those it was made with
    (:func:`connection`), with the endpoint its backend is at now when it was made with one. That is the same endpoint,
    unless the backend took a local server of another source (:meth:`Backend.serve_from`, as a
    :class:`ycgym.ShardedVectorEnv` shard) that has since been restarted at a new one: the copy connects to that live
    server, not to the dead one (an env made without an endpoint keeps None: its copy uses its own process's local
    server)."""
    if connect.get("endpoint") is None or connect["endpoint"] == backend.endpoint:
        return dict(connect)
    return {**connect, "endpoint": backend.endpoint}


def reopen(owner: object, connect: Mapping[str, Any], preset: str, params: SpaceParams) -> tuple[Backend, weakref.finalize[[], Any]]:
    """Connect an unpickled env as it was created (same endpoint, or this process's own local server)."""
    backend, finalizer, got = open_backend(owner, preset=preset, **connect)
    if got != params:
        finalizer()
        raise pickle.UnpicklingError(f"ycgym: the server at {backend.endpoint} describes preset {preset!r} differently ({got} != {params})")
    return backend, finalizer


def snapshot_sessions(backend: Backend, sessions: Sequence[str | None]) -> list[dict[str, Any] | None]:
    """Exact snapshots of the given sessions (``None`` for ``None``), pipelined: what pickling an env carries."""
    if backend.closed:
        raise pickle.PicklingError("ycgym: cannot pickle a closed environment")
    got = iter(take_snapshots(backend.client, [s for s in sessions if s is not None]))
    return [None if s is None else next(got) for s in sessions]


def take_snapshots(client: Client, sessions: Sequence[str]) -> list[dict[str, Any]]:
    """Snapshots of ``sessions``, pipelined; ``ProtocolError("bad_reply")`` for a malformed reply (checked by
    ``snapshot_of``, as ``Client.snapshot``'s is), raised once every reply is in (nothing is left pending)."""
    return [snapshot_of(r) for r in client.request_all("snapshot", [{"session": s} for s in sessions])]


def restore_sessions(backend: Backend, snapshots: Sequence[Mapping[str, Any] | None]) -> list[str | None]:
    """New sessions continuing exactly from ``snapshots`` (``None`` stays ``None``), pipelined."""
    c = backend.client
    got = c.request_all("restore", [{"snapshot": dict(s)} for s in snapshots if s is not None], raise_errors=False)
    # Every session made is the backend's (closed with it) before anything is raised: a refused or malformed restore
    # does not drop those the others made.
    made = [named_session(r) for r in got]
    backend.sessions.update(s for s in made if s is not None)
    for r, sess in zip(got, made):
        if isinstance(r, ProtocolError):
            raise r
        if sess is None:
            raise malformed_result("a restore reply", TypeError("it has no session id"), "the restore may have been made")
    it = iter(made)
    return [None if s is None else next(it) for s in snapshots]


def snapshot_start(snapshot: Mapping[str, Any], fallback: datetime) -> datetime:
    """The episode's start time recorded in an env snapshot (``sim.state.startTime``, µs since epoch)."""
    try:
        us = snapshot["sim"]["state"]["startTime"]
        return micros_to_time(int(us))
    except (KeyError, TypeError, ValueError):
        return fallback


def status_time(obs: Mapping[str, Any]) -> datetime:
    return parse_time(obs["status"]["sim_time"])


def session_limit_hint(e: ProtocolError, owner: object, n: int, backend: Backend) -> ProtocolError:
    """``e`` as it is, or, for the server's ``session_limit``, with what a vector env of ``n`` sub-environments needed
    and how to get it."""
    if e.code != "session_limit":
        return e
    if backend.server is not None:
        where = "the environments' own local server"
        remedy = "start a LocalServer(args=['--max-sessions', 'N', '--max-sessions-per-client', 'N']) and pass endpoint=its endpoint"
    else:
        where = f"the server at {backend.endpoint}"
        remedy = "start that server with larger --max-sessions and --max-sessions-per-client"
    message = f"{e.message}: {type(owner).__name__}({n}) needs {n} sessions at once on {where} (other sessions there count too); for more, {remedy}"
    return ProtocolError(e.code, message, request_id=e.request_id, index=e.index)


def options_dict(what: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of reset options given as ``what`` (None: none); a TypeError naming ``what`` unless they are a mapping."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{what} must be a mapping of reset options (a dict), got {type(options).__name__}")
    return dict(options)


def seed_arg(seed: Any) -> Any:
    """A reset's seed as Gymnasium takes it: a numpy integer (``for seed in np.arange(...)``) as the same Python int
    (Gymnasium refuses numpy integers; the vector envs take them); anything else as given, for Gymnasium to judge."""
    return int(seed) if isinstance(seed, np.integer) else seed


class BackendAccess:
    """``client`` and ``endpoint`` of an env that talks to its server through ``self._backend``."""

    _backend: Backend

    @property
    def client(self) -> Client:
        """The underlying protocol client (e.g. for pipelined requests of your own)."""
        return self._backend.client

    def _check_open(self) -> None:
        """Raise Gymnasium's ``ClosedEnvironmentError`` if ``close()`` was called."""
        if self._backend.closed:
            raise gym.error.ClosedEnvironmentError(f"ycgym: this {type(self).__name__} is closed (close() was called); make a new one")

    @property
    def endpoint(self) -> str:
        """The server's endpoint."""
        return self._backend.endpoint


SavedGenerators = tuple[list[tuple[int, "np.random.Generator | None"]], list[tuple[np.random.Generator, Any]]]


def save_generators(rngs: list[np.random.Generator | None], indices: Sequence[int]) -> SavedGenerators:
    """The generators ``rngs[i]`` (for ``i`` in ``indices``) and their states, for :func:`restore_generators`."""
    gens = [(i, rngs[i]) for i in indices]
    return gens, [(g, g.bit_generator.state) for _, g in gens if g is not None]


def restore_generators(rngs: list[np.random.Generator | None], saved: SavedGenerators) -> None:
    """Put the generators of :func:`save_generators` back in ``rngs``, in the states they had."""
    gens, states = saved
    for gen, state in states:
        gen.bit_generator.state = state
    for i, g in gens:
        rngs[i] = g


@contextlib.contextmanager
def generators_kept(rngs: list[np.random.Generator | None], indices: Sequence[int]) -> Iterator[None]:
    """Put ``rngs[i]`` (for ``i`` in ``indices``) back as they were, the same generators in the same states, when the body
    raises: a reset that is refused (a seed the protocol cannot carry, an option the server refuses) changes no
    generator, as if it had not been called."""
    saved = save_generators(rngs, indices)
    try:
        yield
    except BaseException:
        restore_generators(rngs, saved)
        raise


_R = TypeVar("_R")
_T = TypeVar("_T")


class SessionAccess(BackendAccess):
    """``session`` and ``seed_used`` of a single env (one server session, reset by seed), and its intake of a reply."""

    _session: str | None
    _due: str | None = None
    """Why the env must be reset before it steps again, when a reply it could not take in left the server's session in
    a state the env never saw (a step that may have run, a reset or restore that may have been made); None otherwise."""
    _last_seed: int | None
    _np_random: np.random.Generator | None  # gymnasium.Env's
    _np_random_seed: int | None
    preset: str
    np_random: np.random.Generator  # gymnasium.Env's

    @contextlib.contextmanager
    def _np_random_kept(self) -> Iterator[None]:
        """``np_random`` (and ``np_random_seed``) as they were when the body raises: a refused ``reset(seed=S)`` leaves
        the env as it was (``gymnasium.Env.reset`` seeds ``np_random`` before the request goes out)."""
        rngs = [self._np_random]
        seed = self._np_random_seed
        try:
            with generators_kept(rngs, [0]):
                yield
        except BaseException:
            self._np_random, self._np_random_seed = rngs[0], seed
            raise

    @property
    def session(self) -> str | None:
        """The server session of the current episode (``None`` before the first reset)."""
        return self._session

    @property
    def seed_used(self) -> int | None:
        """The simulation seed of the current episode (drawn from ``np_random`` when reset had none)."""
        return self._last_seed

    def _check_not_due(self) -> None:
        """Raise ``gym.error.ResetNeeded`` saying why when the env is due for a reset (:attr:`_due`)."""
        if self._due is not None:
            raise gym.error.ResetNeeded(f"call reset() before step(): this {type(self).__name__} is due for a reset ({self._due})")

    def _taken(self, what: str, maybe: str, why: Callable[[ProtocolError], str], send: Callable[[], _R], take: Callable[[_R], _T], adopt: bool = False) -> tuple[_R, _T]:
        """``send()`` a request and ``take(reply)``: what the env takes in from its reply, built and checked without
        changing the env (``take`` raises KeyError, TypeError, ValueError or AttributeError for a result whose fields are
        wrong). A reply that cannot be read, or whose result ``take`` refuses, raises ``ProtocolError("bad_reply")``
        (``what`` names the reply, ``maybe`` says what the server did or may have done) and leaves the env due for a
        reset (``why(error)``: the server ran the request, or may have), as the vector envs leave such a
        sub-environment. With ``adopt`` (a reset, a restore), a session the malformed result names is the env's (reused
        by its next reset, closed with it)."""
        try:
            r = send()
        except ProtocolError as e:
            if e.code == UNREAD:
                self._due = why(e)
            raise
        try:
            return r, take(r)
        except MALFORMED as e:
            err = malformed_result(what, e, maybe)
            sid = named_session(r) if adopt else None
            if sid is not None:
                self._session = sid
                self._backend.sessions.add(sid)
            self._due = why(err)
            raise err from None

    def _step_request(self, session: str, action: str | int) -> StepResult:
        """``step`` of ``session``: sent, then its reply awaited. Stopped while waiting (a timeout, Ctrl-C, the server
        gone), the step went out and the server ran it, or will: the env is then due for a reset (as the vector envs
        mark such a sub-environment), not stepped on from a state it never saw. An error reply (the server refused the
        step) changes nothing; one the client cannot read is :meth:`_taken`'s."""
        c = self._backend.client
        rid = c._send_step(session, action)  # type: ignore[arg-type]  # a Discrete action is an index
        try:
            return cast(StepResult, c.recv(rid))
        except ProtocolError:
            raise
        except BaseException as e:
            c.abandon([rid])  # its reply, if one comes, is dropped (the client does so itself on its timeouts)
            self._due = stopped_step_why(e)
            raise
        finally:
            c._handed = None  # the env holds the result (or its error): the client keeps nothing of the reply

    def _seeded_reset(self, seed: int | None, opts: dict[str, Any], take: Callable[[ResetResult], _T]) -> tuple[ResetResult, _T]:
        """The request of a single env's ``reset`` (within :meth:`_np_random_kept`, after ``gymnasium.Env.reset``): the
        seed drawn from ``np_random`` when none was given, or a seed of ``opts``' ``split`` drawn from it
        (:mod:`ycgym.splits`), the reset sent and its reply taken in by ``take`` as :meth:`_taken` says."""
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        split = opts.pop("split", None)
        if split is not None:  # a seed of the split, drawn from the reset seed (ycgym.splits)
            seed = split_seed(server_splits(self._backend), split, int(seed))
        chosen = int(seed)
        r, out = self._taken(
            "the reset reply",
            "the reset may have been made",
            failed_reset_why,
            lambda: self._backend.reset_session(self._session, chosen, self.preset, opts),
            take,
            adopt=True,
        )
        self._last_seed = chosen
        return r, out

    def _restore_session(self, snapshot: Mapping[str, Any]) -> Any:
        """``restore`` into this env's session, or into a new one when the server reaped it or restarted."""
        self._check_open()
        if self._backend.ensure_server():
            self._session = None
        c = self._backend.client
        try:
            r = c.restore(snapshot, session=self._session)
        except ProtocolError as e:
            if self._session is None or e.code != "unknown_session":
                raise
            self._backend.sessions.discard(self._session)
            self._session = None
            r = c.restore(snapshot)
        sid = named_session(r)  # a malformed result's too (the env checks the rest)
        if sid is not None:
            self._session = sid
            self._backend.sessions.add(sid)
        return r
