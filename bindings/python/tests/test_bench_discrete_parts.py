"""bench/bench_discrete_parts.py runs over both transports and prints its JSON (a smoke run, not timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_discrete_parts.py"


@pytest.mark.parametrize("endpoint", ["pipe", "tcp://127.0.0.1:0"])
def test_bench_discrete_parts_splits_an_env_step(endpoint: str) -> None:
    args = [sys.executable, str(SCRIPT), "--envs", "3", "--steps", "40", "--warmup", "2", "--resets", "1", "--endpoint", endpoint]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["endpoint"] == endpoint and got["envs"] == 3 and got["steps"] == 40
    assert got["env_steps_per_s"] > 0 and got["wall_us_per_env_step"] > 0
    # The parts of the wall time: waits and sends within it, the rest the env's own work.
    assert 0 <= got["client_wait_us_per_env_step"] <= got["wall_us_per_env_step"]
    assert 0 <= got["client_send_us_per_env_step"] <= got["wall_us_per_env_step"]
    parts = got["client_wait_us_per_env_step"] + got["client_send_us_per_env_step"] + got["client_work_us_per_env_step"]
    assert parts == pytest.approx(got["wall_us_per_env_step"], abs=0.05)
    assert got["fresh_reset_wall_us"] > 0 and got["fresh_reset_client_main_cpu_us"] >= 0
    if Path("/proc/self/task").is_dir():
        assert got["server_main_cpu_us_per_env_step"] > 0 and got["fresh_reset_server_main_cpu_us"] > 0


@pytest.mark.parametrize("extra", [["--envs", "0"], ["--steps", "0"], ["--resets", "0"], ["--warmup", "-1"]])
def test_bench_discrete_parts_refuses_bad_counts(extra: list[str]) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), *extra], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "must be" in out.stderr
