"""Decoding of binary ``step_batch`` replies (request field ``"encoding": "binary"``; ``docs/protocol.md``, "Binary step_batch").

The reply is the JSON header (a ``StepBatchBinaryResult``) followed by one ZeroMQ frame per array it lists: raw
little-endian bytes, row ``i`` for entry ``i`` of the request. :class:`BatchArrays` wraps them with
:func:`numpy.frombuffer` (no copy: the arrays are read-only views of the received frames) and builds no per-entry
Python objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["BatchArrays", "decode_batch_arrays"]

_DTYPES: dict[str, np.dtype[Any]] = {"<f8": np.dtype("<f8"), "<f4": np.dtype("<f4"), "|u1": np.dtype("|u1")}
# Arrays of 0/1 bytes read as bool (the same bytes; numpy's bool is one byte).
_BOOLS = frozenset(("terminated", "truncated", "ok", "mask"))
# The per-entry columns every binary reply has, and every array name a reply may have.
_COLUMNS = ("reward", "terminated", "truncated", "ok", "exit_code", "reward_cents", "step", "funds_cents", "terminal_reason")
_ARRAY_NAMES = frozenset((*_COLUMNS, "obs", "mask"))


class BatchArrays:
    """The result of :meth:`ycgym.Client.step_batch_arrays`: one row per request entry.

    Attributes (numpy arrays with a leading ``n`` axis, read-only views of the reply's frames):
        reward: ``float64``. terminated, truncated, ok: ``bool``. exit_code: ``uint8``.
        reward_cents, step, funds_cents: ``float64`` holding exact integers (JSON's numbers).
        terminal_reason: ``uint8`` codes; :attr:`terminal_reasons` maps a code to ``None`` or the reason.
        obs: ``float32`` ``(n, obs_size)`` and mask: ``bool`` ``(n, n_actions)`` of Discrete sessions, else ``None``.
    Lists of ``n``: text, command, action_text, admissible_commands (``None`` when no entry has them).
    errors: the failed entries as :class:`ycgym.ProtocolError` (``index`` set); their rows are zeros.
    recording_stopped: the server's ``recording_stopped`` note by entry index, for the entries whose session's recording
    it stopped (empty for most steps).
    """

    __slots__ = (
        "action_text",
        "admissible_commands",
        "command",
        "errors",
        "exit_code",
        "funds_cents",
        "mask",
        "n",
        "obs",
        "ok",
        "recording_stopped",
        "reward",
        "reward_cents",
        "step",
        "terminal_reason",
        "terminal_reasons",
        "terminated",
        "text",
        "truncated",
    )

    n: int
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    ok: np.ndarray
    exit_code: np.ndarray
    reward_cents: np.ndarray
    step: np.ndarray
    funds_cents: np.ndarray
    terminal_reason: np.ndarray
    terminal_reasons: tuple[str | None, ...]
    obs: np.ndarray | None
    mask: np.ndarray | None
    text: list[str]
    command: list[str | None]
    action_text: list[str | None]
    admissible_commands: list[list[str] | None] | None
    errors: list[Any]
    recording_stopped: dict[int, dict[str, Any]]

    def reasons(self) -> np.ndarray:
        """``terminal_reason`` decoded: an ``object`` array of ``None`` or the reason string."""
        table = np.asarray(self.terminal_reasons, dtype=object)
        reasons: np.ndarray = table[self.terminal_reason]
        return reasons

    def raise_first(self) -> None:
        """Raise the first failed entry's :class:`ycgym.ProtocolError`, if any."""
        if self.errors:
            raise self.errors[0]

    def __repr__(self) -> str:
        shape = "" if self.obs is None else f", obs {self.obs.shape}"
        return f"BatchArrays(n={self.n}{shape}, errors={len(self.errors)})"


def decode_batch_arrays(result: Mapping[str, Any], frames: Sequence[bytes], error_type: Any) -> BatchArrays:
    """Wrap a binary reply's header ``result`` and array ``frames``; ``ValueError`` (only) when they do not fit together."""
    if not isinstance(result, Mapping):
        raise ValueError("the header's result is not an object")
    n = result.get("n")
    descs = result.get("arrays")
    if type(n) is not int or n < 1 or not isinstance(descs, list):
        raise ValueError("the header has no valid n or arrays")
    if len(frames) != len(descs):
        raise ValueError(f"the header lists {len(descs)} arrays, the reply has {len(frames)} array frames")
    out = BatchArrays()
    out.obs = None
    out.mask = None
    seen: set[str] = set()
    for d, f in zip(descs, frames):
        if not isinstance(d, Mapping):
            raise ValueError("an array description is not an object")
        name, dtype, shape = d.get("name"), d.get("dtype"), d.get("shape")
        dt = _DTYPES.get(dtype) if isinstance(dtype, str) else None
        if dt is None or not isinstance(name, str) or name not in _ARRAY_NAMES or name in seen:
            raise ValueError(f"array {name!r}: unknown or repeated name, or unknown dtype {dtype!r}")
        seen.add(name)
        if not isinstance(shape, list) or not 1 <= len(shape) <= 2 or shape[0] != n or not all(type(x) is int and x >= 0 for x in shape):
            raise ValueError(f"array {name}: bad shape {shape!r} (n {n})")
        count = shape[0] * (shape[1] if len(shape) == 2 else 1)
        if len(f) != count * dt.itemsize:
            raise ValueError(f"array {name}: {len(f)} bytes for shape {shape} of {dt.str}")
        a = np.frombuffer(f, dtype=np.bool_ if name in _BOOLS and dt.itemsize == 1 else dt)
        setattr(out, name, a.reshape(shape) if len(shape) == 2 else a)
    missing = [name for name in _COLUMNS if name not in seen]
    if missing:
        raise ValueError(f"the reply has no {missing[0]} array")
    out.n = n
    out.terminal_reasons = (None, *_strings(result.get("terminal_reasons"), "terminal_reasons", None))
    if int(out.terminal_reason.max(initial=0)) >= len(out.terminal_reasons):
        raise ValueError("a terminal_reason code outside the header's table")
    out.text = _strings(result.get("text"), "text", n)
    out.command = _strings(result.get("command"), "command", n, nullable=True)
    out.action_text = _strings(result.get("action_text"), "action_text", n, nullable=True)
    adm = result.get("admissible_commands")
    if adm is not None and (not isinstance(adm, list) or len(adm) != n or not all(x is None or (type(x) is list and all(type(c) is str for c in x)) for x in adm)):
        raise ValueError("admissible_commands is not a list of n lists of strings or nulls")
    out.admissible_commands = adm
    errs = result.get("errors")
    if not isinstance(errs, list):
        raise ValueError("errors is not a list")
    out.errors = []
    for e in errs:
        err = e.get("error") if isinstance(e, Mapping) else None
        index = e.get("index") if isinstance(e, Mapping) else None
        if not isinstance(err, Mapping) or type(index) is not int or not 0 <= index < n:
            raise ValueError("an errors entry is not {index, error}")
        out.errors.append(error_type(str(err.get("code", "internal")), str(err.get("message", "")), index=index))
    out.recording_stopped = {}
    for e in result.get("recording_stopped") or ():
        index = e.get("index") if isinstance(e, Mapping) else None
        note = e.get("recording") if isinstance(e, Mapping) else None
        if type(index) is not int or not 0 <= index < n or not isinstance(note, Mapping):
            raise ValueError("a recording_stopped entry is not {index, recording}")
        out.recording_stopped[index] = dict(note)
    return out


def _strings(v: Any, what: str, n: int | None, nullable: bool = False) -> list[Any]:
    """A list of strings (or nulls) of length ``n`` (any length when None), else ``ValueError``."""
    if not isinstance(v, list) or (n is not None and len(v) != n) or not all(isinstance(x, str) or (nullable and x is None) for x in v):
        raise ValueError(f"{what} is not a list of {'n ' if n is not None else ''}strings{' or nulls' if nullable else ''}")
    return v
