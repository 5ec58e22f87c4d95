"""bench/bench_step.py runs and prints the JSON keys that checks outside the project read (a smoke run, not timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_step.py"

#: Keys read outside the project: kept stable (new keys may be added, none renamed).
STABLE_KEYS = {
    "echo_rtt_per_s",
    "client_step_per_s",
    "env_step_per_s",
    "ratio_client_step_vs_echo",
    "ratio_env_step_vs_echo",
    "step_batch_sessions",
    "step_batch_env_steps_per_s",
    "vector_env_steps_per_s",
}


def test_bench_step_prints_its_keys() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "30", "--batches", "3", "--sessions", "4", "--repeats", "1"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert STABLE_KEYS | {"discrete_vector_env_steps_per_s", "step_batch_binary_env_steps_per_s", "discrete_vector_json_env_steps_per_s"} <= set(got)
    assert got["step_batch_sessions"] == 4
    assert all(got[k] > 0 for k in STABLE_KEYS - {"step_batch_sessions"})
    # The checkout's build has dist/bench/zmq-echo.js beside the server: the Node echo is measured too.
    assert got["node_echo_rtt_per_s"] > 0
    assert abs(got["ratio_node_echo_vs_echo"] - got["node_echo_rtt_per_s"] / got["echo_rtt_per_s"]) < 0.002
