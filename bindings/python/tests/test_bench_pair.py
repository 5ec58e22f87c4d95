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


@pytest.mark.parametrize(("batch", "endpoint", "binary"), [(0, "pipe", False), (5, "pipe", False), (5, "tcp://127.0.0.1:0", False), (5, "pipe", True)])
def test_pair_servers_prints_both_builds(batch: int, endpoint: str, binary: bool) -> None:
    cmd = find_server_command(os.environ.get("YCGYM_NODE_ENTRY"))
    if len(cmd) != 2:
        pytest.skip("the server is not a main.js run by node here (an installed ycgym command)")
    entry = cmd[1]  # the server's main.js
    args = [sys.executable, str(SCRIPT), "--a", entry, "--b", entry, "--endpoint", endpoint, "--windows", "2", "--steps", "3", "--warmup", "5", "--batch", str(batch)]
    out = subprocess.run(args + (["--binary"] if binary else []), capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert [x.startswith("window ") for x in lines[:-1]] == [True, True]
    got = json.loads(lines[-1])
    assert got["batch"] == batch and got["windows"] == 2 and got["endpoint"] == endpoint and got["binary"] is binary
    assert got["a_env_steps_per_s"] > 0 and got["b_env_steps_per_s"] > 0 and got["ratio_rate_b_over_a"] > 0
    assert got["a_main_cpu_us_per_step"] > 0 and got["ratio_main_a_over_b"] > 0


def test_pair_servers_discrete_steps_masked_vector_envs_on_both_builds() -> None:
    cmd = find_server_command(os.environ.get("YCGYM_NODE_ENTRY"))
    if len(cmd) != 2:
        pytest.skip("the server is not a main.js run by node here (an installed ycgym command)")
    entry = cmd[1]
    args = [sys.executable, str(SCRIPT), "--a", entry, "--b", entry, "--windows", "2", "--steps", "3", "--warmup", "4", "--discrete", "2"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["discrete"] == 2 and got["batch"] == 0 and got["windows"] == 2
    assert got["a_env_steps_per_s"] > 0 and got["b_env_steps_per_s"] > 0 and got["a_main_cpu_us_per_step"] > 0


@pytest.mark.parametrize("extra", [["--discrete", "-1"], ["--discrete", "2", "--batch", "2"]])
def test_pair_servers_refuses_a_bad_discrete(extra: list[str]) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", "x", "--b", "y", *extra], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--discrete" in out.stderr


def test_pair_servers_refuses_a_negative_batch() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", "x", "--b", "y", "--batch", "-1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--batch" in out.stderr


def test_pair_servers_refuses_binary_without_a_batch() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", "x", "--b", "y", "--binary"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--binary needs --batch" in out.stderr


PAIR_CLIENTS = Path(__file__).resolve().parents[1] / "bench" / "pair_clients.py"


@pytest.mark.parametrize("endpoint", ["pipe", "tcp://127.0.0.1:0"])
def test_pair_clients_prints_both_versions(endpoint: str) -> None:
    import ycgym

    src = str(Path(ycgym.__file__).resolve().parents[1])  # this package's own folder, as both A and B
    args = [sys.executable, str(PAIR_CLIENTS), "--a", src, "--b", src, "--endpoint", endpoint, "--rounds", "1", "--sessions", "3", "--steps", "2", "--windows", "1"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["endpoint"] == endpoint and got["rounds"] == 1 and got["sessions"] == 3
    assert [r["workload"] for r in got["runs"]] == ["vector_env_steps_per_s", "step_batch_env_steps_per_s", "env_step_per_s", "client_step_per_s", "env_step_replayed_per_s"]
    assert all(r["a_median"] > 0 and r["b_median"] > 0 and r["ratio_b_over_a"] > 0 and len(r["round_ratios"]) == 1 for r in got["runs"])


def test_pair_clients_refuses_a_folder_without_the_package(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(PAIR_CLIENTS), "--a", str(tmp_path), "--b", str(tmp_path), "--rounds", "1", "--sessions", "2", "--steps", "1", "--windows", "1"],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode != 0 and "imported ycgym from" in out.stderr


def test_pair_clients_refuses_zero_rounds() -> None:
    out = subprocess.run([sys.executable, str(PAIR_CLIENTS), "--a", "x", "--b", "y", "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--rounds" in out.stderr


ZMQ_FLOOR = Path(__file__).resolve().parents[1] / "bench" / "bench_zmq_floor.py"


def test_bench_zmq_floor_prints_every_configuration() -> None:
    if not (Path(__file__).resolve().parents[3] / "node_modules" / "zeromq").is_dir():
        pytest.skip("no zeromq.js in the repository's node_modules (npm ci)")
    args = [sys.executable, str(ZMQ_FLOOR), "--sizes", "100,5000", "--windows", "2", "--messages", "3", "--request-bytes", "200"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["windows"] == 2 and got["messages"] == 3 and got["request_bytes"] == 200 and len(got["loadavg"]) == 3
    for mode in ("view", "string", "view-nowait"):
        for size in (100, 5000):
            assert got[f"{mode}_{size}_main_us_per_message"] > 0 and got[f"{mode}_{size}_ratio_view_over_this"] > 0


def test_bench_zmq_floor_refuses_an_unknown_mode() -> None:
    out = subprocess.run([sys.executable, str(ZMQ_FLOOR), "--modes", "view,copy"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--modes" in out.stderr
