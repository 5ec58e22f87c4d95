"""The README example runs as a script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


REPO = EXAMPLE.parents[3]


def _runnable_blocks(doc: Path) -> list[str]:
    """The doc's self-contained Python blocks: those that start with their imports (the others are fragments)."""
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
    return [b for b in blocks if b.startswith(("import ", "from "))]


def test_package_readme_and_discrete_doc_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Every self-contained Python example of bindings/python/README.md and docs/discrete.md runs as written (the
    first is train_loop.py, run above as a script, so it is left out here)."""
    blocks = _runnable_blocks(REPO / "bindings" / "python" / "README.md")[1:] + _runnable_blocks(REPO / "docs" / "discrete.md")
    assert len(blocks) == 3, blocks
    for code in blocks:
        namespace: dict[str, object] = {}
        exec(compile(code, "example", "exec"), namespace)
        for name in ("env", "vec"):
            obj = namespace.get(name)
            if obj is not None:
                obj.close()  # type: ignore[attr-defined]
    # DiscreteGreedy on seed 1 (both package README examples), then the first valid action of docs/discrete.md.
    assert capsys.readouterr().out == "42029521 horizon_end\n223 True 42029521\ntask accept --task-id Task-10\n"
