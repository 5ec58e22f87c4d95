"""The LLM runner (``ycgym.llm``) end to end against a fake OpenAI-compatible server (scripted tool calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fake_openai import FakeOpenAI, HTTPFailure, last_tool_outputs, run, text_reply, tool_reply
from ycgym import Client
from ycgym.arrow import EPISODE_SCHEMA, STEP_SCHEMA, TURN_SCHEMA
from ycgym.llm import LLMSettings, make_openai_client, run_llm_episode

# RunState.full_rollout() + time_series (runner/main.py), single episode / multi-episode.
ROLLOUT_KEYS = {
    "session_id", "model", "seed", "horizon_years", "total_episodes", "terminal", "terminal_reason", "terminal_detail",
    "started_at", "ended_at", "turns_completed", "total_cost_usd", "transcript", "time_series",
}  # fmt: skip
TRANSCRIPT_KEYS = ["turn", "timestamp", "user_input", "agent_output", "commands_executed", "prompt_tokens", "completion_tokens", "cost_usd"]
TIME_SERIES_KEYS = ["funds", "prestige", "tasks", "ledger", "client_trust", "employees", "assignments", "clients", "scratchpad", "config"]


class Worker:
    """A scripted agent: learn the staff, then per turn browse one task / accept+assign+dispatch it and resume."""

    def __init__(self, verbs: bool = False) -> None:
        self.staff: str | None = None
        self.pending: str | None = None
        self.verbs = verbs

    def __call__(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        self.pending = None
        for out in last_tool_outputs(body):
            if "employee list" in out["command"] and out["exit_code"] == 0:
                self.staff = ",".join(e["name"] for e in json.loads(out["stdout"])["employees"])
            if "market browse" in out["command"] and out["exit_code"] == 0:
                tasks = json.loads(out["stdout"])["tasks"]
                self.pending = tasks[0]["task_id"] if tasks else None
        usage = (1000 + n, 20 + n % 7)
        if self.verbs:
            if self.staff is None:
                return tool_reply([("employee_list", {}), ("market_browse", {"limit": 1})], usage=usage)
            if self.pending is not None:
                t = self.pending
                calls: list[tuple[str, dict[str, Any] | str]] = [
                    ("task_accept", {"task_id": t}),
                    ("task_assign", {"task_id": t, "employees": self.staff.split(",")}),
                    ("task_dispatch", {"task_id": t}),
                    ("sim_resume", {}),
                ]
                return tool_reply(calls, usage=usage)
            return tool_reply([("market_browse", {"limit": 1})], usage=usage)
        if self.staff is None:
            return run("yc-bench employee list", "yc-bench market browse --limit 1", usage=usage, reasoning="I should look around first.")
        if self.pending is not None:
            t = self.pending
            return run(
                f"yc-bench task accept --task-id {t}",
                f"yc-bench task assign --task-id {t} --employees {self.staff}",
                f"yc-bench task dispatch --task-id {t}",
                "yc-bench sim resume",
                usage=usage,
                content="Taking the task.",
            )
        return run("yc-bench market browse --limit 1", usage=usage)


def read_arrow(p: Path) -> pa.Table:
    with pa.memory_map(str(p), "r") as src:
        return ipc.open_file(src).read_all()


def test_episode_to_bankruptcy(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(Worker(), api_key="sk-test") as fake:
        r = run_llm_episode(
            "fake/model-1", seed=1, preset="default", out=tmp_path, base_url=fake.base_url, api_key="sk-test", endpoint=endpoint
        )
        reqs = fake.requests
        assert set(fake.auth) == {"Bearer sk-test"}
    assert r.terminal_reason == "bankruptcy" and r.terminal_detail == "bankruptcy"
    assert len(reqs) == len(r.turns) == 30
    # What is sent: the reference's request (no temperature / top_p), the run_command tool.
    for body in reqs:
        assert body["model"] == "fake/model-1"
        assert body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == ["run_command"]
        assert "temperature" not in body and "top_p" not in body
        assert body["messages"][0]["role"] == "system" and body["messages"][-1]["role"] == "user"
    assert reqs[0]["messages"][1]["content"].startswith("## Simulation Start")
    assert reqs[1]["messages"][2] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should look around first.",
        "tool_calls": [
            {"id": "tc_0", "type": "function", "function": {"name": "run_command", "arguments": '{"command": "yc-bench employee list"}'}},
            {
                "id": "tc_1",
                "type": "function",
                "function": {"name": "run_command", "arguments": '{"command": "yc-bench market browse --limit 1"}'},
            },
        ],
    }
    # Every chat sent is the one a TurnEnv session driven with the same replies hands out.
    with Client(endpoint, timeout=30) as c:
        t = c.turn_reset(1, "default")
        assert t["messages"] == reqs[0]["messages"] and t["tools"] == reqs[0]["tools"]
        for k, turn in enumerate(r.turns):
            action: dict[str, Any] = {"tool_calls": turn.tool_calls, "content": turn.content}
            if turn.reasoning_content is not None:
                action["reasoning_content"] = turn.reasoning_content
            s = c.turn_step(t["session"], action)
            if s["done"]:
                break
            assert c.turn_messages(t["session"]) == reqs[k + 1]["messages"], f"call {k + 2}"
        assert s["done"] and k == len(r.turns) - 1
        c.close(t["session"])

    # Files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.arrow", "rollouts", "summary.json", "trajectories.arrow", "turns.arrow"]
    steps = read_arrow(tmp_path / "trajectories.arrow")
    assert steps.schema.equals(STEP_SCHEMA, check_metadata=True)
    calls = sum(len(t.tool_calls) for t in r.turns)
    autos = sum(1 for t in r.turns if t.result["info"]["auto_advanced"])
    assert steps.num_rows == 1 + calls + autos == len(r.step_rows)
    d = steps.to_pydict()
    assert d["step"] == list(range(steps.num_rows))
    assert d["is_first"] == [True] + [False] * (steps.num_rows - 1)
    assert d["is_last"] == [False] * (steps.num_rows - 1) + [True]
    assert d["terminated"][-1] and not any(d["terminated"][:-1]) and not any(d["truncated"])
    assert d["action"][0] is None and d["action"][1:3] == ["yc-bench employee list", "yc-bench market browse --limit 1"]
    assert d["command"][1:3] == ["employee list", "market browse"]
    assert set(d["policy"]) == {"fake/model-1"} and set(d["episode_id"]) == {0}
    assert sum(d["reward_cents"]) == d["funds_cents"][-1] - d["funds_cents"][0]
    assert d["funds_cents"][-1] < 0
    eps = read_arrow(tmp_path / "episodes.arrow")
    assert eps.schema.equals(EPISODE_SCHEMA, check_metadata=True)
    e = eps.to_pylist()
    assert len(e) == 1 and e[0]["outcome"] == "bankruptcy" and e[0]["steps"] == steps.num_rows - 1
    assert e[0]["final_funds_cents"] == d["funds_cents"][-1]
    assert e[0]["accepted_total"] == sum(1 for a in d["action"] if a and a.startswith("yc-bench task accept"))
    turns = read_arrow(tmp_path / "turns.arrow")
    assert turns.schema.equals(TURN_SCHEMA, check_metadata=True)
    tr = turns.to_pylist()
    assert [x["call"] for x in tr] == list(range(1, 31)) and [x["turn"] for x in tr] == list(range(1, 31))
    assert sum(x["prompt_tokens"] for x in tr) == r.prompt_tokens == sum(1000 + n for n in range(1, 31))
    assert tr[-1]["done"] and tr[-1]["terminal_reason"] == "bankruptcy"
    assert all(x["cost_usd"] is None for x in tr)
    assert sum(x["steps"] for x in tr) == steps.num_rows - 1
    assert [x["first_step"] for x in tr][:2] == [1, 3]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["fake/model-1"]["episodes"] == 1 and summary["fake/model-1"]["bankruptcies"] == 1

    roll = json.loads((tmp_path / "rollouts" / "yc_bench_result_default_1_fake_model-1.json").read_text())
    assert set(roll) == ROLLOUT_KEYS
    assert roll["session_id"] == "run-1-fake/model-1" and roll["model"] == "fake/model-1" and roll["seed"] == 1
    assert roll["horizon_years"] == 1 and roll["total_episodes"] == 1
    assert roll["terminal"] is True and roll["terminal_reason"] == "bankruptcy" and roll["turns_completed"] == 30
    assert roll["total_cost_usd"] == 0.0
    assert list(roll["time_series"]) == TIME_SERIES_KEYS
    assert len(roll["transcript"]) == 30 and list(roll["transcript"][0]) == TRANSCRIPT_KEYS
    t0 = roll["transcript"][0]
    assert t0["turn"] == 1 and t0["prompt_tokens"] == 1001 and t0["user_input"] == reqs[0]["messages"][1]["content"]
    assert t0["agent_output"] == "Executed 2 tool call(s): yc-bench employee list, yc-bench market browse --limit 1"
    assert t0["commands_executed"][0].startswith('yc-bench employee list -> {"ok": true, "exit_code": 0, "stdout": "{\\n')
    assert len(t0["commands_executed"][0]) == len("yc-bench employee list -> ") + 500
    assert [x["turn"] for x in roll["transcript"]] == list(range(1, 31))


def test_max_turns_and_costs(endpoint: str, tmp_path: Path) -> None:
    script = [
        run("yc-bench market browse --limit 2", usage=(500, 50), cost=0.25),
        run("yc-bench company status", usage=(600, 60), cost=0.5),
        text_reply("thinking...", usage=(700, 70)),
    ]
    with FakeOpenAI(script) as fake:
        s = LLMSettings(model="m", base_url=fake.base_url, api_key="k", price_prompt=1.0, price_completion=2.0, temperature=0.0, top_p=1.0)
        r = run_llm_episode("ignored", settings=s, seed=2, max_turns=3, out=tmp_path, endpoint=endpoint)
        reqs = fake.requests
    assert [b["temperature"] for b in reqs] == [0.0] * 3 and [b["top_p"] for b in reqs] == [1.0] * 3
    # The turn cap is a truncation with reason max_turns (the rollout JSON keeps the reference's "error").
    assert r.terminal_reason == "max_turns" and r.terminal_detail == "max_turns=3 reached"
    assert r.turn_rows[-1]["terminal_reason"] == "max_turns" and r.episode_rows[-1]["outcome"] == "truncated"
    # Reported cost wins; otherwise the price flags (USD per million tokens).
    assert [t.cost_usd for t in r.turns] == [0.25, 0.5, (700 * 1.0 + 70 * 2.0) / 1e6]
    assert r.rollout["total_cost_usd"] == round(0.75 + 840 / 1e6, 6)
    assert r.rollout["transcript"][2]["agent_output"] == "thinking..." and r.rollout["transcript"][2]["commands_executed"] == []
    assert reqs[2]["messages"][-3:-1] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "tc_0",
                    "type": "function",
                    "function": {"name": "run_command", "arguments": '{"command": "yc-bench company status"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "tc_0", "content": json.dumps(r.turns[1].result["tool_results"][0])},
    ]
    d = read_arrow(tmp_path / "trajectories.arrow").to_pydict()
    assert len(d["step"]) == 3 and d["truncated"] == [False, False, True] and not any(d["terminated"])
    assert read_arrow(tmp_path / "episodes.arrow").to_pylist()[0]["outcome"] == "truncated"
    assert r.rollout["terminal_reason"] == "error" and r.rollout["turns_completed"] == 3


def test_text_only_turns_auto_advance(endpoint: str) -> None:
    with FakeOpenAI(lambda body, n: text_reply(f"turn {n}", usage=None)) as fake:
        r = run_llm_episode("m", base_url=fake.base_url, api_key="k", max_turns=6, endpoint=endpoint)
    # Five turns without a resume: the harness resumes itself (blocked: no active tasks, which still counts).
    assert [t.result["info"]["auto_advanced"] for t in r.turns] == [False] * 4 + [True, False]
    assert [row["action"] for row in r.step_rows] == [None, "yc-bench sim resume"]
    assert r.step_rows[1]["exit_code"] == 1 and "No active tasks" in r.step_rows[1]["observation_text"]
    assert all(t.prompt_tokens is None and t.cost_usd is None for t in r.turns)
    assert r.rollout["transcript"][0]["prompt_tokens"] == 0


def test_verb_tools(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(Worker(verbs=True)) as fake:
        r = run_llm_episode("m", tools="verbs", base_url=fake.base_url, api_key="k", max_turns=4, endpoint=endpoint, out=tmp_path)
        body = fake.requests[0]
    names = [t["function"]["name"] for t in body["tools"]]
    assert "run_command" not in names and {"task_accept", "market_browse", "sim_resume"} <= set(names)
    actions = [row["action"] for row in r.step_rows[1:]]
    assert actions[:2] == ["yc-bench employee list", "yc-bench market browse --limit 1"]
    assert actions[2].startswith("yc-bench task accept --task-id ") and actions[3].startswith("yc-bench task assign --task-id ")
    assert " --employees Emp_" in actions[3] and "," in actions[3]
    assert all(row["exit_code"] == 0 for row in r.step_rows)


def test_retries_then_failure(endpoint: str, tmp_path: Path) -> None:
    ok = run("yc-bench company status")
    script: list[dict[str, Any] | HTTPFailure] = [HTTPFailure(500, "boom"), ok, HTTPFailure(503, "down"), HTTPFailure(500, "down"), HTTPFailure(500, "down")]
    with FakeOpenAI(script) as fake:
        s = LLMSettings(model="m", base_url=fake.base_url, api_key="k", retry_backoff=0.0)
        r = run_llm_episode("m", settings=s, out=tmp_path, endpoint=endpoint)
        assert len(fake.requests) == 5
    assert len(r.turns) == 1
    assert r.terminal_reason == "error" and r.terminal_detail == "Failed to run turn after 3 attempts (HTTP 500: down)"
    assert r.endpoint_error is None
    roll = json.loads(next((tmp_path / "rollouts").iterdir()).read_text())
    assert roll["terminal"] and roll["terminal_reason"] == "error" and roll["turns_completed"] == 1
    assert list(roll["time_series"]) == TIME_SERIES_KEYS
    d = read_arrow(tmp_path / "trajectories.arrow").to_pydict()
    assert d["is_last"] == [False, True] and d["truncated"] == [False, True]


def test_two_episodes(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(Worker()) as fake:
        r = run_llm_episode("m", base_url=fake.base_url, api_key="k", max_episodes=2, endpoint=endpoint, out=tmp_path)
        n = len(fake.requests)
    assert r.terminal_reason == "bankruptcy" and n == len(r.turns) > 30
    roll = r.rollout
    assert set(roll) == ROLLOUT_KEYS - {"transcript"} | {"episodes"}
    assert roll["total_episodes"] == 2 and [e["episode"] for e in roll["episodes"]] == [1, 2]
    assert [e["terminal_reason"] for e in roll["episodes"]] == ["bankruptcy", "bankruptcy"]
    # The reference restores the chat after a bankruptcy (crash-recovery path): the turn count goes on.
    assert roll["episodes"][0]["turns_completed"] == 30 and roll["episodes"][1]["transcript"][0]["turn"] == 31
    assert roll["turns_completed"] == 30 + roll["episodes"][1]["turns_completed"]
    eps = read_arrow(tmp_path / "episodes.arrow").to_pylist()
    assert [e["episode_id"] for e in eps] == [0, 1] and [e["outcome"] for e in eps] == ["bankruptcy", "bankruptcy"]
    d = read_arrow(tmp_path / "trajectories.arrow").to_pydict()
    assert d["is_first"].count(True) == 2 and d["is_last"].count(True) == 2 and d["terminated"].count(True) == 2
    second = d["is_first"].index(True, 1)
    assert d["step"][second] == 0 and d["episode_id"][second] == 1 and d["funds_cents"][second] == d["funds_cents"][0]


def test_cli(endpoint: str, tmp_path: Path) -> None:
    with FakeOpenAI(Worker()) as fake:
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-env"}
        p = subprocess.run(
            [sys.executable, "-m", "ycgym.llm", "--model", "cli-model", "--seed", "1", "--preset", "default", "--out", str(tmp_path),
             "--max-turns", "3", "--endpoint", endpoint],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert set(fake.auth) == {"Bearer sk-env"}
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["turns"] == 3 and out["terminal_detail"] == "max_turns=3 reached" and out["calls"] == 3
    assert out["terminal_reason"] == "max_turns"
    assert out["prompt_tokens"] == 1001 + 1002 + 1003
    assert Path(out["files"]["rollout"]).name == "yc_bench_result_default_1_cli-model.json"
    assert p.stderr.count("[turn ") == 3


def test_client_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_openai_client(LLMSettings(model="m"))
    c = make_openai_client(LLMSettings(model="m", base_url="http://127.0.0.1:9/v1"))
    assert c.api_key == "EMPTY"
