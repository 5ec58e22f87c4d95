"""How long a ``LocalServer`` takes to start (not a test): from ``LocalServer(...)`` to a server that answers, the wait
every process pays before its first environment (median over ``--repeats``, the servers given alternating).

Each ``--entry`` is a CLI ``main.js`` to time (a checkout's ``dist/src/cli/main.js``, or the bundled server of a wheel
or of ``node dist/scripts/package/bundle-server.js --out DIR``: ``DIR/dist/src/cli/main.js``); without one, the server
this package would start. Then, on each started server, the round trip of its first ``restore`` (a session reset, stepped
and snapshotted first). Prints one JSON object: ``{"repeats", "transport", "runs": [{"entry", "start_ms",
"first_restore_ms"}, ...]}``.

    .venv/bin/python bindings/python/bench/bench_start.py --entry OLD/dist/src/cli/main.js --entry dist/src/cli/main.js
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from ycgym import Client, LocalServer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entry", action="append", default=None, help="a CLI main.js to time (repeatable; default: this package's server)")
    ap.add_argument("--repeats", type=int, default=11, help="starts per server (the median is reported)")
    ap.add_argument("--transport", choices=["pipe", "tcp"], default="pipe", help="pipe (the envs' default on POSIX) or tcp")
    a = ap.parse_args(argv)
    entries: list[str | None] = list(a.entry) if a.entry else [None]
    endpoint = "pipe" if a.transport == "pipe" else "tcp://127.0.0.1:0"
    times: dict[int, list[float]] = {i: [] for i in range(len(entries))}
    restores: dict[int, list[float]] = {i: [] for i in range(len(entries))}
    for _ in range(a.repeats):
        for i, e in enumerate(entries):
            t = time.perf_counter()
            with LocalServer(endpoint, entry=e) as srv:
                c = Client(srv.endpoint)
                c.hello()  # answering: started, and its hello (every env's first request) built
                times[i].append(time.perf_counter() - t)
                # The server's first restore (what tree search and recovery pay once per server).
                s = c.reset(1)["session"]
                c.step(s, "market browse")
                snap = c.snapshot(s)
                t = time.perf_counter()
                c.restore(snap)
                restores[i].append(time.perf_counter() - t)
                c.close()

    def ms(xs: list[float]) -> float:
        return round(statistics.median(xs) * 1000, 1)

    runs = [{"entry": e, "start_ms": ms(times[i]), "first_restore_ms": ms(restores[i])} for i, e in enumerate(entries)]
    print(json.dumps({"repeats": a.repeats, "transport": a.transport, "runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
