"""A malformed ``snapshot`` reply (no ``snapshot`` field, a result that is no object, a snapshot that is no object) is
``ProtocolError("bad_reply")`` wherever an env reads one -- pickling any env, ``snapshot()`` of any env -- as every other
malformed reply is (it was a bare KeyError or TypeError, or a non-object carried into the pickle), and the env is left
as it was: it steps on, and pickles once the replies are whole again."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest

import ycgym
from ycgym.client import Client

SPOILS: dict[str, Callable[[dict[str, Any]], None]] = {
    "no snapshot": lambda r: r["result"].pop("snapshot"),
    "snapshot a string": lambda r: r["result"].__setitem__("snapshot", "x"),
    "snapshot null": lambda r: r["result"].__setitem__("snapshot", None),
    "snapshot a list": lambda r: r["result"].__setitem__("snapshot", [1]),
    "result a list": lambda r: r.__setitem__("result", [r["result"]]),
    "result a string": lambda r: r.__setitem__("result", "snapshot"),
}

MAKERS: dict[str, Callable[[str], Any]] = {
    "text": lambda at: ycgym.YCBenchEnv(endpoint=at),
    "discrete": lambda at: ycgym.YCBenchDiscreteEnv(endpoint=at),
    "vector": lambda at: ycgym.YCBenchVectorEnv(2, endpoint=at),
    "discrete-vector": lambda at: ycgym.YCBenchDiscreteVectorEnv(2, endpoint=at),
}


def _spoil_snapshots(monkeypatch: pytest.MonkeyPatch, spoil: Callable[[dict[str, Any]], None]) -> list[int]:
    """Spoil every ``snapshot`` reply any client reads from now on (``spoil`` changes the decoded reply in place); the
    list returned counts the replies spoiled."""
    decode = Client._decode
    spoiled: list[int] = []

    def spoiling(frames: list[bytes]) -> dict[str, Any]:
        reply: dict[str, Any] = decode(frames)
        result = reply.get("result")
        if reply.get("ok") and isinstance(result, dict) and "snapshot" in result:
            spoiled.append(1)
            spoil(reply)
        return reply

    monkeypatch.setattr(Client, "_decode", staticmethod(spoiling))
    return spoiled


def _step(env: Any) -> None:
    if isinstance(env, ycgym.YCBenchEnv):
        env.step("company status")
    elif isinstance(env, ycgym.YCBenchVectorEnv):
        env.step(["company status"] * env.num_envs)
    elif isinstance(env, ycgym.YCBenchDiscreteVectorEnv):
        env.step(env.action_space.sample() * 0)
    else:
        env.step(0)


# Every env pickles; all but the Discrete vector env have a ``snapshot()`` method.
VIAS = [("pickle", kind) for kind in sorted(MAKERS)] + [("snapshot", kind) for kind in sorted(MAKERS) if kind != "discrete-vector"]


@pytest.mark.parametrize(("via", "kind"), VIAS)
@pytest.mark.parametrize("how", sorted(SPOILS))
def test_a_malformed_snapshot_reply_is_bad_reply_and_leaves_the_env_usable(
    kind: str, how: str, via: str, monkeypatch: pytest.MonkeyPatch, endpoint: str
) -> None:
    env = MAKERS[kind](endpoint)
    try:
        env.reset(seed=3)
        with monkeypatch.context() as m:
            spoiled = _spoil_snapshots(m, SPOILS[how])
            with pytest.raises(ycgym.ProtocolError) as e:
                pickle.dumps(env) if via == "pickle" else env.snapshot()
            assert spoiled, "no snapshot reply was read"
        assert e.value.code == "bad_reply", e.value
        assert "snapshot reply is a malformed result" in str(e.value), e.value
        # Left as it was: it steps on, and pickles (and continues) once the replies are whole again.
        _step(env)
        again = pickle.loads(pickle.dumps(env))
        try:
            _step(again)
        finally:
            again.close()
    finally:
        env.close()
