"""YC-Bench as a verifiers environment (the ``verifiers`` package, its ``verifiers.v1`` API): the paper's turn
protocol with the reference's ``run_command`` tool, one task per seed, reward = final funds as the paper reports
them.

verifiers loads environments by taskset id; this one is ``ycgym-verifiers`` (the module :mod:`ycgym_verifiers`
exports the classes below), so its own entry point evaluates it::

    vf-eval ycgym-verifiers --model gpt-4.1-mini --client.base-url https://api.openai.com/v1 \\
        --client.api-key-var OPENAI_API_KEY --env.taskset.seeds 1-3 --no-push

* :class:`YCBenchTaskset`: one task per seed (``--env.taskset.seeds 1-3``, ``--env.taskset.preset``,
  ``--env.taskset.max-turns``, ``--env.taskset.endpoint`` of a running ``ycgym serve``; default: a local server).
* :class:`YCBenchHarness`: the agent loop of the reference harness, run in-process as verifiers allows (every
  model call goes through verifiers' interception endpoint, so the trace records it): each model call sends
  exactly the chat the ycgym server hands out (system prompt with the scratchpad, per-turn context, 20-round
  history window), ``tools=[run_command]`` and ``tool_choice="auto"``; the reply's tool calls are played back as
  one turn; auto-advance, ``max_turns`` and the terminal rule are the server's. No code runs on the host for the
  model, so the agent's runtime is the local ``subprocess`` one (:class:`YCBenchEnv` makes it the default).
* :class:`YCBenchTask`: reward ``funds_multiple`` = final funds / starting funds (the paper compares final funds
  with the $200K starting capital: 1.0 = break-even, 6.35 = Claude Opus 4.6's $1.27M, negative = bankrupt),
  metrics ``final_funds_usd``, ``turns`` and ``bankrupt``. A run stopped while the server played a turn (the
  rollout's deadline cancels the harness) has no known final funds: its state's ``due`` says why, and scoring refuses
  rather than score the funds of before that turn. That turn's thread is left to end: the harness's cleanup closes
  the run only after it (``TurnRun.close`` waits for a request of the run in flight, see :class:`ycgym.integrations.score.TurnRun`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, cast

try:
    import verifiers.v1 as vf
    from openai import AsyncOpenAI
    from pydantic import Field
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"ycgym.integrations.verifiers needs verifiers ({e}): pip install 'ycgym[verifiers]'") from e

from .._replies import stopped_step_why
from ..splits import parse_seed_list
from .score import TurnRun, funds_multiple

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

__all__ = [
    "YCBenchData",
    "YCBenchState",
    "YCBenchTask",
    "YCBenchTasksetConfig",
    "YCBenchTaskset",
    "YCBenchHarnessConfig",
    "YCBenchHarness",
    "YCBenchEnvConfig",
    "YCBenchEnv",
    "parse_seeds",
]

TASKSET_ID = "ycgym-verifiers"


def parse_seeds(spec: str) -> list[int]:
    """``"1-3,7"`` -> ``[1, 2, 3, 7]`` (:func:`ycgym.splits.parse_seed_list`: ranges inclusive, order and duplicates
    kept, at most a million seeds)."""
    return parse_seed_list(spec)


class YCBenchData(vf.TaskData):
    """One run: the seed, preset and turn options (``max_turns``, ...), and where the ycgym server is."""

    seed: int
    preset: str = "default"
    options: dict[str, Any] = Field(default_factory=dict)
    endpoint: str | None = None


class YCBenchState(vf.State):
    """What the harness leaves for scoring (integer cents)."""

    start_funds_cents: int | None = None
    final_funds_cents: int | None = None
    turns: int = 0
    terminal_reason: str | None = None
    due: str | None = None
    """Why the run's funds are not known: a turn the server played, or may have, whose result the harness never took
    in (its reply could not be read, or the harness was stopped while it ran, e.g. by the rollout's deadline); the other
    figures are then those of the last turn taken in, and scoring refuses. None otherwise."""


class YCBenchTask(vf.Task[YCBenchData, YCBenchState]):
    """One seed of YC-Bench, scored from the run's final funds (verifiers awaits its scoring methods)."""

    @staticmethod
    def _state(trace: vf.Trace) -> YCBenchState:
        st = trace.state
        if not isinstance(st, YCBenchState) or st.start_funds_cents is None or st.final_funds_cents is None:
            raise RuntimeError("the run did not finish: no final funds to score (was the agent's harness 'ycgym-verifiers'?)")
        if st.due is not None:
            raise RuntimeError(f"the run's final funds are not known ({st.due}): nothing to score")
        return st

    @vf.reward
    async def funds_multiple(self, trace: vf.Trace) -> float:
        """Final funds / starting funds (1.0 = break-even)."""
        st = self._state(trace)
        return funds_multiple(st.final_funds_cents or 0, st.start_funds_cents or 0)

    @vf.metric
    async def final_funds_usd(self, trace: vf.Trace) -> float:
        """Final funds in dollars, as the paper's tables."""
        return (self._state(trace).final_funds_cents or 0) / 100

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        """Agent turns (LLM calls) played."""
        return float(self._state(trace).turns)

    @vf.metric
    async def bankrupt(self, trace: vf.Trace) -> float:
        """1.0 when the run ended in bankruptcy."""
        return 1.0 if self._state(trace).terminal_reason == "bankruptcy" else 0.0


class YCBenchTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which seeds, on which preset and server, with which turn options."""

    id: str = TASKSET_ID
    seeds: str = "1-3"
    """Seeds to evaluate, e.g. ``1-3,7`` (the paper used 1-3)."""
    preset: str = "default"
    max_turns: int | None = None
    """End a run as ``error`` after this many turns (the paper: none, the run goes to the horizon)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """More ``turn_reset`` options (``history_keep_rounds``, ``fixes``, ``max_episodes``, ...)."""
    endpoint: str | None = None
    """A running ycgym server (``ycgym serve``); default: a local server started in the eval process."""


class YCBenchTaskset(vf.Taskset[YCBenchTask, YCBenchTasksetConfig]):
    """One task per seed."""

    def load(self) -> Iterator[YCBenchTask]:
        c = self.config
        options = dict(c.options)
        if c.max_turns is not None:
            options["max_turns"] = int(c.max_turns)
        # The task's prompts are the run's first two messages, as the server renders them (the harness sends
        # the server's chat itself; these make the task data self-describing).
        with TurnRun(c.endpoint, preset=c.preset, options=options) as run:
            for seed in parse_seeds(c.seeds):
                first = run.reset(seed)["messages"]
                data = YCBenchData(
                    name=f"yc-bench/{c.preset}/seed-{seed}",
                    system_prompt=first[0]["content"],
                    prompt=first[1]["content"],
                    seed=seed,
                    preset=c.preset,
                    options=options,
                    endpoint=c.endpoint,
                )
                yield YCBenchTask(data, c.task)


class YCBenchHarnessConfig(vf.HarnessConfig):
    """``--env.agent.harness.*``."""

    id: str = TASKSET_ID
    tools: Literal["run_command", "verbs", "all"] = "run_command"
    """The tools offered: the reference's ``run_command`` (the paper's protocol), or per-verb tools."""


class YCBenchHarness(vf.Harness[YCBenchHarnessConfig]):
    """The reference harness's loop, in-process: one model call per turn, through the interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: vf.Trace,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        if not isinstance(data, YCBenchData):
            raise TypeError(f"the {TASKSET_ID} harness runs {TASKSET_ID} tasks, got {type(data).__name__}")
        st = trace.state if isinstance(trace.state, YCBenchState) else None
        run = await asyncio.to_thread(TurnRun, data.endpoint, preset=data.preset, options=data.options, tools=self.config.tools)
        llm = AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        try:
            res = await asyncio.to_thread(run.reset, data.seed)
            messages, tools = cast("list[dict[str, Any]]", res["messages"]), run.tools
            if st is not None:
                st.start_funds_cents = st.final_funds_cents = run.start_funds_cents
            turns = 0
            while True:
                completion = await llm.chat.completions.create(
                    model=ctx.model,
                    # The turn protocol's messages and tool schemas are the Chat Completions shapes, as plain dicts.
                    messages=cast("list[ChatCompletionMessageParam]", messages),
                    tools=cast("list[ChatCompletionToolParam]", tools),
                    tool_choice="auto",
                )
                if not completion.choices:
                    raise RuntimeError("the model endpoint returned no choices")
                msg = completion.choices[0].message
                reply: dict[str, Any] = {
                    "tool_calls": [
                        {"id": tc.id, "name": fn.name, "arguments": fn.arguments}
                        for tc in (msg.tool_calls or [])
                        if (fn := getattr(tc, "function", None)) is not None  # function calls (not custom tool calls)
                    ]
                }
                if msg.content is not None:
                    reply["content"] = msg.content
                reasoning = (msg.model_extra or {}).get("reasoning_content")
                if isinstance(reasoning, str):
                    reply["reasoning_content"] = reasoning
                try:
                    step = await asyncio.to_thread(run.step, reply)
                except BaseException as e:
                    # Cancelled (the rollout's deadline), the turn goes on in its thread: played, or soon, never taken in.
                    why = run.due or (stopped_step_why(e) if isinstance(e, asyncio.CancelledError) else None)
                    if st is not None and why is not None:
                        st.due = why
                    raise
                turns += 1
                if st is not None:
                    st.final_funds_cents, st.turns, st.terminal_reason = run.funds_cents, turns, run.terminal_reason
                if step["done"]:
                    break
                messages = await asyncio.to_thread(run.messages)
            trace.info["ycgym"] = {
                "seed": data.seed,
                "preset": data.preset,
                "start_funds_cents": run.start_funds_cents,
                "final_funds_cents": run.funds_cents,
                "terminal_reason": run.terminal_reason,
                "terminal_detail": step["info"]["terminal_detail"],
                "turns": turns,
            }
        finally:
            await llm.close()
            with contextlib.suppress(Exception):  # closing is best effort; the run's outcome is already recorded
                await asyncio.to_thread(run.close)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class YCBenchEnvConfig(vf.SingleAgentEnvConfig):
    """The single agent seat, on the local ``subprocess`` runtime by default (nothing runs in it)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class YCBenchEnv(vf.Env[YCBenchEnvConfig]):
    """The single-agent env of this taskset (as ``SingleAgentEnv``, with a local runtime by default)."""

    async def run(self, task: vf.Task[Any, Any, Any], agents: vf.Agents[Any]) -> None:
        await agents.agent.run(task)
