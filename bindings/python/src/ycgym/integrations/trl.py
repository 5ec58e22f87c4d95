"""ycgym for TRL's ``GRPOTrainer(environment_factory=...)`` (GRPO with tools).

TRL's contract (``trl.GRPOTrainer``, TRL 1.x): the factory is a zero-argument callable returning one
environment per rollout; TRL calls ``reset(**row)`` with the dataset row (its string return value is appended
to the last user message), exposes every public method except ``reset``/``get_reward`` as a tool (schema from
the type hints and Google-style docstring, via ``transformers.utils.get_json_schema``), calls the tools with
the model's arguments (a raised exception becomes ``{"error": ...}`` for the model) and, once the rollout is
finished, calls ``get_reward()``.

:func:`tool_env_class` builds that class. Its tool methods are generated from the tool schemas the ycgym server
serves (one source of truth with the turn protocol; TRL's own OpenReward integration binds tools the same way):

* ``tools="verbs"`` (default): one typed tool per CLI command (``task_accept(task_id)``, ``market_browse(domain,
  limit, ...)``, ``sim_resume()``, ...). This is what TRL users write by hand for their environments, and small
  models make far fewer syntax errors with typed arguments than with shell-style command lines.
* ``tools="run_command"``: the reference's single tool ``run_command(command)``, as the paper's models saw it;
  use it to train for the paper's evaluation protocol (``ycgym.llm``, :mod:`ycgym.integrations.verifiers`).

Each tool call runs one command in a ``turn_*`` session (the server turns per-verb calls into the exact command
line); the result is the reference harness's tool message text (``{"ok", "exit_code", "stdout", "stderr",
"sim_time", "command"}`` as JSON). TRL owns the conversation, so the harness's per-turn context messages do not
apply, and the harness's automatic ``sim resume`` is off unless ``auto_advance_after_calls`` is given (the agent
advances time itself, as in the step env). ``reset`` returns the paper's first user message; the system prompt
belongs in the dataset (:func:`make_dataset`). The reward is
:func:`ycgym.integrations.score.funds_multiple`: funds now / starting funds (1.0 = break-even), the final funds
once the simulation ended (bankruptcy or horizon).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from .score import TurnRun

__all__ = ["YCBenchTRLEnv", "tool_env_class", "make_dataset", "system_prompt"]

ToolsMode = Literal["verbs", "run_command"]

# Off: the turn protocol has no "never" value, and 2**31-1 tool calls is beyond any TRL rollout.
_NEVER = 2**31 - 1

_PY_TYPES: Mapping[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


class YCBenchTRLEnv:
    """Base of the classes :func:`tool_env_class` builds (it has no tools itself). One instance per rollout.

    Class attributes set by :func:`tool_env_class`: the server endpoint, preset, tools mode, turn options and
    default seed. The instance holds one ycgym session, closed when the instance is garbage-collected.
    """

    _endpoint: str | None = None
    _preset: str = "default"
    _tools_mode: str = "verbs"
    _options: Mapping[str, Any] = {}
    _default_seed: int = 0

    def __init__(self) -> None:
        protocol_tools = "run_command" if self._tools_mode == "run_command" else "verbs"
        self._run = TurnRun(self._endpoint, preset=self._preset, options=self._options, tools=protocol_tools)
        self._calls = 0

    def reset(self, seed: int | None = None, **row: Any) -> str:
        """Start the simulation of ``seed`` (the dataset's ``seed`` column; the class default without one) and
        return the paper's first user message. Other dataset columns are ignored."""
        res = self._run.reset(self._default_seed if seed is None else int(seed))
        self._calls = 0
        first_user = next(m for m in res["messages"] if m["role"] == "user")
        return str(first_user["content"])

    def get_reward(self) -> float:
        """Funds now / starting funds (1.0 = break-even; the final funds once the simulation ended)."""
        return self._run.score()

    def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        if self._run.done:
            raise RuntimeError(f"the simulation is over ({self._run.terminal_reason}); no more commands run")
        self._calls += 1
        args = {k: v for k, v in arguments.items() if v is not None}
        res = self._run.step({"tool_calls": [{"id": f"call_{self._calls}", "name": name, "arguments": json.dumps(args)}]})
        # The reference harness's tool message text (Python's json.dumps of the result, keys in its order).
        return json.dumps(res["tool_results"][0])


def _tool_method(name: str, description: str, parameters: Mapping[str, Any]) -> Callable[..., str]:
    """A method ``name(self, *, <parameters>) -> str`` whose signature, annotations and Google-style docstring
    give back ``parameters`` through ``transformers.utils.get_json_schema``."""
    props: Mapping[str, Mapping[str, Any]] = parameters.get("properties", {})
    required = set(parameters.get("required", []))

    def tool(self: YCBenchTRLEnv, **kwargs: Any) -> str:
        return self._call(name, kwargs)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_lines: list[str] = []
    # Required first: readable signatures (keyword-only, so the order is cosmetic).
    for pname in sorted(props, key=lambda p: p not in required):
        spec = props[pname]
        typ: Any = _PY_TYPES[spec["type"]]
        enum = spec.get("enum")
        if enum:
            typ = Literal[tuple(enum)]  # get_json_schema renders a Literal as the same "enum"
        default = inspect.Parameter.empty if pname in required else None
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=typ))
        annotations[pname] = typ
        arg_lines.append(f"    {pname}: {' '.join(str(spec.get('description', pname)).split())}")
    annotations["return"] = str
    doc = description.strip()
    if arg_lines:
        doc += "\n\nArgs:\n" + "\n".join(arg_lines)
    doc += "\n\nReturns:\n    The command's result as JSON text: ok, exit_code, stdout, stderr, sim_time, command."
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = doc
    tool.__annotations__ = annotations
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return tool


