"""Whole against split ``step_batch`` requests, per transport and batch size (not a test).

``Client.step_batch`` sends a large batch as a few pipelined requests (``Client.send_step_batch``: the server runs one
part while this process decodes the one before). This script measures what that buys: for each transport (``pipe``:
the environments' own local server over two pipes; ``tcp``: ZeroMQ on loopback) and each batch size, one server and
two clients on it, one splitting (the default parts of the transport, or ``--part`` entries) and one sending every
batch whole, their sessions reset from the same seeds. The two step their batches in alternating rounds of
``--batches`` batches each (so the machine's other load falls on both alike); every round's rate is measured, and the
result is the median of the per-round ratios split/whole, with the median rates. The two clients' observations are
compared at the end of every round (they must be equal: splitting changes no result).

Prints one JSON object: ``{"rounds", "batches", "runs": [{"transport", "sessions", "part_entries", "parts",
"whole_env_steps_per_s", "split_env_steps_per_s", "ratio_split_vs_whole"}, ...]}``. Usage::

    YCGYM_NODE_ENTRY=dist/src/cli/main.js .venv/bin/python bindings/python/bench/bench_split.py --sessions 64,128,256
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from ycgym import Client, LocalServer
from ycgym.client import BATCH_PART_ENTRIES, BATCH_PART_ENTRIES_ZMQ, _batch_parts, _entries

ACTIONS = ["company status", "market browse --limit 5", "employee list", "task list"]
ENDPOINTS = {"pipe": "pipe", "tcp": "tcp://127.0.0.1:0"}


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def _observations(results: list[Any]) -> list[Any]:
    return [r["observation"] for r in results]


def measure(transport: str, sessions: int, part: int | None, rounds: int, batches: int, server_args: list[str]) -> dict[str, Any]:
    with LocalServer(ENDPOINTS[transport], args=server_args) as srv:
        split = Client(srv.endpoint, timeout=120, split_batches=True)
        whole = Client(srv.endpoint, timeout=120, split_batches=False)
        try:
            if part is not None:
                split._min_part = part
            # No episode ends: these commands do not move the clock.
            opts = {"stall_steps": 0}
            ids = {c: [c.reset(seed, options=opts)["session"] for seed in range(sessions)] for c in (split, whole)}
            steps = {c: [[(s, ACTIONS[(i + k) % len(ACTIONS)]) for i, s in enumerate(ids[c])] for k in range(len(ACTIONS))] for c in (split, whole)}
            parts = _batch_parts(_entries(steps[split][0]), split._min_part)
            rates: dict[Client, list[float]] = {split: [], whole: []}
            last: dict[Client, list[Any]] = {}
            for c in (split, whole):  # warm-up (JIT, caches)
                for k in range(len(ACTIONS)):
                    c.step_batch(steps[c][k])
            for r in range(rounds):
                for c in ((split, whole) if r % 2 == 0 else (whole, split)):
                    t0 = time.perf_counter()
                    for b in range(batches):
                        got = c.step_batch(steps[c][b % len(ACTIONS)])
                    rates[c].append(batches * sessions / (time.perf_counter() - t0))
                    last[c] = _observations(got)
                if last[split] != last[whole]:
                    raise SystemExit(f"{transport}, {sessions} sessions: split and whole batches returned different observations")
            ratios = [a / b for a, b in zip(rates[split], rates[whole])]
            return {
                "transport": transport,
                "sessions": sessions,
                "part_entries": split._min_part,
                "parts": parts,
                "whole_env_steps_per_s": round(statistics.median(rates[whole])),
                "split_env_steps_per_s": round(statistics.median(rates[split])),
                "ratio_split_vs_whole": round(statistics.median(ratios), 3),
            }
        finally:
            split.close()
            whole.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transports", default="pipe,tcp", help="comma-separated: pipe, tcp (default both)")
    ap.add_argument("--sessions", type=_ints, default=[64, 128, 256], help="batch sizes, comma-separated (default 64,128,256)")
    ap.add_argument("--part", type=int, default=None,
                    help=f"entries per part (default the client's: {BATCH_PART_ENTRIES} over the pipe, {BATCH_PART_ENTRIES_ZMQ} over ZeroMQ)")
    ap.add_argument("--rounds", type=int, default=11, help="alternating rounds (the median ratio is reported)")
    ap.add_argument("--batches", type=int, default=30, help="batches per client per round")
    ap.add_argument("--max-sessions", type=int, default=None, help="the server's --max-sessions (default: enough for the runs)")
    ap.add_argument("--max-sessions-per-client", type=int, default=None, help="the server's --max-sessions-per-client (default: enough)")
    a = ap.parse_args(argv)
    transports = [t.strip() for t in a.transports.split(",") if t.strip()]
    unknown = [t for t in transports if t not in ENDPOINTS]
    if unknown or not transports:
        print(f"bench_split.py: unknown transport(s) {unknown or transports}; expected some of {sorted(ENDPOINTS)}", file=sys.stderr)
        return 2
    if (a.part is not None and a.part < 1) or a.rounds < 1 or a.batches < 1:
        print("bench_split.py: --part, --rounds and --batches must be positive", file=sys.stderr)
        return 2
    need = max(a.sessions)
    per_client = a.max_sessions_per_client or max(need, 256)
    server_args = ["--max-sessions", str(a.max_sessions or max(2 * per_client, 1024)), "--max-sessions-per-client", str(per_client)]
    runs = [measure(t, n, a.part, a.rounds, a.batches, server_args) for t in transports for n in a.sessions]
    print(json.dumps({"rounds": a.rounds, "batches": a.batches, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
