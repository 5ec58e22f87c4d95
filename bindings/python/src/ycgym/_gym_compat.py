"""``gymnasium.make_vec(..., vector_kwargs={"autoreset_mode": ...})`` for ycgym's batched vector envs.

Gymnasium refuses ``vector_kwargs`` for an environment registered with a ``vector_entry_point`` (it wants
``**kwargs``), yet ``vector_kwargs={"autoreset_mode": ...}`` is how users of ``SyncVectorEnv`` and
``AsyncVectorEnv`` choose the autoreset mode. For an id of the ``ycgym`` namespace built through its vector
entry point, :func:`make_vec` passes those keyword arguments, which ycgym's vector envs accept as their own, to
the constructor (``servers=K``, there or as a keyword argument, builds a :class:`ycgym.ShardedVectorEnv` of K local
servers instead); every other call goes to Gymnasium's ``make_vec`` unchanged. :func:`install` puts it in place
of ``gymnasium.make_vec`` (idempotent).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
from gymnasium.envs import registration
from gymnasium.envs.registration import EnvSpec, VectorizeMode

__all__ = ["VECTOR_KWARGS", "install", "make_vec"]

VECTOR_KWARGS = frozenset({"autoreset_mode", "servers"})
"""The ``vector_kwargs`` that ycgym's vector envs take as constructor arguments."""

_original: Callable[..., gymnasium.vector.VectorEnv] = getattr(registration.make_vec, "__wrapped__", registration.make_vec)


def _batched_ycgym(id: str | EnvSpec, vectorization_mode: VectorizeMode | str | None) -> bool:
    try:
        spec = id if isinstance(id, EnvSpec) else gymnasium.spec(id)
        mode = VectorizeMode.VECTOR_ENTRY_POINT if vectorization_mode is None else VectorizeMode(vectorization_mode)
    except (gymnasium.error.Error, ValueError):
        return False  # Gymnasium's own make_vec reports it
    return spec.namespace == "ycgym" and spec.vector_entry_point is not None and mode == VectorizeMode.VECTOR_ENTRY_POINT


@functools.wraps(_original)
def make_vec(
    id: str | EnvSpec,
    num_envs: int = 1,
    vectorization_mode: VectorizeMode | str | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    wrappers: Sequence[Callable[[gymnasium.Env[Any, Any]], gymnasium.Wrapper[Any, Any, Any, Any]]] | None = None,
    **kwargs: Any,
) -> gymnasium.vector.VectorEnv:
    if vector_kwargs and _batched_ycgym(id, vectorization_mode):
        unknown = sorted(set(vector_kwargs) - VECTOR_KWARGS)
        if unknown:
            raise gymnasium.error.Error(
                f"ycgym's vector env takes vector_kwargs {sorted(VECTOR_KWARGS)} (as constructor arguments); got {unknown}. "
                "Pass vectorization_mode='sync' or 'async' to use Gymnasium's vectorizers with their own vector_kwargs."
            )
        both = sorted(set(vector_kwargs) & set(kwargs))
        if both:
            raise gymnasium.error.Error(f"{both} given both in vector_kwargs and as keyword arguments")
        kwargs = {**kwargs, **vector_kwargs}
        vector_kwargs = None
    if "servers" in kwargs and _batched_ycgym(id, vectorization_mode):
        # K local servers: the vector entry point's env sharded over them (ycgym.ShardedVectorEnv).
        from .sharded import ShardedVectorEnv, kind_of

        spec = id if isinstance(id, EnvSpec) else gymnasium.spec(id)
        kind = kind_of(spec.vector_entry_point)
        servers = kwargs.pop("servers")
        id = dataclasses.replace(spec, vector_entry_point=functools.partial(ShardedVectorEnv, servers=servers, kind=kind))
    return _original(id, num_envs, vectorization_mode, vector_kwargs, wrappers, **kwargs)


def install() -> None:
    """Make ``gymnasium.make_vec`` this function (where Gymnasium exposes it)."""
    for module in (gymnasium, gymnasium.envs, registration):
        if getattr(module, "make_vec", None) is not make_vec:
            module.make_vec = make_vec  # type: ignore[attr-defined]
