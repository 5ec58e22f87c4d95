"""bench/bench_start.py runs and prints its JSON (a smoke run, not timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_start.py"


def test_bench_start_prints_its_runs() -> None:
    entry = os.environ.get("YCGYM_NODE_ENTRY")
    args = [sys.executable, str(SCRIPT), "--repeats", "1", "--transport", "tcp"] + (["--entry", entry, "--entry", entry] if entry else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["repeats"] == 1 and got["transport"] == "tcp"
    assert len(got["runs"]) == (2 if entry else 1)
    assert all(r["start_ms"] > 0 and r["first_restore_ms"] > 0 for r in got["runs"])
