"""The turn-protocol ops through the Python client: every result checked against schema/protocol.schema.json."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from helpers import REPO
from ycgym import Client, ProtocolError

SCHEMA = json.loads((REPO / "schema" / "protocol.schema.json").read_text())
TOOLS = json.loads((REPO / "schema" / "tools.json").read_text())


def check(definition: str, value: Any) -> None:
    schema = dict(SCHEMA)
    schema["$ref"] = f"#/$defs/{definition}"
    jsonschema.validators.validator_for(schema)(schema).validate(value)


@pytest.fixture()
def client(endpoint: str):  # type: ignore[no-untyped-def]
    c = Client(endpoint, timeout=30.0)
    yield c
    c.close()


def test_a_run_over_the_wire(client: Client) -> None:
    r = client.turn_reset(4, "default", options={"max_turns": 3, "history_keep_rounds": 2}, detail=True)
    check("TurnResetResult", r)
    assert r["tools"] == TOOLS["reference"] and r["tool_choice"] == "auto"
    assert [m["role"] for m in r["messages"]] == ["system", "user"]
    assert r["detail"]["status"]["funds_cents"] == r["info"]["funds_cents"]
    s = r["session"]
    a = client.turn_step(s, ["yc-bench market browse --limit 1", "market browse"], detail=True)
    check("TurnStepResult", a)
    assert [t["exit_code"] for t in a["tool_results"]] == [0, 2]
    assert [c["command"] for c in a["detail"]["calls"]] == ["market browse", None]
    msgs = client.turn_messages(s)
    check("TurnMessagesResult", {"messages": msgs})
    assert msgs[2]["tool_calls"][0]["id"] == "call_1_0" and msgs[3]["tool_call_id"] == "call_1_0"
    assert json.loads(msgs[3]["content"]) == a["tool_results"][0]
    snap = client.turn_snapshot(s)
    check("TurnSnapshotResult", {"snapshot": snap})
    b = client.turn_step(s, {"tool_calls": [{"id": "x1", "name": "company_status", "arguments": "{}"}], "content": "checking"})
    check("TurnStepResult", b)
    assert "detail" not in b and b["tool_results"][0]["command"] == "yc-bench company status"
    c = client.turn_step(s, {"content": "done for now"})
    assert c["done"] and c["info"]["terminal_detail"] == "max_turns=3 reached"
    with pytest.raises(ProtocolError) as e:
        client.turn_step(s, [])
    assert e.value.code == "episode_over"
    ts = client.turn_time_series(s)
    check("TimeSeries", ts)
    # Restore: a copy continues exactly where the snapshot was taken.
    r2 = client.turn_restore(snap, detail=True)
    check("TurnRestoreResult", r2)
    assert r2["session"] != s and r2["info"]["turn"] == 1
    b2 = client.turn_step(r2["session"], {"tool_calls": [{"id": "x1", "name": "company_status", "arguments": "{}"}], "content": "checking"})
    assert b2 == b
    for sid in (s, r2["session"]):
        assert client.close(sid) == {"closed": True}


def test_kinds_and_errors(client: Client) -> None:
    env = client.reset(1)["session"]
    turns = client.turn_reset(1, tools="verbs")
    assert [t["function"]["name"] for t in turns["tools"]] == [t["function"]["name"] for t in TOOLS["verbs"]]
    t = turns["session"]
    for call in (lambda: client.turn_step(env, []), lambda: client.turn_messages(env), lambda: client.turn_snapshot(env)):
        with pytest.raises(ProtocolError) as e:
            call()
        assert e.value.code == "invalid_request" and "is an Env session" in e.value.message
    for call2 in (lambda: client.step(t, "company status"), lambda: client.snapshot(t)):
        with pytest.raises(ProtocolError) as e:
            call2()
        assert e.value.code == "invalid_request" and "turn-protocol session" in e.value.message
    with pytest.raises(ProtocolError) as e:
        client.turn_restore({"format": "ycgym-env"})
    assert e.value.code == "bad_snapshot"
    with pytest.raises(ProtocolError) as e:
        client.turn_reset(1, "nope")
    assert e.value.code == "bad_preset"
    with pytest.raises(ProtocolError) as e:
        client.turn_reset(1, options={"history_keep_rounds": 0})
    assert e.value.code == "invalid_request" and e.value.message.startswith("/options/history_keep_rounds")
    client.close(env)
    client.close(t)


def test_one_string_is_not_a_turn(client: Client) -> None:
    with pytest.raises(TypeError):
        client.turn_step("s1", "yc-bench company status")
