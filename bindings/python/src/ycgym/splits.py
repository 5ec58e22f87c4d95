"""Seed splits: which run seeds are for training, validation and evaluation.

The ranges live in the server (``src/config/splits.ts``, the one source) and reach Python through ``hello``
(``hello()["splits"]``: ``{"test": {"first": 1, "last": 100}, ...}``, inclusive); ``ycgym splits`` prints them.

``reset(seed=s, options={"split": "train"})`` plays the world of seed ``first + s mod size`` of the split
(``s`` drawn from the env's generator when ``seed`` is None), so consecutive reset seeds give distinct worlds
and the same reset seed always gives the same one. The rule is the server's ``splitSeed``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

SPLIT_NAMES = ("test", "validation", "train")

MAX_SEED_LIST = 1_000_000
"""Most seeds one seed list may name (as ``ycgym run --seeds``, src/cli/args.ts)."""
MAX_SEED = 2**53 - 1
"""Largest seed magnitude: the protocol's seeds are JSON numbers that are safe integers."""


def parse_seed_list(spec: str) -> list[int]:
    """``"1-3,7"`` -> ``[1, 2, 3, 7]``: ranges inclusive (``-3--1`` is three negative seeds), order and duplicates
    kept, empty parts skipped; at most ``MAX_SEED_LIST`` seeds, each within ``MAX_SEED``. ValueError otherwise."""
    ranges: list[tuple[int, int]] = []
    count = 0
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part[1:].partition("-")
        lo = part[0] + lo
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"bad seed range {part!r} in {spec!r} (expected e.g. '1-3,7')") from None
        if b < a:
            raise ValueError(f"bad seed range {part!r}: {b} < {a}")
        if max(abs(a), abs(b)) > MAX_SEED:
            raise ValueError(f"seeds must be integers from {-MAX_SEED} to {MAX_SEED}, got {part!r}")
        count += b - a + 1
        if count > MAX_SEED_LIST:
            raise ValueError(f"{spec} names more than {MAX_SEED_LIST} seeds")
        ranges.append((a, b))
    if not ranges:
        raise ValueError(f"no seeds in {spec!r}")
    return [s for a, b in ranges for s in range(a, b + 1)]

_lock = threading.Lock()
_cache: dict[str, dict[str, tuple[int, int]]] = {}


def parse_splits(hello: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``{name: (first, last)}`` from a ``hello`` result."""
    raw = hello.get("splits")
    if not isinstance(raw, Mapping):
        raise ValueError("this server does not report seed splits (hello has no 'splits'): upgrade the server")
    out: dict[str, tuple[int, int]] = {}
    for name in SPLIT_NAMES:
        r = raw.get(name)
        if not isinstance(r, Mapping) or not isinstance(r.get("first"), int) or not isinstance(r.get("last"), int):
            raise ValueError(f"hello: bad split {name!r}: {r!r}")
        out[name] = (int(r["first"]), int(r["last"]))
    return out


def server_splits(backend: Any) -> dict[str, tuple[int, int]]:
    """The splits of the server behind ``backend`` (asked once per endpoint)."""
    key = backend.endpoint
    with _lock:
        got = _cache.get(key)
    if got is None:
        got = parse_splits(backend.client.hello())
        with _lock:
            _cache[key] = got
    return got


def split_seed(splits: Mapping[str, tuple[int, int]], name: str, index: int) -> int:
    """The ``index``-th seed of split ``name`` (wrapping at its size): ``first + index mod size``."""
    if name not in splits:
        raise ValueError(f"unknown split {name!r} (available: {', '.join(splits)})")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a split seed needs a non-negative integer reset seed, got {index!r}")
    first, last = splits[name]
    return first + index % (last - first + 1)


def split_seeds(splits: Mapping[str, tuple[int, int]], name: str, count: int | None = None, offset: int = 0) -> list[int]:
    """``count`` consecutive seeds of split ``name`` from its ``offset``-th (all of it when ``count`` is None)."""
    if name not in splits:
        raise ValueError(f"unknown split {name!r} (available: {', '.join(splits)})")
    first, last = splits[name]
    size = last - first + 1
    if count is None:
        count = size - offset
    if count < 1 or offset < 0 or offset + count > size:
        raise ValueError(f"split {name} has {size} seeds ({first}-{last}); offset {offset} + count {count} does not fit")
    return list(range(first + offset, first + offset + count))


__all__ = ["SPLIT_NAMES", "parse_splits", "server_splits", "split_seed", "split_seeds"]
