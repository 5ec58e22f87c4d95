"""The README example runs as a script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_loop.py"


def test_train_loop_example_runs() -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"steps=40 return=\$-?[\d,]+\.\d\d funds=\$-?[\d,]+\.\d\d reason=max_steps\n", out.stdout), out.stdout


def test_example_loop_is_short() -> None:
    src = EXAMPLE.read_text().splitlines()
    start = next(i for i, line in enumerate(src) if line.startswith("while "))
    end = next(i for i in range(start + 1, len(src)) if not src[i].startswith((" ", "\t")))
    assert end - start <= 10


MASKED = EXAMPLE.parent / "masked_random.py"


def test_masked_example_runs() -> None:
    """The README's masked Discrete example: random valid actions until the episode ends by itself."""
    out = subprocess.run([sys.executable, str(MASKED)], capture_output=True, text=True, timeout=240, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"\(\d+,\) Discrete\(\d+\) return=\$-?[\d,]+\.\d\d (bankruptcy|horizon_end|stall)\n", out.stdout), out.stdout
