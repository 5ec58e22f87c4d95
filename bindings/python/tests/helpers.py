"""Test helpers (paths of the shared fixtures, golden episodes, exact comparisons)."""

from __future__ import annotations

import gzip
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import zmq

from ycgym import Client, YCBenchVectorEnv

REPO = Path(__file__).resolve().parents[3]
PARITY = REPO / "test" / "fixtures" / "parity" / "trajectories"
CONTRACT = REPO / "test" / "contract"


def golden_episode(name: str) -> dict[str, Any]:
    """One recorded reference episode (``{"seed", "policy", "preset", "steps": [{"cmd","exit","out"}]}``)."""
    with gzip.open(PARITY / name, "rt", encoding="utf-8") as f:
        data = json.load(f)
    episode: dict[str, Any] = data[0] if isinstance(data, list) else data
    return episode


def golden_commands(name: str) -> list[str]:
    return [s["cmd"] for s in golden_episode(name)["steps"]]


def same(a: Any, b: Any) -> bool:
    """Exact structural equality (numpy arrays by dtype, shape and value; 1 and 1.0 differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        if a.dtype == object:
            return a.shape == b.shape and all(same(x, y) for x, y in zip(a.flat, b.flat))
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    return bool(a == b)


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def parse_out(text: str) -> Any:
    """A command's output as the golden files store it (JSON value, or the raw text)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def normalize(v: Any) -> Any:
    """Replace UUID-valued strings by ``<uuid>``, as the golden files do."""
    if isinstance(v, str):
        return "<uuid>" if _UUID.fullmatch(v) else v
    if isinstance(v, list):
        return [normalize(x) for x in v]
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in v.items()}
    return v


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def check_env_without_warnings(env_id: str, **kwargs: Any) -> None:
    """Gymnasium's ``check_env`` on ``gymnasium.make(env_id, **kwargs)`` passes and warns nothing."""
    import warnings

    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id, **kwargs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


@contextmanager
def fake_server(**client_options: Any) -> Iterator[tuple[Client, zmq.Socket[bytes]]]:
    """A fake ZeroMQ server for tests of how the client takes replies: a ROUTER on a free loopback port that the test
    answers by hand, and a client connected to it (``Client(endpoint, timeout=5, **client_options)``), closed on exit."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    options: dict[str, Any] = {"timeout": 5, **client_options}
    c = Client(f"tcp://127.0.0.1:{port}", **options)
    try:
        yield c, router
    finally:
        c.close()
        router.close(0)


def spoil_reply(env: Any, op: str, spoil: Callable[[dict[str, Any]], Any], k: int = 0) -> None:
    """Hook ``env``'s client so that ``spoil`` changes, in place, the decoded reply to the ``k``-th ``op`` request it
    sends from now on (counting from 0), or raises what decoding it raises, once. The server ran that request."""
    c = env.client
    send = c._send_payload
    ids: list[int] = []

    def hooked(rid: int, sent: str, payload: bytes) -> None:
        if sent == op:
            ids.append(rid)
        send(rid, sent, payload)

    def decode(frames: list[bytes]) -> dict[str, Any]:
        reply: dict[str, Any] = Client._decode(frames)
        if len(ids) <= k or reply.get("id") != ids[k]:
            return reply
        del c._decode, c._send_payload  # once
        spoil(reply)
        return reply

    c._send_payload = hooked
    c._decode = decode


def wait_reaped(server: Any, sessions: int, timeout: float = 10.0) -> bool:
    """Whether ``server`` (a ``LocalServer`` logging to stderr, not ``--quiet``) reaped ``sessions`` idle sessions within
    ``timeout`` seconds: its "reaped idle sessions" log lines, polled. A test that waits for the reaper this way takes as
    long as the reaping does, and a server given no CPU for a while does not fail it (a fixed sleep did)."""
    end = time.monotonic() + timeout
    while True:
        reaped = 0
        for line in server.stderr_tail.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("msg") == "reaped idle sessions":
                reaped += len(entry.get("sessions") or ())
        if reaped >= sessions:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


def key_orders(x: Any) -> Any:
    """Key order, recursively (``same`` compares keys as sets): the vector infos' tests compare it."""
    if isinstance(x, dict):
        return [(k, key_orders(v)) for k, v in x.items()]
    return None


def dtypes_of(x: Any) -> Any:
    """The dtype (an array's) or type of every value, recursively."""
    if isinstance(x, dict):
        return {k: dtypes_of(v) for k, v in x.items()}
    return x.dtype if isinstance(x, np.ndarray) else type(x)


def bare_vector_env(n: int, max_text_length: int) -> YCBenchVectorEnv:
    """A ``YCBenchVectorEnv`` of ``n`` sub-environments with no server (sessions ``s0``..): enough for its info building."""
    v = YCBenchVectorEnv.__new__(YCBenchVectorEnv)
    v.num_envs = n
    v.max_text_length = max_text_length
    v._sessions = [f"s{i}" for i in range(n)]
    return v


def folded_infos(v: YCBenchVectorEnv, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The vector info Gymnasium's ``_add_info`` folds from each result's ``make_info`` (the reference of the direct path)."""
    import gymnasium as gym

    from ycgym.env import make_info

    ref: dict[str, Any] = {}
    for i, r in enumerate(results):
        ref = gym.vector.VectorEnv._add_info(v, ref, make_info(r, v._sessions[i], v.max_text_length), i)  # type: ignore[arg-type]
    return ref
