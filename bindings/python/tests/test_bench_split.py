"""bench/bench_split.py runs and prints its JSON (a smoke run, not timings): per transport and batch size the parts it
measured, rates and the split/whole ratio; a bad transport is refused with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_split.py"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the pipe transport needs POSIX")


def test_bench_split_prints_its_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--sessions", "40", "--rounds", "2", "--batches", "2"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["rounds"] == 2 and got["batches"] == 2
    runs = {r["transport"]: r for r in got["runs"]}
    assert set(runs) == {"pipe", "tcp"}
    # 40 entries: two parts of 20 over the pipe (parts of at least 16), one request over ZeroMQ (at least 64).
    assert runs["pipe"]["parts"] == 2 and runs["pipe"]["part_entries"] == 16
    assert runs["tcp"]["parts"] == 1 and runs["tcp"]["part_entries"] == 64
    for r in got["runs"]:
        assert r["sessions"] == 40
        assert r["whole_env_steps_per_s"] > 0 and r["split_env_steps_per_s"] > 0 and r["ratio_split_vs_whole"] > 0


def test_bench_split_refuses_an_unknown_transport() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--transports", "carrier-pigeon"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "unknown transport" in out.stderr
