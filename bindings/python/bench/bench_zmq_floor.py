"""The ZeroMQ transport's own CPU per message on the server's thread (not a test): a Node ROUTER that does nothing else.

Starts a Node echo server on the repository's zeromq.js (a ROUTER with the server's socket options: ``mandatory``, send
high-water mark 16, send timeout 0) and talks to it from a pyzmq DEALER in lockstep, as ``Client.step_batch`` does:
each request is ``--request-bytes`` bytes (a 64-entry ``step_batch`` is ~4 KB), each reply ``SIZE`` bytes (its JSON
reply ~85 KB). Per window the client picks how the server hands the reply to zeromq.js, then sends ``--messages``
requests; the server reports its main thread's CPU (``/proc/self/task/PID/schedstat``) over the window. Reply modes:

* ``view``: a Buffer view of a larger buffer (a JSON ``step_batch`` reply: the ``JsonWriter``'s bytes). zeromq.js sends
  a Buffer above 128 bytes without a copy and releases it later by a callback on the main thread.
* ``string``: the same bytes as a string (the other replies): zeromq.js copies it into a message of its own.
* ``view-nowait``: ``view``, with the send's promise not awaited.

The configurations take turns window by window (the order flips every window), so load from elsewhere hits them alike.
Prints one line per configuration, then one JSON line: per configuration the median CPU per message and the median of
the per-window ratios first configuration / this one (above 1: this one costs less), and the load average. A real
server's CPU per batch, for comparison: ``pair_servers.py --endpoint tcp://127.0.0.1:0 --batch 64``. Usage::

    .venv/bin/python bindings/python/bench/bench_zmq_floor.py [--sizes 4096,87000] [--modes view,string,view-nowait]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import zmq

ROOT = Path(__file__).resolve().parents[3]

SERVER = r"""
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
const { Router } = createRequire(process.argv[1])('zeromq');
const s = new Router({ linger: 0, mandatory: true, sendHighWaterMark: 16, sendTimeout: 0 });
await s.bind('tcp://127.0.0.1:0');
process.stdout.write(s.lastEndpoint + '\n');
const cpu = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
let mode = 'view', size = 0, src = Buffer.alloc(0), t0 = 0;
for (;;) {
  const [id, m] = await s.receive();
  if (m.length < 64 && m[0] === 0x71) { await s.send([id, 'bye']); break; }
  if (m.length < 64 && m[0] === 0x73) { [mode, size] = m.toString().slice(1).split(' '); size = Number(size); src = Buffer.alloc(size, 0x61); await s.send([id, 'ok']); t0 = cpu(); continue; }
  if (m.length < 64 && m[0] === 0x65) { await s.send([id, String(cpu() - t0)]); continue; }
  const w = Buffer.allocUnsafe(size + 256);
  src.copy(w);
  const body = mode === 'string' ? w.toString('utf8', 0, size) : w.subarray(0, size);
  if (mode === 'view-nowait') s.send([id, body]).catch(() => undefined);
  else await s.send([id, body]);
}
s.close();
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4096,87000", help="reply sizes in bytes, comma-separated")
    ap.add_argument("--modes", default="view,string,view-nowait", help="reply modes, comma-separated (the first is the reference)")
    ap.add_argument("--request-bytes", type=int, default=4096)
    ap.add_argument("--windows", type=int, default=40)
    ap.add_argument("--messages", type=int, default=300, help="requests per window and configuration")
    a = ap.parse_args()
    modes = a.modes.split(",")
    if not modes or any(m not in ("view", "string", "view-nowait") for m in modes):
        ap.error("--modes: view, string, view-nowait")
    configs = [(m, int(s)) for s in a.sizes.split(",") for m in modes]
    if any(size < 1 for _, size in configs) or a.windows < 1 or a.messages < 1 or a.request_bytes < 64:
        ap.error("sizes, windows and messages must be positive, --request-bytes at least 64")
    node = subprocess.Popen(
        ["node", "--input-type=module", "-e", SERVER, str(ROOT / "package.json")], stdout=subprocess.PIPE, text=True
    )
    assert node.stdout is not None
    endpoint = node.stdout.readline().strip()
    if not endpoint.startswith("tcp://"):
        node.kill()
        node.wait()
        sys.exit(f"the Node echo server did not start (zeromq.js is loaded from {ROOT}'s node_modules: run npm ci there)")
    ctx = zmq.Context()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(endpoint)
    payload = b"x" * a.request_bytes
    per: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    try:
        for mode, size in configs:  # warm-up
            d.send(f"s{mode} {size}".encode())
            d.recv()
            for _ in range(a.messages):
                d.send(payload)
                d.recv()
        for w in range(a.windows):
            for mode, size in configs if w % 2 == 0 else configs[::-1]:
                d.send(f"s{mode} {size}".encode())
                d.recv()
                for _ in range(a.messages):
                    d.send(payload)
                    d.recv()
                d.send(b"e")
                per[(mode, size)].append(int(d.recv()) / a.messages / 1000)
        d.send(b"q")
        d.recv()
    finally:
        d.close()
        ctx.term()
        try:
            node.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
    out: dict[str, object] = {"windows": a.windows, "messages": a.messages, "request_bytes": a.request_bytes, "loadavg": list(os.getloadavg())}
    for mode, size in configs:
        ref = per[(modes[0], size)]
        ratio = statistics.median(r / x for r, x in zip(ref, per[(mode, size)]))
        med = statistics.median(per[(mode, size)])
        print(f"{mode:12s} {size:8d} B: main thread {med:7.1f} us/message, {modes[0]}/this {ratio:.3f}", file=sys.stderr)
        out[f"{mode}_{size}_main_us_per_message"] = round(med, 1)
        out[f"{mode}_{size}_ratio_{modes[0]}_over_this"] = round(ratio, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
