"""bench/pair_servers.py runs, lockstep and with --batch, and prints its JSON (a smoke run, not timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ycgym.server import find_server_command

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "pair_servers.py"


@pytest.mark.parametrize(("batch", "endpoint"), [(0, "pipe"), (5, "pipe"), (5, "tcp://127.0.0.1:0")])
def test_pair_servers_prints_both_builds(batch: int, endpoint: str) -> None:
    cmd = find_server_command(os.environ.get("YCGYM_NODE_ENTRY"))
    if len(cmd) != 2:
        pytest.skip("the server is not a main.js run by node here (an installed ycgym command)")
    entry = cmd[1]  # the server's main.js
    args = [sys.executable, str(SCRIPT), "--a", entry, "--b", entry, "--endpoint", endpoint, "--windows", "2", "--steps", "3", "--warmup", "5", "--batch", str(batch)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert [x.startswith("window ") for x in lines[:-1]] == [True, True]
    got = json.loads(lines[-1])
    assert got["batch"] == batch and got["windows"] == 2 and got["endpoint"] == endpoint
    assert got["a_env_steps_per_s"] > 0 and got["b_env_steps_per_s"] > 0 and got["ratio_rate_b_over_a"] > 0
    assert got["a_main_cpu_us_per_step"] > 0 and got["ratio_main_a_over_b"] > 0


def test_pair_servers_refuses_a_negative_batch() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", "x", "--b", "y", "--batch", "-1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--batch" in out.stderr
