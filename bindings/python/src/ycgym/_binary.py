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


class BatchArrays:
    """The result of :meth:`ycgym.Client.step_batch_arrays`: one row per request entry.

    Attributes (numpy arrays with a leading ``n`` axis, read-only views of the reply's frames):
        reward: ``float64``. terminated, truncated, ok: ``bool``. exit_code: ``uint8``.
        reward_cents, step, funds_cents: ``float64`` holding exact integers (JSON's numbers).
        terminal_reason: ``uint8`` codes; :attr:`terminal_reasons` maps a code to ``None`` or the reason.
        obs: ``float32`` ``(n, obs_size)`` and mask: ``bool`` ``(n, n_actions)`` of Discrete sessions, else ``None``.
    Lists of ``n``: text, command, action_text, admissible_commands (``None`` when no entry has them).
    errors: the failed entries as :class:`ycgym.ProtocolError` (``index`` set); their rows are zeros.
    """

    __slots__ = (
        "n",
        "reward",
        "terminated",
        "truncated",
        "ok",
        "exit_code",
        "reward_cents",
        "step",
        "funds_cents",
        "terminal_reason",
        "terminal_reasons",
        "obs",
        "mask",
        "text",
        "command",
        "action_text",
        "admissible_commands",
        "errors",
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

    def reasons(self) -> np.ndarray:
        """``terminal_reason`` decoded: an ``object`` array of ``None`` or the reason string."""
        table = np.asarray(self.terminal_reasons, dtype=object)
        return table[self.terminal_reason]

    def raise_first(self) -> None:
        """Raise the first failed entry's :class:`ycgym.ProtocolError`, if any."""
        if self.errors:
            raise self.errors[0]

    def __repr__(self) -> str:
        shape = "" if self.obs is None else f", obs {self.obs.shape}"
        return f"BatchArrays(n={self.n}{shape}, errors={len(self.errors)})"


def decode_batch_arrays(result: Mapping[str, Any], frames: Sequence[bytes], error_type: Any) -> BatchArrays:
    """Wrap a binary reply's header ``result`` and array ``frames``; ``ValueError`` when they do not fit together."""
    n = result.get("n")
    descs = result.get("arrays")
    if not isinstance(n, int) or n < 1 or not isinstance(descs, list):
        raise ValueError("the header has no valid n or arrays")
    if len(frames) != len(descs):
        raise ValueError(f"the header lists {len(descs)} arrays, the reply has {len(frames)} array frames")
    out = BatchArrays()
    out.obs = None
    out.mask = None
    for d, f in zip(descs, frames):
        name, dt, shape = d.get("name"), _DTYPES.get(d.get("dtype")), d.get("shape")
        if dt is None or not isinstance(name, str) or name not in BatchArrays.__slots__:
            raise ValueError(f"array {name!r}: unknown name or dtype {d.get('dtype')!r}")
        if not isinstance(shape, list) or not 1 <= len(shape) <= 2 or shape[0] != n or not all(isinstance(x, int) and x >= 0 for x in shape):
            raise ValueError(f"array {name}: bad shape {shape!r} (n {n})")
        count = shape[0] * (shape[1] if len(shape) == 2 else 1)
        if len(f) != count * dt.itemsize:
            raise ValueError(f"array {name}: {len(f)} bytes for shape {shape} of {dt.str}")
        a = np.frombuffer(f, dtype=np.bool_ if name in _BOOLS and dt.itemsize == 1 else dt)
        setattr(out, name, a.reshape(shape) if len(shape) == 2 else a)
    for name in ("reward", "terminated", "truncated", "ok", "exit_code", "reward_cents", "step", "funds_cents", "terminal_reason"):
        if not hasattr(out, name):
            raise ValueError(f"the reply has no {name} array")
    out.n = n
    out.terminal_reasons = (None, *result.get("terminal_reasons", ()))
    if int(out.terminal_reason.max(initial=0)) >= len(out.terminal_reasons):
        raise ValueError("a terminal_reason code outside the header's table")
    out.text = result.get("text") or [""] * n
    out.command = result.get("command") or [None] * n
    out.action_text = result.get("action_text") or [None] * n
    out.admissible_commands = result.get("admissible_commands")
    out.errors = []
    for e in result.get("errors") or ():
        err = e.get("error") or {}
        out.errors.append(error_type(str(err.get("code", "internal")), str(err.get("message", "")), index=int(e.get("index", -1))))
    return out
