"""JSON codec: ``orjson`` when it is installed (much faster), else the standard library."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads", "BACKEND"]

_orjson: Any
try:  # pragma: no cover - depends on the environment
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def _std_dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _std_loads(data: bytes | str) -> Any:
    return json.loads(data)


if _orjson is not None:
    _orjson_dumps = _orjson.dumps
    _orjson_loads = _orjson.loads

    def dumps(value: Any) -> bytes:
        """Serialise to UTF-8 JSON bytes (compact). What orjson refuses (an integer beyond 64 bits, a key that is not a
        string, a lone surrogate, another type) goes through the standard library instead, so that a request is encoded,
        or refused, as it is without orjson: a seed of 2**70 reaches the server and gets its schema's error (orjson's
        own was "Integer exceeds 64-bit range")."""
        try:
            return bytes(_orjson_dumps(value))
        except TypeError:
            return _std_dumps(value)

    def loads(data: bytes | str) -> Any:
        """Parse UTF-8 JSON bytes."""
        return _orjson_loads(data)

    BACKEND = "orjson"
else:
    dumps = _std_dumps
    loads = _std_loads
    BACKEND = "json"
