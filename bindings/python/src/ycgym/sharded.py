"""``ShardedVectorEnv``: one vector env whose sub-environments are spread over K local servers stepped concurrently.

A :class:`ycgym.YCBenchDiscreteVectorEnv` (or :class:`ycgym.YCBenchVectorEnv`) runs every sub-environment in one
server process, and that process's one thread is most of a step's time. ``ShardedVectorEnv(num_envs, servers=K)``
starts K local servers of its own and holds K inner vector envs of one kind (``kind="discrete"`` or ``"text"``), one
per server: sub-environment ``i`` lives in shard ``k`` at a fixed contiguous slice (the first ``num_envs % K`` shards
hold one more). :meth:`step` and :meth:`reset` send each shard its part and gather them concurrently (a thread per
shard beyond the first, whose client waits release the GIL); results are concatenated in sub-environment order.

What it returns is exactly what the unsharded env of the same arguments returns for the same seeds, options and
actions, for every K: observations, masks, rewards, flags, infos (Gymnasium's vector layout: a key some shards lack is
filled as ``VectorEnv._add_info`` fills it, zeros or None with its ``_key`` mask false), automatic resets (each
sub-environment draws from its own generator; ``reset(seed=s)`` seeds sub-environment ``i`` with ``s + i``), renders
and pickled snapshots. It can help only where there are idle cores for the K servers and the client (pick K below
the core count); ``bindings/python/bench/bench_sharded.py`` measures it against the one-server env (on a 2-core machine
where the one-server env already keeps ~1.3 cores busy, K=2 ran at 1.05-1.15x when otherwise idle and at 0.88-1.05x
when loaded by other jobs).

Errors: a step refused before anything is sent (invalid actions, DISABLED with a sub-environment due, before
``reset``) is refused before any shard steps. When sub-environments fail in a step (:class:`ycgym.VectorStepError`
from some shards), the other shards' results are taken in and one ``VectorStepError`` is raised with global indices.
When a shard's step fails as a whole (a timeout, its server exited) or the step is interrupted (Ctrl-C), the other
shards finish; the results nobody returned are not kept: their sub-environments are due for a reset (as the plain env
marks a step stopped midway; their automatic resets of that step will draw the same seeds again) and the error is
raised. A failed or interrupted ``reset`` marks the sub-environments that other shards reset due for that reset (its
seeds and options), as the plain env does for the part of a reset the server made. A shard whose server exited
(OOM-killed, crashed) fails its steps at once (:class:`ycgym.ServerExitedError`, as the plain env's); the next reset
that covers any of its sub-environments starts a new server for that shard alone, as the plain env's next reset does
(and, as the plain env's, a step refuses, naming them, while that reset left some of the shard's sub-environments
without a session).

``render_mode="human"`` (text env) steps the shards one after another, so that the printed texts come in order.
:meth:`close` closes every shard and server even when one fails. The env pickles (each shard as the plain env does,
its episodes as snapshots; an unpickled copy starts its own K servers). A shard (:attr:`shards`) pickled alone is a
plain env made with its server's endpoint: its copy connects to that server where it is now (its new endpoint once a
reset restarted it), and does not start a new one when it exits.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _sections
from ._backend import ServerSource, restore_generators, save_generators
from ._replies import failed_reset_why, stopped_step_why
from ._spin import _usable_cpus
from .client import EpisodeOverError, ProtocolError, VectorStepError
from .discrete import discrete_actions
from .discrete_vector import YCBenchDiscreteVectorEnv
from .server import SHARED_MAX_SESSIONS, LocalServer, default_local_endpoint
from .vector import Owed, ShardState, VectorSeed, YCBenchVectorEnv, owe, reset_arguments, reset_needed, text_actions

__all__ = ["ShardedVectorEnv"]

_KINDS: dict[str, type[YCBenchDiscreteVectorEnv] | type[YCBenchVectorEnv]] = {"discrete": YCBenchDiscreteVectorEnv, "text": YCBenchVectorEnv}

def kind_of(entry_point: Any) -> str:
    """The ``kind`` of a ycgym vector entry point (``"ycgym.discrete_vector:YCBenchDiscreteVectorEnv"`` or the class)."""
    for kind, cls in _KINDS.items():
        if entry_point is cls or entry_point == f"{cls.__module__}:{cls.__name__}":
            return kind
    raise gym.error.Error(f"servers= shards ycgym's own vector envs only, not {entry_point!r}")


class _Shard(Protocol):
    """What this module uses of a shard: the VectorEnv API and :class:`ycgym.vector.Shardable` (both vector envs are
    such, checked where a shard is made)."""

    @property
    def num_envs(self) -> int: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def render_mode(self) -> str | None: ...
    @property
    def autoreset_mode(self) -> AutoresetMode: ...
    @property
    def single_observation_space(self) -> gym.Space[Any]: ...
    @property
    def single_action_space(self) -> gym.Space[Any]: ...
    @property
    def sessions(self) -> tuple[str | None, ...]: ...
    def reset(self, *, seed: VectorSeed = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]: ...
    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]: ...
    def render(self) -> tuple[Any, ...]: ...
    def close(self, **kwargs: Any) -> None: ...
    def __getstate__(self) -> dict[str, Any]: ...
    def __setstate__(self, state: dict[str, Any]) -> None: ...
    # Shardable's
    def _shard_state(self) -> ShardState: ...
    def _shard_ready(self) -> bool: ...
    def _without_session(self) -> list[int]: ...
    def _refused_step(self) -> EpisodeOverError | None: ...
    def _untouched_by_reset(self) -> Any: ...
    def _check_reset_seeds(self, indices: Sequence[int], seeds: Sequence[int | None], options: dict[str, Any] | None) -> None: ...
    def _ensure_server(self) -> None: ...
    def _serve_from(self, source: ServerSource) -> None: ...


# What a shard's state was before a step or reset (for `_unsee`): its due flags, owed resets and generators.
_Before = tuple[np.ndarray, dict[int, Owed], Any]


def _slices(n: int, k: int) -> list[slice]:
    """K contiguous slices of ``range(n)``, the first ``n % k`` one longer."""
    base, extra = divmod(n, k)
    out, at = [], 0
    for j in range(k):
        size = base + (1 if j < extra else 0)
        out.append(slice(at, at + size))
        at += size
    return out


def default_spin_us(k: int) -> int | None:
    """The ``spin_us`` of K shards' servers when none is given: the usual (None: ``YCGYM_SPIN_US``, else
    :data:`ycgym._spin.DEFAULT_SPIN_US`) where the variable is set or the process may use at least 2K CPUs (a polling
    wait and a polling server per shard), else 0: on a loaded 2-CPU machine two shards that poll ran at 0.72-0.93x of
    the plain env, two that sleep at 0.88-1.05x (``bench_sharded.py --shard-spin-us``, paired runs)."""
    if os.environ.get("YCGYM_SPIN_US", "").strip() or _usable_cpus() >= 2 * k:
        return None
    return 0


def _start_servers(k: int, spin_us: int | None) -> list[LocalServer]:
    """K local servers (as the shared one is started: all sessions this process's, none closed for being idle)."""
    servers: list[LocalServer] = []
    args = ["--max-sessions-per-client", str(SHARED_MAX_SESSIONS), "--idle-timeout", "0"]
    try:
        for _ in range(k):
            servers.append(LocalServer(default_local_endpoint(), args=args, spin_us=spin_us))
    except BaseException:
        _close_all(servers, [], None)
        raise
    return servers


class _ShardServer:
    """Shard ``k``'s local server, as its backend gets it (a :class:`ycgym._backend.ServerSource`): ``servers[k]``
    while it runs; once it has exited, a new one in its place (the dead one closed). The env closes them all."""

    def __init__(self, servers: list[LocalServer], k: int, spin_us: int | None) -> None:
        self.servers, self.k, self.spin_us = servers, k, spin_us

    def acquire(self) -> LocalServer:
        srv = self.servers[self.k]
        if not srv.running:
            srv.close()
            srv = self.servers[self.k] = _start_servers(1, self.spin_us)[0]
        return srv

    def release(self, server: LocalServer) -> None:
        pass  # closed by the env (close(), or acquire once it has exited)

    def __repr__(self) -> str:
        return f"shard {self.k}'s server"


def _close_all(servers: Sequence[LocalServer], shards: Sequence[_Shard], pool: concurrent.futures.ThreadPoolExecutor | None) -> None:
    """Close every shard, then every server, then the threads; the first error is raised after all are tried."""
    first: BaseException | None = None
    for closing in [*(s.close for s in shards), *(s.close for s in servers)]:
        try:
            closing()
        except BaseException as e:  # noqa: BLE001 - every one is closed; the first error is raised after
            first = first or e
    if pool is not None:
        pool.shutdown(wait=True)
    if first is not None:
        raise first


def _concat(parts: Sequence[Any]) -> Any:
    """Batched values of consecutive shards joined along the sub-environment axis (arrays, tuples, dicts of them)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    if isinstance(first, dict):
        return {key: _concat([p[key] for p in parts]) for key in first}
    if isinstance(first, tuple):
        return tuple(x for p in parts for x in p)
    return np.concatenate(parts)


def _blank(like: Any, n: int) -> Any:
    """``n`` rows of what ``VectorEnv._add_info`` leaves where a sub-environment has no such key: zeros (of the dtype
    and row shape of ``like``), None in an object array, and a dict of those for a dict."""
    if isinstance(like, dict):
        return {key: _blank(v, n) for key, v in like.items()}
    if like.dtype == object:
        return np.full((n, *like.shape[1:]), None, dtype=object)
    return np.zeros((n, *like.shape[1:]), dtype=like.dtype)


def _merge_infos(parts: Sequence[dict[str, Any]], sizes: Sequence[int]) -> dict[str, Any]:
    """The vector infos of consecutive shards as one (keys in order of first appearance; a key some shards lack is
    filled with :func:`_blank` rows)."""
    if len(parts) == 1:
        return parts[0]
    keys: dict[str, Any] = {}
    for p in parts:
        for key, v in p.items():
            keys.setdefault(key, v)
    return {key: _concat([p[key] if key in p else _blank(like, n) for p, n in zip(parts, sizes)]) for key, like in keys.items()}


def _reindexed(e: BaseException, offset: int) -> BaseException:
    """``e`` (raised by a shard) naming global sub-environment indices: a ProtocolError's ``index`` and the
    ``sub-environment i`` of its message."""
    if offset and isinstance(e, ProtocolError) and e.index is not None:
        local, e.index = e.index, e.index + offset
        e.message = e.message.replace(f"sub-environment {local}", f"sub-environment {e.index}", 1)
        e.args = (e.code, e.message)
    return e


class ShardedVectorEnv(VectorEnv[Any, Any, Any]):
    """``num_envs`` YC-Bench sub-environments over ``servers`` local servers stepped concurrently (see the module
    docstring).

    Args:
        num_envs: the number of sub-environments.
        servers: K, the number of local servers (and shards), ``1 <= K <= num_envs``.
        kind: ``"discrete"`` (:class:`ycgym.YCBenchDiscreteVectorEnv`, the default) or ``"text"``
            (:class:`ycgym.YCBenchVectorEnv`).
        spin_us: how long each shard's wait for its server's reply polls before it sleeps, and its server for the next
            request (:class:`ycgym.LocalServer`'s ``spin_us``). Polling costs a core per waiting shard and per server;
            default (:func:`default_spin_us`): as the plain env (``YCGYM_SPIN_US``, else 500 us) where the process may
            use at least 2K CPUs or the variable is set, else 0 (sleep at once).
        **kwargs: the arguments of that vector env (``preset``, ``autoreset_mode``, ``max_steps``, ...), given to
            every shard; not ``endpoint`` (each shard talks to its own server).

    ``gymnasium.make_vec("ycgym/YCBench-Discrete-v0", num_envs=64, servers=2)`` (or ``vector_kwargs={"servers": 2}``)
    builds one.
    """

    def __init__(self, num_envs: int, servers: int = 2, kind: str = "discrete", spin_us: int | None = None, **kwargs: Any) -> None:
        if int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if isinstance(servers, bool) or not isinstance(servers, (int, np.integer)) or not 1 <= servers <= num_envs:
            raise ValueError(f"servers must be an integer from 1 to num_envs={num_envs}, got {servers!r}")
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        if kwargs.get("endpoint") is not None:
            raise ValueError("ShardedVectorEnv starts its own local servers: endpoint cannot be given")
        kwargs.pop("endpoint", None)
        self.num_envs = int(num_envs)
        self.kind = kind
        self._kwargs = kwargs
        self._slices = _slices(self.num_envs, int(servers))
        self._servers: list[LocalServer] = []
        self._shards: list[_Shard] = []
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        self.spin_us = default_spin_us(int(servers)) if spin_us is None else spin_us
        self._servers = _start_servers(int(servers), self.spin_us)
        self._finalizer = weakref.finalize(self, _sections.close_or_defer, functools.partial(_close_all, self._servers, self._shards, None))
        try:
            for k, (srv, sl) in enumerate(zip(self._servers, self._slices)):
                self._shards.append(_KINDS[kind](sl.stop - sl.start, endpoint=srv.endpoint, **kwargs))
                self._shards[k]._serve_from(_ShardServer(self._servers, k, self.spin_us))
        except BaseException:
            self._finalizer()
            raise
        self._describe()

    def _describe(self) -> None:
        """The spaces and metadata (shard 0's, batched to ``num_envs``)."""
        first = self._shards[0]
        self.metadata = first.metadata
        self.render_mode = first.render_mode
        self.autoreset_mode = first.autoreset_mode
        self.single_observation_space = first.single_observation_space
        self.single_action_space = first.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    @property
    def servers(self) -> int:
        """K, the number of servers (shards)."""
        return len(self._shards)

    @property
    def shards(self) -> tuple[Any, ...]:
        """The inner vector envs, in sub-environment order."""
        return tuple(self._shards)

    @property
    def sessions(self) -> tuple[Any, ...]:
        return tuple(s for shard in self._shards for s in shard.sessions)

    def __getattr__(self, name: str) -> Any:
        # The shards' common read-only facts (preset, params, discrete_spec, dict_obs, encoding, ...).
        if name.startswith("_") or name not in ("preset", "params", "discrete_spec", "dict_obs", "encoding", "max_text_length"):
            raise AttributeError(name)
        return getattr(self.__dict__["_shards"][0], name)

    # -- running the shards -------------------------------------------------------------------------------------------

    def _run(self, call: Callable[[int, Any], Any], done: dict[int, tuple[Any, BaseException | None]]) -> list[tuple[Any, BaseException | None]]:
        """``call(k, shard)`` for every shard, the first in this thread and the others each in a thread (one after
        another with ``render_mode="human"``); each one's result or exception, after all have finished. An interrupt
        here waits for the threads, then is raised; ``done`` holds the outcomes of those that finished."""
        if self.render_mode == "human" or len(self._shards) == 1:
            for k in range(len(self._shards)):
                done[k] = self._one(call, k)
            return [done[k] for k in range(len(self._shards))]
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(len(self._shards) - 1, thread_name_prefix="ycgym-shard")
        futures = {k: self._pool.submit(self._one, call, k) for k in range(1, len(self._shards))}
        try:
            done[0] = self._one(call, 0)
        finally:
            self._wait(list(futures.values()))
            done.update((k, f.result()) for k, f in futures.items())
        return [done[k] for k in range(len(self._shards))]

    def _one(self, call: Callable[[int, Any], Any], k: int) -> tuple[Any, BaseException | None]:
        try:
            return call(k, self._shards[k]), None
        except Exception as e:  # noqa: BLE001 - handed to the caller, which raises it (or one made of it)
            return None, e

    @staticmethod
    def _wait(futures: Sequence[concurrent.futures.Future[Any]]) -> None:
        """Wait for every thread's shard (a second Ctrl-C here is held until they are done, then raised)."""
        interrupted: BaseException | None = None
        while True:
            try:
                concurrent.futures.wait(futures)
                break
            except KeyboardInterrupt as e:
                interrupted = e
        if interrupted is not None:
            raise interrupted

    def _before(self, step: bool = False) -> list[_Before]:
        """Each shard's due flags, owed resets and generators (those a step can draw from: the due ones, every one with
        SAME_STEP; a reset's: every one) before a step or reset, for :meth:`_unsee`."""
        out = []
        for shard in self._shards:
            st = shard._shard_state()
            drawn = np.flatnonzero(st.due).tolist() if step and self.autoreset_mode != AutoresetMode.SAME_STEP else range(shard.num_envs)
            out.append((st.due.copy(), dict(st.owed), save_generators(st.rngs, drawn)))
        return out

    def _unsee(self, k: int, before: _Before, why: str, made: Sequence[int] | None = None, seeds: Sequence[int | None] = (), options: Any = None) -> None:
        """Shard ``k`` finished a step (``made`` None) or a reset of ``made`` whose results are not returned: as the
        plain env does for a step (or reset) stopped after the server ran it, every generator is put back and those
        sub-environments are due (a step's: the automatic resets it made are owed again, the others owe a reset drawn
        from their generators; a reset's: owe that reset, ``seeds`` and ``options``)."""
        due, owed, rngs = self._shards[k]._shard_state()
        was_due, owed_before, saved = before
        restore_generators(rngs, saved)
        if made is not None:
            owe(owed, due, made, seeds, options, why)
            return
        for i in np.flatnonzero(was_due).tolist():
            due[i] = True
            owed.pop(i, None)
            if i in owed_before:
                owed[i] = owed_before[i]
        stepped = np.flatnonzero(~was_due).tolist()
        owe(owed, due, stepped, [None] * len(stepped), None, why)

    def _check_open(self) -> None:
        if self._closed:
            raise gym.error.ClosedEnvironmentError("ycgym: this ShardedVectorEnv is closed (close() was called); make a new one")

    # -- the VectorEnv API --------------------------------------------------------------------------------------------

    def reset(self, *, seed: VectorSeed = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-environments (or those of ``options["reset_mask"]``), as the unsharded env does."""
        self._check_open()
        seeds, indices, rest = reset_arguments(self.num_envs, seed, options)
        chosen = np.zeros(self.num_envs, dtype=np.bool_)
        chosen[indices] = True
        masked = options is not None and "reset_mask" in options
        for shard, sl in zip(self._shards, self._slices):
            if chosen[sl].any():  # a shard whose server exited gets a new one first, as the plain env's reset does
                shard._ensure_server()
        self._check_reset(chosen, indices, seeds, rest)
        before = self._before()
        # Each shard's reset arguments: its seeds and (a masked reset) its part of the mask; None: none of it is reset.
        parts: list[tuple[list[int | None], dict[str, Any]] | None] = []
        for sl in self._slices:
            if not chosen[sl].any():
                parts.append(None)
                continue
            opts = {**rest, "reset_mask": chosen[sl].copy()} if masked else dict(rest)
            parts.append((seeds[sl], opts))

        def call(k: int, shard: Any) -> Any:
            part = parts[k]
            if part is None:
                return None
            return shard.reset(seed=part[0], options=part[1])

        done: dict[int, tuple[Any, BaseException | None]] = {}
        try:
            got = self._run(call, done)
        except BaseException as e:  # an interrupt: the shards that reset are due for that reset
            for k, (_, err) in done.items():
                if err is None:
                    self._undo_reset(k, before[k], parts[k], rest, e)
            raise
        failed = next(((k, e) for k, (_, e) in enumerate(got) if e is not None), None)
        if failed is not None:
            for k, (_, err) in enumerate(got):
                if err is None:
                    self._undo_reset(k, before[k], parts[k], rest, failed[1])
            raise _reindexed(failed[1], self._slices[failed[0]].start)
        obs: list[Any] = []
        infos: list[dict[str, Any]] = []
        for k, (r, _) in enumerate(got):
            if r is None:  # not reset: its current observation, no info (as the plain env's masked reset)
                obs.append(self._shards[k]._untouched_by_reset())
                infos.append({})
            else:
                obs.append(r[0])
                infos.append(r[1])
        return _concat(obs), _merge_infos(infos, self._sizes())

    def _check_reset(self, chosen: np.ndarray, indices: Sequence[int], seeds: Sequence[int | None], rest: dict[str, Any]) -> None:
        """Raise, before any shard resets, what a shard's reset would raise before sending anything for its part (the
        options refused, a given seed that is not a protocol seed or a split's, the split unknown), naming global
        indices: the checks (``Shardable._check_reset_seeds``) of the first shard the reset covers (whose server runs,
        or was just started), made for every index."""
        first = next((k for k, sl in enumerate(self._slices) if chosen[sl].any()), 0)
        self._shards[first]._check_reset_seeds(indices, seeds, rest)

    def _undo_reset(self, k: int, before: _Before, part: tuple[list[int | None], dict[str, Any]] | None, rest: dict[str, Any], e: BaseException) -> None:
        if part is None:
            return
        mask = part[1].get("reset_mask")
        made = list(range(self._shards[k].num_envs)) if mask is None else np.flatnonzero(mask).tolist()
        self._unsee(k, before, failed_reset_why(e), made, [part[0][i] for i in made], rest)

    def _sizes(self) -> list[int]:
        return [sl.stop - sl.start for sl in self._slices]

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment (see the module docstring)."""
        self._check_open()
        shards = self._shards
        # Every check a shard makes before it sends anything, made for all before any steps (in the plain env's order).
        if self.kind == "discrete":
            self._refuse_unready()
            acts: Any = discrete_actions(actions, self.num_envs, int(cast(YCBenchDiscreteVectorEnv, shards[0]).discrete_spec["n_actions"]))
        else:
            acts = text_actions(actions, self.num_envs)
            self._refuse_unready()
        for shard, sl in zip(shards, self._slices):
            refused = shard._refused_step()
            if refused is not None:
                raise _reindexed(refused, sl.start)
        sliced = [acts[sl] for sl in self._slices]
        before = self._before(step=True)
        done: dict[int, tuple[Any, BaseException | None]] = {}
        try:
            got = self._run(lambda k, shard: shard.step(sliced[k]), done)
        except BaseException as e:  # an interrupt in this thread: the steps that finished are not returned
            for k, (_, err) in done.items():
                if err is None or isinstance(err, VectorStepError):
                    self._unsee(k, before[k], stopped_step_why(e))
            raise
        whole = next(((k, e) for k, (_, e) in enumerate(got) if e is not None and not isinstance(e, VectorStepError)), None)
        if whole is not None:  # a shard failed as a whole: the others' results are not returned
            for k, (_, err) in enumerate(got):
                if err is None or isinstance(err, VectorStepError):
                    self._unsee(k, before[k], stopped_step_why(whole[1]))
            raise _reindexed(whole[1], self._slices[whole[0]].start)
        results = [r if not isinstance(err, VectorStepError) else err.result for r, err in got]
        obs = _concat([r[0] for r in results])
        rewards, terminated, truncated = (np.concatenate([r[j] for r in results]) for j in (1, 2, 3))
        infos = _merge_infos([r[4] for r in results], self._sizes())
        if any(e is not None for _, e in got):
            errors: dict[int, ProtocolError] = {}
            stepped = []
            for (_, err), sl, shard in zip(got, self._slices, shards):
                if isinstance(err, VectorStepError):
                    for i, one in err.errors.items():
                        _reindexed(one, sl.start)
                        errors[sl.start + i] = one
                    stepped.append(err.stepped)
                else:
                    stepped.append(np.ones(shard.num_envs, dtype=np.bool_))
            raise VectorStepError(errors, (obs, rewards, terminated, truncated, infos), np.concatenate(stepped))
        return obs, rewards, terminated, truncated, infos

    def _refuse_unready(self) -> None:
        if not all(shard._shard_ready() for shard in self._shards):
            # as the plain env's: naming the sub-environments without a session, when they are some of them
            missing = [sl.start + i for shard, sl in zip(self._shards, self._slices) for i in shard._without_session()]
            raise reset_needed(missing if all(s._shard_ready() or s._without_session() for s in self._shards) else [], self.num_envs)

    def action_masks(self) -> np.ndarray:
        """Stacked masks ``(num_envs, n_actions)`` of the actions valid now (``kind="discrete"``)."""
        return np.concatenate([cast(YCBenchDiscreteVectorEnv, shard).action_masks() for shard in self._shards])

    def render(self) -> tuple[Any, ...]:
        return tuple(x for shard in self._shards for x in shard.render())

    def snapshot(self) -> list[dict[str, Any]]:
        """Snapshots of every sub-environment (``kind="text"``)."""
        return [s for shard in self._shards for s in cast(YCBenchVectorEnv, shard).snapshot()]

    def close_extras(self, **kwargs: Any) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        self._finalizer.detach()
        _close_all(self._servers, self._shards, pool)

    def __getstate__(self) -> dict[str, Any]:
        self._check_open()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_servers", "_shards", "_pool", "_finalizer")}
        state["_shard_states"] = [shard.__getstate__() for shard in self._shards]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        shard_states = state.pop("_shard_states")
        self.__dict__.update(state)
        self._pool = None
        self._shards = []
        self._servers = _start_servers(len(shard_states), self.spin_us)
        self._finalizer = weakref.finalize(self, _sections.close_or_defer, functools.partial(_close_all, self._servers, self._shards, None))
        try:
            for k, (srv, st) in enumerate(zip(self._servers, shard_states)):
                shard = _KINDS[self.kind].__new__(_KINDS[self.kind])
                shard.__setstate__({**st, "_connect": {**st["_connect"], "endpoint": srv.endpoint}})
                self._shards.append(shard)
                shard._serve_from(_ShardServer(self._servers, k, self.spin_us))
        except BaseException:
            self._finalizer()
            raise

    def __repr__(self) -> str:
        return f"ShardedVectorEnv(num_envs={self.num_envs}, servers={self.servers}, kind={self.kind!r}, autoreset_mode={self.autoreset_mode.value})"

