"""bench/bench_step.py runs and prints the JSON keys that checks outside the project read (a smoke run, not timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    # Batched calls warm up as many times as a measured run makes them unless told otherwise.
    assert got["warmup_batches"] == 3
    # The servers' Node.js runtime, as the started server's command names it (under this test's environment).
    from ycgym.server import find_server_command

    node = find_server_command()[0]
    assert got["node"] == subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert got["node"].startswith("v")
    assert all(got[k] > 0 for k in STABLE_KEYS - {"step_batch_sessions"})
    # The checkout's build has dist/bench/zmq-echo.js beside the server: the Node echo is measured too.
    assert got["node_echo_rtt_per_s"] > 0
    assert_ratio(got, "ratio_node_echo_vs_echo", "node_echo_rtt_per_s", "echo_rtt_per_s")
    # The ZeroMQ client's spin, the same client with spin_us=0, and an echo whose client waits the same way.
    assert isinstance(got["spin_us"], int) and got["spin_us"] >= 0
    assert got["client_sleeping_step_per_s"] > 0 and got["echo_spinning_rtt_per_s"] > 0
    assert_ratio(got, "ratio_client_spin_vs_sleeping", "client_step_per_s", "client_sleeping_step_per_s")
    assert_ratio(got, "ratio_env_step_vs_spinning_echo", "env_step_per_s", "echo_spinning_rtt_per_s")
    # CPU per step: the client's own on every system; the server's (from /proc, per thread) on Linux.
    for k in CLIENT_CPU_KEYS:
        assert got[k] > 0, k
    for k in SERVER_CPU_KEYS:
        if sys.platform.startswith("linux"):
            assert got[k] is not None and got[k] >= 0, k
        else:
            assert got[k] is None, k
    # Each metered run's CPU per step, in the order of its rates: the medians above are taken from these lists.
    assert len(got["runs"]["batch"]) == 1 and len(got["cpu_runs"]["batch.client_main"]) == 1
    assert got["cpu_runs"]["batch.client_main"][0] == got["client_main_cpu_us_per_batch_env_step"]
    if sys.platform.startswith("linux"):
        assert got["cpu_runs"]["batch.server_other"][0] == got["server_other_cpu_us_per_batch_env_step"]
        # The server's main thread does the work of every step.
        assert got["server_main_cpu_us_per_step"] > 0 and got["server_main_cpu_us_per_batch_env_step"] > 0
        assert got["client_main_cpu_us_per_step"] <= got["client_cpu_us_per_step"] + 1
        # The echo processes' own CPU per round trip (the transport floors of a pyzmq and of a zeromq.js server).
        for k in ("echo_server_main_cpu_us_per_rtt", "node_echo_server_main_cpu_us_per_rtt"):
            assert got[k] is not None and got[k] > 0, k
        for k in ("echo_server_other_cpu_us_per_rtt", "node_echo_server_other_cpu_us_per_rtt"):
            assert got[k] is not None and got[k] >= 0, k
    # The pipe transport, measured where pipes exist (POSIX), with its ratios computed from the rates of the same run.
    if os.name == "posix":
        for k in PIPE_RATE_KEYS:
            assert got[k] > 0, k
        assert_ratio(got, "ratio_env_pipe_step_vs_echo", "env_pipe_step_per_s", "echo_rtt_per_s")
        assert_ratio(got, "ratio_env_pipe_step_vs_pipe_echo", "env_pipe_step_per_s", "pipe_echo_rtt_per_s")
        # The client polls the pipe before sleeping (a whole number of microseconds), and the run also measures the
        # same env with spin_us=0 against it.
        assert isinstance(got["pipe_spin_us"], int) and got["pipe_spin_us"] >= 0
        assert got["env_pipe_sleeping_step_per_s"] > 0
        assert_ratio(got, "ratio_env_pipe_spin_vs_sleeping", "env_pipe_step_per_s", "env_pipe_sleeping_step_per_s")
        assert got["pipe_echo_spinning_rtt_per_s"] > 0
        assert_ratio(got, "ratio_env_pipe_step_vs_spinning_pipe_echo", "env_pipe_step_per_s", "pipe_echo_spinning_rtt_per_s")
        assert got["client_cpu_us_per_pipe_env_step"] > 0
        if sys.platform.startswith("linux"):
            assert got["server_main_cpu_us_per_pipe_step"] > 0
    else:
        assert all(got[k] is None for k in PIPE_RATE_KEYS)


def assert_ratio(got: dict[str, object], ratio: str, x: str, y: str) -> None:
    """``got[ratio]`` is ``got[x] / got[y]``: the ratio is taken from the unrounded medians and rounded to 3 places and
    the two rates are rounded to integers, so they agree within 0.0005 (the ratio's rounding) plus the rates' own
    rounding (half a unit each, relative; large when a loaded machine makes a smoke run's rates small)."""
    n, e = got[x], got[y]
    assert isinstance(n, int) and isinstance(e, int) and n > 0 and e > 0, (x, y)
    bound = 0.0005 + (n / e) * (0.5 / n + 0.5 / e) * 1.01 + 1e-9
    assert abs(got[ratio] - n / e) <= bound, (ratio, got[ratio], n, e)  # type: ignore[operator]


PIPE_RATE_KEYS = {
    "pipe_echo_rtt_per_s",
    "client_pipe_step_per_s",
    "env_pipe_step_per_s",
    "step_batch_pipe_env_steps_per_s",
    "step_batch_binary_pipe_env_steps_per_s",
    "discrete_vector_pipe_env_steps_per_s",
    "vector_pipe_env_steps_per_s",
}


CLIENT_CPU_KEYS = {
    "client_cpu_us_per_step",
    "client_main_cpu_us_per_step",
    "client_cpu_us_per_env_step",
    "client_main_cpu_us_per_env_step",
    "client_cpu_us_per_batch_env_step",
    "client_main_cpu_us_per_batch_env_step",
    "echo_client_cpu_us_per_rtt",
}
SERVER_CPU_KEYS = {
    f"server{part}_cpu_us_per_{what}" for part in ("", "_main", "_other") for what in ("step", "batch_env_step", "binary_batch_env_step")
}


def test_bench_step_refuses_a_negative_warm_up() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--warmup-batches", "-1"], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 2 and "--warmup-batches must be 0 or more, got -1" in out.stderr, out.stderr[-2000:]


def test_thread_cpu_reads_this_process() -> None:
    """The /proc reader sees this process's threads, and their CPU time grows with work (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_step  # found on the sys.path entry made just above (and by mypy: bench/ is among its files)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    pid = os.getpid()
    before = bench_step._thread_cpu_ns(pid)
    assert before is not None and pid in before
    t = time.thread_time()
    while time.thread_time() - t < 0.05:
        pass
    after = bench_step._thread_cpu_ns(pid)
    assert after is not None
    grew = after[pid] - before[pid]
    # 50 ms of this thread's CPU, read with clock-tick resolution at worst.
    assert 0.03e9 <= grew <= 1e9, grew
    assert bench_step._thread_cpu_ns(2**22 + 12345) is None  # no such process


def test_bench_spin_prints_both_settings_per_process_count() -> None:
    script = SCRIPT.with_name("bench_spin.py")
    out = subprocess.run(
        [sys.executable, str(script), "--procs", "1,2", "--seconds", "0.2", "--repeats", "1"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert [r["procs"] for r in got["rows"]] == [1, 2]
    for r in got["rows"]:
        assert r["sleeping_steps_per_s"] > 0 and r["spinning_steps_per_s"] > 0
        assert len(r["runs"]["sleeping"]) == len(r["runs"]["spinning"]) == 1
        assert_ratio(r, "ratio_spinning_vs_sleeping", "spinning_steps_per_s", "sleeping_steps_per_s")
    bad = subprocess.run([sys.executable, str(script), "--procs", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "positive process counts" in bad.stderr
