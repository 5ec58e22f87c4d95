"""TRL's ``environment_factory`` contract, against the real TRL (``make test-integrations``: needs torch).

No model is downloaded: TRL's own ``GRPOTrainer`` probes and trains one step with a tiny randomly initialised
Qwen3 model and a byte-level tokenizer built here, carrying the Qwen3 chat template that TRL ships. The episode
is driven by a scripted caller through the tokenizer's response parser (TRL's, via ``add_response_schema``)
and compared with the same commands played on the server's turn protocol directly.
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import shlex
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from transformers.utils import get_json_schema
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import add_response_schema, supports_tool_calling

from ycgym import Client, server
from ycgym.integrations.score import TurnRun, funds_multiple
from ycgym.integrations.trl import YCBenchTRLEnv, make_dataset, system_prompt, tool_env_class

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    srv = server.shared_server()
    try:
        yield srv.endpoint
    finally:
        server.release_shared_server(srv)


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    """Bytes as tokens plus Qwen3's special tokens, with TRL's copy of the Qwen3 chat template."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"]
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=special)
    fast.chat_template = (files("trl") / "chat_templates" / "qwen3.jinja").read_text()
    return add_response_schema(fast)


def _tools(env: YCBenchTRLEnv) -> dict[str, Any]:
    """The tools TRL exposes for an environment instance (``GRPOTrainer``'s discovery rule)."""
    return {
        n: getattr(env, n)
        for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    }


@pytest.mark.parametrize("mode", ["verbs", "run_command"])
def test_tool_schemas_are_the_servers(mode: str, endpoint: str) -> None:
    """get_json_schema (what TRL renders into the prompt) gives back the server's tool schemas exactly."""
    env_cls = tool_env_class(mode, endpoint=endpoint)  # type: ignore[arg-type]
    with TurnRun(endpoint, tools=mode) as run:
        served = run.reset(0)["tools"]
    schemas = [get_json_schema(t) for t in _tools(env_cls()).values()]
    got = {s["function"]["name"]: s["function"] for s in schemas}
    assert sorted(got) == sorted(t["function"]["name"] for t in served)
    for t in served:
        want = t["function"]
        have = got[want["name"]]
        assert have["description"] == want["description"]
        assert have["parameters"]["properties"] == want["parameters"]["properties"]
        assert have["parameters"].get("required", []) == want["parameters"]["required"]


def test_grpo_trainer_probes_and_trains_one_step(tokenizer: PreTrainedTokenizerFast, endpoint: str, tmp_path: Path) -> None:
    """TRL's GRPOTrainer accepts the class as environment_factory, exposes the verb tools and owns the reward."""
    assert supports_tool_calling(tokenizer)
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=32768,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    env_cls = tool_env_class(endpoint=endpoint)
    ds = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 2, "seed": [3, 3]})
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        report_to="none",
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        bf16=False,
    )
    trainer = GRPOTrainer(model=Qwen3ForCausalLM(cfg), processing_class=tokenizer, args=args, train_dataset=ds, environment_factory=env_cls)
    assert trainer.reward_func_names == ["YCBenchToolEnv"]
    assert sorted(t.__name__ for t in trainer.tools) == sorted(_tools(env_cls()))
    assert {"task_accept", "sim_resume", "market_browse", "scratchpad_write"} <= {t.__name__ for t in trainer.tools}
    trainer.train()
    log = trainer.state.log_history[0]
    # A random model calls no tool: nothing happens to the company, so funds stay at the start (multiple 1.0).
    assert log["rewards/YCBenchToolEnv/mean"] == 1.0
    for env in trainer.environments or []:
        assert env._run.seed == 3 and env.get_reward() == 1.0


def _reply(name: str, arguments: dict[str, Any]) -> str:
    """A Qwen3-style model reply calling one tool."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def _as_verb_call(cmd: str, schemas: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``task assign --task-id X --employees A,B`` -> ``("task_assign", {"task_id": "X", "employees": "A,B"})``."""
    words = shlex.split(cmd)
    name = f"{words[0]}_{words[1]}".replace("-", "_")
    props = schemas[name]["parameters"]["properties"]
    args: dict[str, Any] = {}
    for flag, value in zip(words[2::2], words[3::2]):
        key = flag.removeprefix("--").replace("-", "_")
        args[key] = int(value) if props[key]["type"] == "integer" else value
    return name, args


def test_scripted_episode_through_trl_parsing(tokenizer: PreTrainedTokenizerFast, endpoint: str) -> None:
    """A whole greedy year as model replies, parsed by TRL's response parser and dispatched by name as TRL
    does, on the verb tools: each result equals the same command line played on the turn protocol, and the
    reward is the final funds multiple."""
    with gzip.open(REPO / "test" / "fixtures" / "parity" / "trajectories" / "traj-default-greedy-seed-2.json.gz", "rt") as f:
        data = json.load(f)
    commands = [s["cmd"] for s in (data[0] if isinstance(data, list) else data)["steps"]]
    env = tool_env_class(endpoint=endpoint)()
    tools = _tools(env)
    schemas = {t.__name__: get_json_schema(t)["function"] for t in tools.values()}
    prompt = env.reset(seed=2, prompt=[{"role": "user", "content": ""}])
    with Client(endpoint) as c:
        direct = c.turn_reset(2, options={"auto_advance_after_turns": 2**31 - 1})
        assert prompt == direct["messages"][1]["content"] and prompt.startswith("## Simulation Start")
        start = direct["info"]["funds_cents"]
        # The prompt as TRL renders it: the user message with reset's text, and every verb tool's schema.
        prefix = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tools=list(tools.values()), tokenize=False, add_generation_prompt=True)
        assert all(json.dumps(name) in prefix for name in schemas)
        for n, cmd in enumerate(commands, start=1):  # noqa: B007 - n is read after the loop
            (call,) = tokenizer.parse_response(_reply(*_as_verb_call(cmd, schemas)), prefix=prefix)["tool_calls"]
            got = json.loads(tools[call["function"]["name"]](**call["function"]["arguments"]))
            want = c.turn_step(direct["session"], [f"yc-bench {cmd}"])
            (result,) = want["tool_results"]
            assert {k: v for k, v in got.items() if k != "command"} == {k: v for k, v in result.items() if k != "command"}, cmd
            assert shlex.split(got["command"]) == ["yc-bench", *shlex.split(cmd)]
            if want["done"]:
                break
        assert want["done"] and env._run.done and n > 100
        assert env.get_reward() == funds_multiple(want["info"]["funds_cents"], start)
        with pytest.raises(RuntimeError, match="simulation is over"):
            tools["sim_resume"]()


def test_dataset_helper(endpoint: str) -> None:
    ds = make_dataset([1, 2, 2], endpoint=endpoint)
    assert ds["seed"] == [1, 2, 2]
    sp = system_prompt(endpoint=endpoint)
    assert all(p == [{"role": "system", "content": sp}, {"role": "user", "content": ""}] for p in ds["prompt"])
    assert "yc-bench" in sp