def tool_env_class(
    tools: ToolsMode = "verbs",
    *,
    preset: str = "default",
    endpoint: str | None = None,
    seed: int = 0,
    auto_advance_after_calls: int | None = None,
    name: str = "YCBenchToolEnv",
) -> type[YCBenchTRLEnv]:
    """A class to pass as ``GRPOTrainer(environment_factory=...)``.

    Args:
        tools: ``"verbs"`` (one typed tool per command) or ``"run_command"`` (the reference's single tool).
        preset: ycgym preset. endpoint: ycgym server; ``None`` uses the process's shared local server
            (started on first use, one per process).
        seed: the seed used when a dataset row has no ``seed`` column.
        auto_advance_after_calls: run ``sim resume`` for the agent after this many tool calls without one
            (the paper's harness does it after 5 turns); ``None``: never.
        name: the class name (also the reward's name in TRL's logs).
    """
    if tools not in ("verbs", "run_command"):
        raise ValueError(f"tools must be 'verbs' or 'run_command', got {tools!r}")
    if auto_advance_after_calls is not None and (int(auto_advance_after_calls) != auto_advance_after_calls or auto_advance_after_calls < 1):
        raise ValueError(f"auto_advance_after_calls must be a positive integer or None, got {auto_advance_after_calls!r}")
    options = {
        "auto_advance_after_turns": _NEVER if auto_advance_after_calls is None else int(auto_advance_after_calls),
        # TRL keeps the chat; the session's own copy only needs the current round.
        "history_keep_rounds": 1,
    }
    with TurnRun(endpoint, preset=preset, tools=tools) as probe:
        schemas = probe.reset(seed)["tools"]
    attrs: dict[str, Any] = {
        "__doc__": f"YC-Bench for TRL's environment_factory ({tools} tools, preset {preset!r}). See ycgym.integrations.trl.",
        "__module__": __name__,
        "_endpoint": endpoint,
        "_preset": preset,
        "_tools_mode": tools,
        "_options": options,
        "_default_seed": int(seed),
    }
    for t in schemas:
        fn = t["function"]
        if fn["name"] in attrs or fn["name"] in ("reset", "get_reward") or not fn["name"].isidentifier():
            raise ValueError(f"tool name {fn['name']!r} cannot be a method name")
        attrs[fn["name"]] = _tool_method(fn["name"], fn["description"], fn["parameters"])
    return type(name, (YCBenchTRLEnv,), attrs)


def system_prompt(*, preset: str = "default", endpoint: str | None = None) -> str:
    """The paper's system prompt (the first message of every run, before any scratchpad is written)."""
    with TurnRun(endpoint, preset=preset) as run:
        first = run.reset(0)["messages"][0]
    if first["role"] != "system":
        raise RuntimeError(f"the server's first message is {first['role']!r}, not the system prompt")
    return str(first["content"])


def make_dataset(seeds: Sequence[int], *, preset: str = "default", endpoint: str | None = None) -> Any:
    """A ``datasets.Dataset`` with one row per seed: ``prompt`` = the system prompt and an empty user message
    (``reset`` fills it with the seed's first user message), ``seed``. Repeat seeds to train on them more often."""
    try:
        from datasets import Dataset
    except ImportError as e:
        raise ImportError(f"make_dataset needs the datasets package ({e}): pip install 'ycgym[trl]'") from e

    sp = system_prompt(preset=preset, endpoint=endpoint)
    rows = [int(s) for s in seeds]
    return Dataset.from_dict({"prompt": [[{"role": "system", "content": sp}, {"role": "user", "content": ""}] for _ in rows], "seed": rows})
