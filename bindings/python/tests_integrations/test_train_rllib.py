"""Smoke test of examples/train_rllib.py (RLlib PPO with action masking; ``make test-integrations`` installs torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("ray.rllib.algorithms.ppo")

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "train_rllib.py"


def test_train_rllib_runs_one_tiny_iteration_and_prints_the_json_line() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--iterations", "1", "--env-runners", "2", "--num-cpus", "2", "--batch-size", "128", "--minibatch-size", "64", "--num-epochs", "1", "--max-steps", "40"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("iteration 1: episode_return_mean")
    got = json.loads(lines[-1])
    assert set(got) >= {"iterations", "env_steps", "episode_return_mean", "seconds"}
    assert got["iterations"] == 1 and got["env_steps"] >= 128 and got["seconds"] > 0
    # 128 steps over two runners with episodes cut at 40 steps: some episodes finished, so the mean is a number.
    assert got["episodes"] >= 1 and isinstance(got["episode_return_mean"], float)
