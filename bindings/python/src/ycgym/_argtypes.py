"""argparse types of the Python command lines (``ycgym-llm``, ``python -m ycgym.ray``, the OpenEnv server): each
refuses a value out of its range with ``must be <rule>, got <value>``, which argparse prints after the flag."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from .splits import MAX_SEED


def int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An integer from ``lo`` (to ``hi``, when given)."""
    rule = f"an integer from {lo} to {hi}" if hi is not None else f"an integer >= {lo}"

    def parse(v: str) -> int:
        try:
            n = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {v!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {v!r}")
        return n

    return parse


def float_where(ok: Callable[[float], bool], rule: str) -> Callable[[str], float]:
    """A number for which ``ok`` holds (``rule`` says which)."""

    def parse(v: str) -> float:
        try:
            f = float(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {v!r}") from None
        if not ok(f):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {v!r}")
        return f

    return parse


nonneg_float = float_where(lambda f: f >= 0 and math.isfinite(f), "a finite number >= 0")
positive_float = float_where(lambda f: f > 0 and math.isfinite(f), "a finite number > 0")
unit_float = float_where(lambda f: 0 <= f <= 1, "a number from 0 to 1")
seed = int_in(-MAX_SEED, MAX_SEED)
"""A world seed: a safe integer (the protocol's seeds are JSON numbers)."""
