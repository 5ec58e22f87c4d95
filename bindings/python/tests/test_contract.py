"""The shared environment contract (test/contract/README.md), replayed from Python.

Every fixture runs twice: through the raw protocol :class:`ycgym.Client` (the wire results, also
validated against ``schema/protocol.schema.json``) and through :class:`ycgym.YCBenchEnv` (the digest
rebuilt from the Gymnasium observation and info). Both must reproduce every recorded digest exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import jsonschema
import pytest

from helpers import CONTRACT, REPO
from ycgym import Client, ProtocolError, YCBenchEnv

FIXTURES = sorted((CONTRACT / "fixtures").glob("*.json"))
SCHEMA = json.loads((REPO / "schema" / "protocol.schema.json").read_text())
INFO_KEYS = ("reward_cents", "step", "funds_cents", "terminal_reason")


def validator(definition: str) -> jsonschema.protocols.Validator:
    schema = dict(SCHEMA)
    schema["$ref"] = f"#/$defs/{definition}"
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


VALIDATE = {name: validator(name) for name in ("StepResult", "ResetResult", "EnvSnapshot")}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare as numbers (0 == 0.0) but never as booleans; keys must match."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def obs_digest(o: dict[str, Any]) -> dict[str, Any]:
    return {"text_sha256": sha(o["text"]), "ok": o["ok"], "exit_code": o["exit_code"], "command": o["command"], "status": o["status"]}


def reset_digest(r: Mapping[str, Any]) -> dict[str, Any]:
    return {"observation": obs_digest(r["observation"]), "info": r["info"]}


def step_digest(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "observation": obs_digest(r["observation"]),
        "reward": r["reward"],
        "terminated": r["terminated"],
        "truncated": r["truncated"],
        "info": r["info"],
    }


class NotReset(Exception):
    code = "not_reset"


class ClientRunner:
    """The wire protocol, one session: exactly what a remote client sees."""

    def __init__(self, endpoint: str) -> None:
        self.c = Client(endpoint, timeout=30)
        self.session: str | None = None

    def reset(self, seed: int, preset: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
        r = self.c.reset(seed, preset or "default", session=self.session, options=options)
        VALIDATE["ResetResult"].validate(r)
        self.session = r["session"]
        return reset_digest(r)

    def step(self, action: str) -> dict[str, Any]:
        if self.session is None:
            raise NotReset
        r = self.c.step(self.session, action)
        VALIDATE["StepResult"].validate(r)
        return step_digest(r)

    def snapshot(self) -> Any:
        if self.session is None:
            raise NotReset
        snap = self.c.snapshot(self.session)
        VALIDATE["EnvSnapshot"].validate(snap)
        return snap

    def restore(self, snap: Any) -> dict[str, Any]:
        r = self.c.restore(snap, session=self.session)
        VALIDATE["ResetResult"].validate(r)
        self.session = r["session"]
        return reset_digest(r)

    def close(self) -> None:
        if self.session is not None:
            self.c.close(self.session)
        self.c.close()


class EnvRunner:
    """The Gymnasium env: the digest is rebuilt from (observation, info)."""

    def __init__(self, endpoint: str, preset: str) -> None:
        self.env = YCBenchEnv(preset=preset, endpoint=endpoint)

    def _obs(self, obs: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        assert obs in self.env.observation_space
        assert obs["command"] == (info["command"] or "")
        return {
            "text": obs["text"],
            "ok": bool(obs["ok"]),
            "exit_code": int(obs["exit_code"]),
            "command": info["command"],
            "status": info["status"],
        }

    @staticmethod
    def _info(info: dict[str, Any]) -> dict[str, Any]:
        return {k: info[k] for k in INFO_KEYS}

    def reset(self, seed: int, preset: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
        assert (preset or "default") == self.env.preset
        obs, info = self.env.reset(seed=seed, options=options)
        return reset_digest({"observation": self._obs(obs, info), "info": self._info(info)})

    def step(self, action: str) -> dict[str, Any]:
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except gym.error.ResetNeeded:
            raise NotReset from None
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
        return step_digest(
            {
                "observation": self._obs(obs, info),
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "info": self._info(info),
            }
        )

    def snapshot(self) -> Any:
        try:
            return self.env.snapshot()
        except gym.error.ResetNeeded:
            raise NotReset from None

    def restore(self, snap: Any) -> dict[str, Any]:
        obs, info = self.env.restore(snap)
        return reset_digest({"observation": self._obs(obs, info), "info": self._info(info)})

    def close(self) -> None:
        self.env.close()


def run_fixture(path: Path, runner: Any) -> int:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    assert (fixture["format"], fixture["version"]) == ("ycgym-contract-fixture", 1)
    snaps: dict[str, Any] = {}
    checked = 0
    for i, op in enumerate(fixture["script"]):
        where = f"{path.name} op {i} ({op['op']} {op.get('action', '')!r:.60})"
        try:
            if op["op"] == "reset":
                got = runner.reset(op["seed"], op.get("preset"), op.get("options"))
            elif op["op"] == "step":
                got = runner.step(op["action"])
            elif op["op"] == "snapshot":
                snaps[op["label"]] = runner.snapshot()
                got = None
            elif op["op"] == "restore":
                got = runner.restore(snaps[op["label"]])
            else:
                raise AssertionError(f"{where}: unknown op")
        except (ProtocolError, NotReset) as e:
            assert "expect_error" in op, f"{where}: unexpected error {e!r}"
            assert e.code == op["expect_error"], f"{where}: error {e.code}, expected {op['expect_error']}"
            checked += 1
            continue
        assert "expect_error" not in op, f"{where}: expected error {op['expect_error']}, got success"
        if "expect" in op:
            assert json_equal(got, op["expect"]), f"{where}: digest differs\n got: {got}\nwant: {op['expect']}"
            checked += 1
    return checked


def preset_of(path: Path) -> str:
    script = json.loads(path.read_text(encoding="utf-8"))["script"]
    return next((op.get("preset") or "default" for op in script if op["op"] == "reset"), "default")


def test_fixtures_exist() -> None:
    assert len(FIXTURES) >= 8, "test/contract/fixtures/*.json are missing"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_contract_fixture_over_the_wire(path: Path, endpoint: str) -> None:
    runner = ClientRunner(endpoint)
    try:
        assert run_fixture(path, runner) > 0
    finally:
        runner.close()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_contract_fixture_through_gymnasium_env(path: Path, endpoint: str) -> None:
    runner = EnvRunner(endpoint, preset_of(path))
    try:
        assert run_fixture(path, runner) > 0
    finally:
        runner.close()
