"""Run an LLM through the paper's turn protocol (``TurnEnv`` over the wire) and record the run.

One LLM call is one agent turn. The server's ``turn_*`` ops hold the harness (system prompt with the
scratchpad, context messages, auto-advance, history truncation, ``max_turns``, restarts after
bankruptcy); this module only sends the chat the server hands out (``turn_messages``), exactly as the
reference harness (``agent/runtime/litellm_runtime.py``) does, and plays the model's tool calls back
with ``turn_step``:

* request: ``model``, ``messages``, ``tools``, ``tool_choice="auto"``, ``timeout``. ``temperature`` and
  ``top_p`` are **not** sent (the reference never sends them); give them explicitly to send them.
* retries: ``retry_max_attempts`` attempts with ``retry_backoff * 2**(attempt-1)`` seconds between them
  (none after a context-length error), as the reference does; when every attempt fails the run ends
  with ``terminal_reason="error"`` and the exception's text, and is still recorded.
* assistant message: ``content`` as the model gave it (``None`` with tool calls), and
  ``reasoning_content`` when the model returned one (``reasoning_content`` or ``reasoning``), or always
  for the models the reference treats as thinking providers (``openrouter/deepseek/...``, ``deepseek-v``).

Outputs (see :func:`run_llm_episode`): ``trajectories.arrow`` (:data:`ycgym.arrow.STEP_SCHEMA`, one row
per executed command), ``episodes.arrow``, ``turns.arrow`` (:data:`ycgym.arrow.TURN_SCHEMA`, one row
per LLM call), ``summary.json`` (as ``ycgym run``, keyed by model) and the reference's rollout JSON
``rollouts/yc_bench_result_<preset>_<seed>_<model slug>.json``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from .._backend import Backend
from ..client import ProtocolError, TurnStepResult
from ..episode import Transition, run_episode

__all__ = [
    "EndpointError",
    "FATAL_STATUSES",
    "describe_failure",
    "is_max_turns",
    "LLMSettings",
    "LLMRunResult",
    "TurnRecord",
    "run_llm_episode",
    "make_openai_client",
    "rollout_path",
    "checkpoint_path",
    "read_checkpoint",
    "write_run",
    "ADVERSARIAL_LOYALTY",
]

ToolsMode = Literal["run_command", "verbs", "all"]

ADVERSARIAL_LOYALTY = -0.3
"""Clients below this loyalty are adversarial (as the harness defines it; never shown to the agent)."""

_CONTEXT_ERRORS = (
    "context length",
    "maximum context",
    "max context",
    "too many tokens",
    "prompt is too long",
    "token limit",
    "context window",
)


@dataclass
class LLMSettings:
    """How to call the model.

    Args:
        model: model name sent to the endpoint (also the ``policy`` column and the rollout's ``model``).
        base_url: OpenAI-compatible base URL (default ``OPENAI_BASE_URL``, else the ``openai`` default).
        api_key: key (default ``OPENAI_API_KEY``; ``"EMPTY"`` when neither is set and ``base_url`` is).
        tools: ``"run_command"`` (the reference's single tool), ``"verbs"`` (one tool per command),
            or ``"all"``.
        temperature, top_p: sent only when given (the reference never sends them).
        max_tokens: sent as ``max_tokens`` only when given.
        extra_body: extra JSON fields merged into every request body.
        request_timeout: seconds per request (the reference's ``request_timeout_seconds``, 300).
        retry_max_attempts, retry_backoff: the reference's retry policy (3 attempts, 1 s doubling).
        price_prompt, price_completion: USD per million prompt / completion tokens, used when the
            endpoint does not report a cost itself (``usage.cost``, as OpenRouter does).
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    tools: ToolsMode = "run_command"
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] | None = None
    request_timeout: float = 300.0
    retry_max_attempts: int = 3
    retry_backoff: float = 1.0
    price_prompt: float | None = None
    price_completion: float | None = None

    def __post_init__(self) -> None:
        if self.tools not in ("run_command", "verbs", "all"):
            raise ValueError(f"tools must be 'run_command', 'verbs' or 'all', got {self.tools!r}")
        if self.retry_max_attempts < 1:
            raise ValueError("retry_max_attempts must be >= 1")
        if not (self.request_timeout > 0 and math.isfinite(self.request_timeout)):
            raise ValueError(f"request_timeout must be a finite number > 0, got {self.request_timeout!r}")
        if not (self.retry_backoff >= 0 and math.isfinite(self.retry_backoff)):
            raise ValueError(f"retry_backoff must be a finite number >= 0, got {self.retry_backoff!r}")
        for name in ("temperature", "price_prompt", "price_completion"):
            v = getattr(self, name)
            if v is not None and not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.top_p is not None and not 0 <= self.top_p <= 1:
            raise ValueError(f"top_p must be a number from 0 to 1, got {self.top_p!r}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens!r}")


@dataclass
class TurnRecord:
    """One LLM call (one agent turn) as the runner saw it."""

    call: int
    turn: int
    episode: int
    user_input: str
    messages_sent: int
    content: str | None
    reasoning_content: str | None
    tool_calls: list[dict[str, str]]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float
    timestamp: str
    result: TurnStepResult
    first_step: int = 0
    steps: int = 0


@dataclass
class LLMRunResult:
    """What :func:`run_llm_episode` produced (``files`` is empty without ``out``)."""

    rollout: dict[str, Any]
    step_rows: list[dict[str, Any]]
    episode_rows: list[dict[str, Any]]
    turn_rows: list[dict[str, Any]]
    turns: list[TurnRecord]
    terminal_reason: str | None
    terminal_detail: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    files: dict[str, Path] = field(default_factory=dict)
    endpoint_error: EndpointError | None = None
    """Set when the endpoint refused for good (401, 403, ...): the run stopped at that call."""


def make_openai_client(settings: LLMSettings) -> Any:
    """An ``openai.OpenAI`` client for ``settings`` (its own retries off: the runner retries as the reference)."""
    try:
        import openai
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("ycgym.llm needs the openai package: pip install 'ycgym[llm]'") from e
    base_url, api_key = endpoint_of(settings)
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=settings.request_timeout)


def endpoint_of(settings: LLMSettings) -> tuple[str | None, str]:
    """The base URL (None: the ``openai`` default) and API key ``settings`` call with: ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` where they give none, ``"EMPTY"`` for a key-less base URL; ValueError without either."""
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = settings.api_key or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise ValueError("no API key: set OPENAI_API_KEY or pass --api-key (or a --base-url of a local server)")
        api_key = "EMPTY"
    return base_url, api_key


def rollout_path(out: str | Path, preset: str, seed: int, model: str) -> Path:
    """``OUT/rollouts/yc_bench_result_<preset>_<seed>_<slug>.json`` (slug: ``/`` replaced by ``_``)."""
    return Path(out) / "rollouts" / f"yc_bench_result_{preset}_{seed}_{model.replace('/', '_')}.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _is_context_error(e: BaseException) -> bool:
    t = str(e).lower()
    return any(p in t for p in _CONTEXT_ERRORS)


def _extra(obj: Any, key: str) -> Any:
    """A field the ``openai`` models keep as an extra (``reasoning_content``, ``usage.cost``)."""
    v = getattr(obj, key, None)
    if v is not None:
        return v
    extra = getattr(obj, "model_extra", None)
    return extra.get(key) if isinstance(extra, dict) else None


class _LLMError(RuntimeError):
    pass


class EndpointError(RuntimeError):
    """The endpoint refused the request for good (HTTP 400, 401, 403, 404, 422): retrying cannot help.

    ``status`` is the HTTP status, ``message`` the endpoint's own error message.
    """

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if status is not None else message)
        self.status = status
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled through the constructor's own arguments (a worker process or a Ray actor sends it to the caller):
        # ``args`` holds the formatted text only.
        return (type(self), (self.status, self.message))


FATAL_STATUSES = frozenset({400, 401, 403, 404, 422})
"""HTTP statuses that end a run at once (bad request, bad key, no access, no such model or route)."""


def _status_of(e: BaseException) -> int | None:
    status = getattr(e, "status_code", None)
    if isinstance(status, int):
        return status
    resp = getattr(e, "response", None)
    status = getattr(resp, "status_code", None)
    return status if isinstance(status, int) else None


def _endpoint_message(e: BaseException) -> str:
    """The endpoint's own message (``error.message`` of an OpenAI-style body), else the exception text."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return str(e)


def _retry_after(e: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header of the failed response (numeric form only)."""
    resp = getattr(e, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    try:
        v = headers.get("retry-after")
        return max(0.0, float(v)) if v is not None else None
    except (TypeError, ValueError):
        return None


def describe_failure(e: BaseException) -> str:
    """One line: ``HTTP 429: <message>``, or the exception's kind and text (timeouts, refused connections)."""
    status = _status_of(e)
    if status is not None:
        return f"HTTP {status}: {_endpoint_message(e)}"
    return f"{type(e).__name__}: {e}"


def _default_on_retry(attempt: int, attempts: int, wait: float, why: str) -> None:
    import sys

    print(f"[llm] attempt {attempt}/{attempts} failed ({why}); retrying in {wait:g} s", file=sys.stderr, flush=True)


@dataclass
class _Reply:
    content: str | None
    reasoning: str | None
    tool_calls: list[dict[str, str]]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float


def _complete(
    llm: Any,
    s: LLMSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    call: int,
    on_retry: Callable[[int, int, float, str], None] | None = _default_on_retry,
    sleep: Callable[[float], None] = time.sleep,
) -> _Reply:
    kwargs: dict[str, Any] = {"model": s.model, "messages": messages, "tools": tools, "tool_choice": "auto", "timeout": s.request_timeout}
    if s.temperature is not None:
        kwargs["temperature"] = s.temperature
    if s.top_p is not None:
        kwargs["top_p"] = s.top_p
    if s.max_tokens is not None:
        kwargs["max_tokens"] = s.max_tokens
    if s.extra_body:
        kwargs["extra_body"] = dict(s.extra_body)
    last: BaseException | None = None
    for attempt in range(1, s.retry_max_attempts + 1):
        t0 = time.monotonic()
        try:
            resp = llm.chat.completions.create(**kwargs)
            if not getattr(resp, "choices", None):
                raise _LLMError("the endpoint returned no choices")
            return _parse(resp, s, call, time.monotonic() - t0)
        except Exception as e:
            last = e
            if _is_context_error(e):
                continue
            status = _status_of(e)
            if status in FATAL_STATUSES:
                raise EndpointError(status, _endpoint_message(e)) from e
            if attempt >= s.retry_max_attempts:
                raise _LLMError(f"Failed to run turn after {s.retry_max_attempts} attempts ({describe_failure(e)})") from e
            wait = s.retry_backoff * (2 ** (attempt - 1))
            hint = _retry_after(e)
            if hint is not None:
                wait = max(wait, hint)
            if on_retry is not None:
                on_retry(attempt, s.retry_max_attempts, wait, describe_failure(e))
            sleep(wait)
    raise _LLMError("run_turn failed without result") from last


def _parse(resp: Any, s: LLMSettings, call: int, latency: float) -> _Reply:
    choice = resp.choices[0]
    msg = choice.message
    calls: list[dict[str, str]] = []
    for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
        fn = getattr(tc, "function", None)
        if fn is None:
            continue
        tid = getattr(tc, "id", None) or f"call_{call}_{i}"
        args = fn.arguments if isinstance(fn.arguments, str) else json.dumps(fn.arguments)
        calls.append({"id": str(tid), "name": str(fn.name), "arguments": args})
    reasoning = _extra(msg, "reasoning_content") or _extra(msg, "reasoning") or ""
    thinking = s.model.startswith("openrouter/deepseek/") or "deepseek-v" in s.model
    usage = getattr(resp, "usage", None)
    pt = ct = None
    cost: float | None = None
    if usage is not None:
        pt = getattr(usage, "prompt_tokens", None)
        ct = getattr(usage, "completion_tokens", None)
        reported = _extra(usage, "cost")
        if isinstance(reported, (int, float)) and not isinstance(reported, bool):
            cost = float(reported)
    if cost is None and (s.price_prompt is not None or s.price_completion is not None) and (pt is not None or ct is not None):
        cost = ((pt or 0) * (s.price_prompt or 0.0) + (ct or 0) * (s.price_completion or 0.0)) / 1e6
    return _Reply(
        content=msg.content,
        reasoning=str(reasoning) if (reasoning or thinking) else None,
        tool_calls=calls,
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(pt) if pt is not None else None,
        completion_tokens=int(ct) if ct is not None else None,
        cost_usd=cost,
        latency_s=latency,
    )


# ---------------------------------------------------------------------------------------------- records


def _agent_output(rec: TurnRecord) -> str:
    """The reference's ``final_output`` of a turn."""
    if rec.tool_calls:
        cmds = [r["command"] for r in rec.result["tool_results"]]
        return f"Executed {len(rec.tool_calls)} tool call(s): {', '.join(cmds)}"
    return rec.content or ""


def _commands_executed(rec: TurnRecord) -> list[str]:
    """The reference's ``_extract_commands``: ``"<command> -> <first 500 chars of the tool result>"``."""
    out: list[str] = []
    for r in rec.result["tool_results"]:
        rd: Mapping[str, Any] = r
        if rd["command"]:
            text = json.dumps({k: rd[k] for k in ("ok", "exit_code", "stdout", "stderr", "sim_time", "command")})
            out.append(f"{rd['command']} -> {text[:500]}")
    return out


def _transcript_entry(rec: TurnRecord) -> dict[str, Any]:
    return {
        "turn": rec.turn,
        "timestamp": rec.timestamp,
        "user_input": rec.user_input,
        "agent_output": _agent_output(rec),
        "commands_executed": _commands_executed(rec),
        "prompt_tokens": rec.prompt_tokens or 0,
        "completion_tokens": rec.completion_tokens or 0,
        "cost_usd": rec.cost_usd or 0.0,
    }


def _episode_counts(ts: Mapping[str, Any] | None) -> dict[str, int]:
    """Task counts from a ``time_series`` (harness knowledge: client loyalty)."""
    if not ts:
        return {"tasks_succeeded": 0, "tasks_failed": 0, "accepted_from_adversarial": 0, "accepted_total": 0}
    rats = {c["name"] for c in ts.get("clients", []) if float(c.get("loyalty", 0.0)) < ADVERSARIAL_LOYALTY}
    tasks = ts.get("tasks", [])
    return {
        "tasks_succeeded": sum(1 for t in tasks if t.get("status") == "completed_success"),
        "tasks_failed": sum(1 for t in tasks if t.get("status") == "completed_fail"),
        "accepted_from_adversarial": sum(1 for t in tasks if t.get("client_name") in rats),
        "accepted_total": len(tasks),
    }


def _summary(model: str, episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``summary.json`` as ``ycgym run`` writes it (keyed by policy = model)."""
    funds = sorted(int(e["final_funds_cents"]) for e in episodes)
    n = len(funds)
    med: float = 0
    if n:
        med = funds[n // 2] if n % 2 else (funds[n // 2 - 1] + funds[n // 2]) / 2
    accepted = sum(int(e["accepted_total"]) for e in episodes)
    adv = sum(int(e["accepted_from_adversarial"]) for e in episodes)
    return {
        model: {
            "episodes": n,
            "mean_final_funds_cents": sum(funds) / n if n else 0,
            "median_final_funds_cents": med,
            "min_final_funds_cents": funds[0] if n else 0,
            "max_final_funds_cents": funds[-1] if n else 0,
            "bankruptcies": sum(1 for e in episodes if e["outcome"] == "bankruptcy"),
            "tasks_succeeded": sum(int(e["tasks_succeeded"]) for e in episodes),
            "tasks_failed": sum(int(e["tasks_failed"]) for e in episodes),
            "adversarial_accept_share": adv / accepted if accepted else 0,
        }
    }


# ---------------------------------------------------------------------------------------------- checkpoints

CHECKPOINT_FORMAT = "ycgym-llm-checkpoint-1"


def checkpoint_path(out: str | Path) -> Path:
    """Where a run writing to ``out`` keeps its checkpoint: ``OUT/resume/state.json``."""
    return Path(out) / "resume" / "state.json"


def _json_default(v: Any) -> Any:
    if isinstance(v, datetime):
        return {"__datetime__": v.isoformat()}
    raise TypeError(f"cannot checkpoint {type(v).__name__}")


def _json_hook(d: dict[str, Any]) -> Any:
    if len(d) == 1 and "__datetime__" in d:
        return datetime.fromisoformat(d["__datetime__"])
    return d


def _write_checkpoint(path: str | Path, state: Mapping[str, Any]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, default=_json_default))
    os.replace(tmp, p)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """A checkpoint written by a run with ``checkpoint=path``."""
    st = json.loads(Path(path).read_text(), object_hook=_json_hook)
    if not isinstance(st, dict) or st.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a ycgym-llm checkpoint")
    return st


def _check_resume(st: Mapping[str, Any], *, model: str, seed: int, preset: str, tools: str) -> Mapping[str, Any]:
    if st.get("format") != CHECKPOINT_FORMAT:
        raise ValueError("not a ycgym-llm checkpoint")
    want = {"model": model, "seed": seed, "preset": preset, "tools_mode": tools}
    got = {k: st.get(k) for k in want}
    if got != want:
        raise ValueError(f"the checkpoint is of another run: {got} (this run: {want})")
    return st


# ---------------------------------------------------------------------------------------------- runner


class _Recorder:
    """Builds step rows (one per executed command, auto-advance resumes included) and episode rows."""

    def __init__(self, run_id: str, model: str, preset: str, seed: int) -> None:
        self.run_id, self.model, self.preset, self.seed = run_id, model, preset, seed
        self.rows: list[dict[str, Any]] = []
        self.episodes: list[dict[str, Any]] = []
        self.episode = 1
        self.step = 0
        self.ep_start = 0

    def state(self) -> dict[str, Any]:
        return {"rows": self.rows, "episodes": self.episodes, "episode": self.episode, "step": self.step, "ep_start": self.ep_start}

    def restore(self, st: Mapping[str, Any]) -> None:
        self.rows = [dict(r) for r in st["rows"]]
        self.episodes = [dict(e) for e in st["episodes"]]
        self.episode, self.step, self.ep_start = int(st["episode"]), int(st["step"]), int(st["ep_start"])

    def common(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "episode_id": self.episode - 1, "policy": self.model, "preset": self.preset, "seed": self.seed}

    def start(self, status: Mapping[str, Any]) -> None:
        from ..arrow import status_row

        self.step = 0
        self.ep_start = len(self.rows)
        self.rows.append(status_row(self.common(), 0, None, "", True, 0, None, status, 0))

    def add(self, tool: Mapping[str, Any], call: Mapping[str, Any]) -> None:
        from ..arrow import status_row

        status = call["status"]
        prev = int(self.rows[-1]["funds_cents"])
        self.step += 1
        text = tool["stdout"] if tool["stdout"] else tool["stderr"]
        row = status_row(
            self.common(),
            self.step,
            tool["command"],
            text,
            tool["ok"],
            tool["exit_code"],
            call["command"],
            status,
            int(status["funds_cents"]) - prev,
            self.rows[self.ep_start]["sim_time"],
        )
        self.rows.append(row)

    def end(self, terminal_reason: str | None, time_series: Mapping[str, Any] | None) -> None:
        last = self.rows[-1]
        last["is_last"] = True
        terminated = terminal_reason in ("bankruptcy", "horizon_end")
        last["terminated"] = terminated
        last["truncated"] = not terminated
        self.episodes.append(
            {
                "run_id": self.run_id,
                "episode_id": self.episode - 1,
                "seed": self.seed,
                "policy": self.model,
                "preset": self.preset,
                "final_funds_cents": int(last["funds_cents"]),
                "outcome": terminal_reason if terminated else "truncated",
                "steps": self.step,
                **_episode_counts(time_series),
            }
        )


CAPACITY_WAITS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0, 15.0)
"""Seconds between tries of a turn request the server refused with ``capacity`` (a shared server under memory pressure
refuses new sessions, turns and snapshots; the request did nothing): about 76 s in all before its error is raised."""

_T = TypeVar("_T")


def _when_admitted(fn: Callable[[], _T], sleep: Callable[[float], None] = time.sleep) -> _T:
    """``fn()``, sent again after a wait (``CAPACITY_WAITS``) while the server refuses it with ``capacity``."""
    for wait in CAPACITY_WAITS:
        try:
            return fn()
        except ProtocolError as e:
            if e.code != "capacity":
                raise
            print(f"[llm] the server refused a turn request for now ({e.message}); retrying in {wait:g} s", file=sys.stderr, flush=True)
            sleep(wait)
    return fn()


class _TurnSteps:
    """A turn session as an env of :func:`ycgym.run_episode`: one step is one turn (``turn_step`` with its detail).

    The observation is the chat for the next LLM call (``turn_messages``; ``None`` once the run is over), the info
    the server's whole ``turn_step`` reply, the reward the turn's change of funds in cents. The run is terminated by
    the simulation's own reasons (bankruptcy, horizon end) and truncated by anything else the server ends it with
    (``max_turns``). The session is started by the caller (``turn_reset`` or ``turn_restore``).
    """

    def __init__(self, client: Any, session: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.session = session
        self.sleep = sleep

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> Any:
        raise RuntimeError("a turn session is started with turn_reset or turn_restore; run it with run_episode(start=...)")

    def step(self, action: Mapping[str, Any]) -> tuple[Any, int, bool, bool, TurnStepResult]:
        res = _when_admitted(lambda: self.client.turn_step(self.session, action, detail=True), self.sleep)
        done = bool(res["done"])
        terminated = done and res["terminal_reason"] in ("bankruptcy", "horizon_end")
        messages = None if done else _when_admitted(lambda: self.client.turn_messages(self.session), self.sleep)
        return messages, int(res["info"]["reward_cents"]), terminated, done and not terminated, res


class _LLMAgent:
    """The model as a policy of the episode loop: the chat in, the turn's action (tool calls, content) out.

    A failed call (retries exhausted, a fatal endpoint status) stops the episode: the policy answers ``None`` and
    keeps the exception in :attr:`failure`. What the last call sent and got is kept for the turn's record.
    """

    def __init__(self, llm: Any, s: LLMSettings, tools: list[dict[str, Any]], on_retry: Any, call: int) -> None:
        self.llm, self.s, self.tools, self.on_retry = llm, s, tools, on_retry
        self.call = call
        self.reply: _Reply | None = None
        self.failure: BaseException | None = None
        self.user_input = ""
        self.messages_sent = 0
        self.timestamp = ""

    def __call__(self, messages: list[dict[str, Any]], info: Mapping[str, Any]) -> dict[str, Any] | None:
        self.call += 1
        self.user_input = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        self.messages_sent = len(messages)
        self.timestamp = _now()
        try:
            self.reply = reply = _complete(self.llm, self.s, messages, self.tools, self.call, self.on_retry)
        except (_LLMError, EndpointError) as e:
            self.failure = e
            return None
        action: dict[str, Any] = {"tool_calls": reply.tool_calls, "content": reply.content}
        if reply.reasoning is not None:
            action["reasoning_content"] = reply.reasoning
        return action


def run_llm_episode(
    model: str,
    *,
    seed: int = 1,
    preset: str = "default",
    out: str | Path | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    tools: ToolsMode = "run_command",
    max_turns: int | None = None,
    max_episodes: int = 1,
    history_keep_rounds: int | None = None,
    auto_advance_after_turns: int | None = None,
    system_prompt: str | None = None,
    fixes: Mapping[str, bool] | None = None,
    turn_options: Mapping[str, Any] | None = None,
    settings: LLMSettings | None = None,
    endpoint: str | None = None,
    llm: Any = None,
    run_id: str | None = None,
    timeout: float | None = 60.0,
    on_turn: Callable[[TurnRecord], None] | None = None,
    on_retry: Callable[[int, int, float, str], None] | None = _default_on_retry,
    checkpoint: str | Path | None = None,
    resume: Mapping[str, Any] | None = None,
) -> LLMRunResult:
    """Play one run (``max_episodes`` episodes at most) of the turn protocol with an LLM and record it.

    Args:
        model: model name (ignored when ``settings`` is given).
        seed, preset: the world.
        out: directory for the files (none written when ``None``).
        base_url, api_key, tools: see :class:`LLMSettings` (ignored when ``settings`` is given).
        max_turns, max_episodes, history_keep_rounds, auto_advance_after_turns, system_prompt, fixes:
            ``turn_reset`` options (``None``: the preset's value); ``turn_options`` adds any other.
        endpoint: ycgym server (default: a local server child process).
        llm: an ``openai.OpenAI``-like client (default :func:`make_openai_client`).
        run_id: ``run_id`` column (default ``llm-<preset>-<seed>-<model slug>``).
        timeout: seconds per ycgym request.
        on_turn: called after every LLM call with its record.
        checkpoint: after every completed turn, write the run's state here (the turn session's snapshot, the
            recorded rows and turns; replaced atomically), so that an interrupted run can go on with ``resume``.
        resume: a checkpoint's content (:func:`read_checkpoint`): continue that run from its last completed turn
            instead of starting one (same model, seed, preset and tools required). Against a deterministic
            endpoint the result is the uninterrupted run's.
        on_retry: called before each retry as ``(attempt, attempts, wait_seconds, why)`` (default: a line on
            stderr); ``None``: silent.

    Endpoint failures: HTTP 400, 401, 403, 404 and 422 end the run at once (``terminal_reason="error"``, the
    status and the endpoint's message in ``terminal_detail``, the exception in ``endpoint_error``); 429, 5xx,
    timeouts and refused connections are retried with doubling waits (at least a ``Retry-After``), and when the
    attempts run out the run ends with ``"error"``. Reaching ``max_turns`` ends it with ``terminal_reason``
    ``"max_turns"``, the last step ``truncated`` (the rollout JSON keeps the reference's ``"error"``).

    The step table has one row per executed command: row 0 is the world at the start of the episode,
    then one row per tool call in order, and a row for the harness's own ``sim resume`` when it
    auto-advances (``action`` ``"yc-bench sim resume"``). ``observation_text`` is the tool result's
    stdout (or its stderr when stdout is empty, e.g. usage errors): what the agent saw. The last row of an
    episode is ``terminated`` when it ended in bankruptcy or at the horizon, else ``truncated``
    (``max_turns``, an LLM failure). After a bankruptcy with episodes left the next episode starts
    with a new row 0 (``episode_id`` + 1).
    """
    s = settings if settings is not None else LLMSettings(model=model, base_url=base_url, api_key=api_key, tools=tools)
    if llm is None:
        llm = make_openai_client(s)
    options: dict[str, Any] = dict(turn_options or {})
    for k, v in (
        ("max_turns", max_turns),
        ("history_keep_rounds", history_keep_rounds),
        ("auto_advance_after_turns", auto_advance_after_turns),
        ("system_prompt", system_prompt),
    ):
        if v is not None:
            options[k] = v
    if max_episodes != 1:
        options["max_episodes"] = int(max_episodes)
    if fixes:
        options["fixes"] = dict(fixes)
    slug = s.model.replace("/", "_")
    rid = run_id if run_id is not None else f"llm-{preset}-{seed}-{slug}"
    rec = _Recorder(rid, s.model, preset, seed)
    turns: list[TurnRecord] = []
    episode_logs: list[dict[str, Any]] = []
    backend = Backend(endpoint, timeout=timeout)
    started_at = _now()
    ep_started = started_at
    ended_at: str | None = None
    terminal_reason: str | None = None
    terminal_detail: str | None = None
    final_ts: dict[str, Any] | None = None
    horizon_years: int | None = None
    endpoint_error: EndpointError | None = None
    try:
        c = backend.client
        ep_transcript: list[dict[str, Any]] = []
        call = 0
        last_turn = 0
        if resume is None:
            r = _when_admitted(lambda: c.turn_reset(seed, preset, options=options, tools=s.tools, detail=True))
            session = r["session"]
            backend.sessions.add(session)
            # Plain dicts for the OpenAI-style API (their wire shapes: ycgym._protocol.ChatMessage, FunctionTool).
            messages = cast("list[dict[str, Any]]", r["messages"])
            tool_list = cast("list[dict[str, Any]]", r["tools"])
            status0 = r["detail"]["status"]
            horizon_years = int(status0["horizon_end"][:4]) - int(status0["sim_time"][:4])
            rec.start(status0)
        else:
            st = _check_resume(resume, model=s.model, seed=seed, preset=preset, tools=s.tools)
            rr = _when_admitted(lambda: c.turn_restore(st["snapshot"]))
            session = rr["session"]
            backend.sessions.add(session)
            messages = cast("list[dict[str, Any]]", rr["messages"])
            tool_list = cast("list[dict[str, Any]]", st["tools"])
            horizon_years = st["horizon_years"]
            rec.restore(st["recorder"])
            turns = [TurnRecord(**t) for t in st["turns"]]
            episode_logs = list(st["episode_logs"])
            ep_transcript = list(st["ep_transcript"])
            call, last_turn = int(st["call"]), int(st["last_turn"])
            started_at, ep_started = st["started_at"], st["ep_started"]
        agent = _LLMAgent(llm, s, tool_list, on_retry, call)

        def on_step(step: Transition) -> None:
            nonlocal last_turn, ended_at, terminal_reason, terminal_detail, final_ts, ep_transcript, ep_started
            res = cast("TurnStepResult", step.info)
            reply = cast("_Reply", agent.reply)
            first = rec.step + 1
            detail = res["detail"]
            for tool, cd in zip(res["tool_results"], detail["calls"]):
                rec.add(tool, cd)
            auto = res["info"]["auto_resume"]
            if auto is not None and detail["auto_resume"] is not None:
                rec.add(auto, detail["auto_resume"])
            info = res["info"]
            ep_end = info["episode_end"]
            last_turn = int(info["turn"])
            record = TurnRecord(
                call=agent.call,
                turn=int(ep_end["turns_completed"]) if ep_end else int(info["turn"]),
                episode=rec.episode,
                user_input=agent.user_input,
                messages_sent=agent.messages_sent,
                content=reply.content,
                reasoning_content=reply.reasoning,
                tool_calls=reply.tool_calls,
                finish_reason=reply.finish_reason,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost_usd=reply.cost_usd,
                latency_s=reply.latency_s,
                timestamp=agent.timestamp,
                result=res,
                first_step=first,
                steps=rec.step - first + 1,
            )
            turns.append(record)
            ep_transcript.append(_transcript_entry(record))
            if on_turn is not None:
                on_turn(record)
            if ep_end is not None:
                ended_at = _now()
                ts = cast("dict[str, Any] | None", detail["episode_time_series"])
                rec.end(ep_end["terminal_reason"], ts)
                episode_logs.append(
                    {
                        "episode": int(ep_end["episode"]),
                        "turns_completed": int(ep_end["turns_completed"]),
                        "terminal_reason": ep_end["terminal_reason"],
                        "terminal_detail": ep_end["terminal_detail"],
                        "cost_usd": round(sum(t["cost_usd"] for t in ep_transcript), 6),
                        "started_at": ep_started,
                        "ended_at": ended_at,
                        "transcript": ep_transcript,
                    }
                )
                terminal_reason, terminal_detail = ep_end["terminal_reason"], ep_end["terminal_detail"]
                final_ts = ts
                if not res["done"]:
                    rec.episode += 1
                    rec.start(detail["status"])
                    ep_transcript = []
                    ep_started = _now()
            if checkpoint is not None and not res["done"]:
                _write_checkpoint(
                    checkpoint,
                    {
                        "format": CHECKPOINT_FORMAT,
                        "model": s.model,
                        "seed": seed,
                        "preset": preset,
                        "tools": tool_list,
                        "tools_mode": s.tools,
                        "horizon_years": horizon_years,
                        "snapshot": _when_admitted(lambda: c.turn_snapshot(session)),
                        "recorder": rec.state(),
                        "turns": [asdict(t) for t in turns],
                        "episode_logs": episode_logs,
                        "ep_transcript": ep_transcript,
                        "call": agent.call,
                        "last_turn": last_turn,
                        "started_at": started_at,
                        "ep_started": ep_started,
                    },
                )

        # The one episode loop: one step is one turn, from the session as reset or restored above.
        run_episode(_TurnSteps(c, session), agent, start=(messages, {}), on_step=on_step)
        if agent.failure is not None:
            e = agent.failure
            if isinstance(e, EndpointError):
                endpoint_error = e
            # The reference marks the run terminal with the error and still writes the rollout.
            terminal_reason, terminal_detail = "error", str(e)
            ended_at = _now()
            final_ts = c.turn_time_series(session)
            rec.end("error", final_ts)
            episode_logs.append(
                {
                    "episode": rec.episode,
                    "turns_completed": last_turn,
                    "terminal_reason": "error",
                    "terminal_detail": terminal_detail,
                    "cost_usd": round(sum(t["cost_usd"] for t in ep_transcript), 6),
                    "started_at": ep_started,
                    "ended_at": ended_at,
                    "transcript": ep_transcript,
                }
            )
    finally:
        backend.close()

    rollout = _rollout(
        s.model, seed, horizon_years, max_episodes, started_at, ended_at, terminal_reason, terminal_detail, episode_logs, final_ts
    )
    turn_rows = [_turn_row(rid, s.model, preset, seed, t) for t in turns]
    pt = sum(t.prompt_tokens or 0 for t in turns)
    ct = sum(t.completion_tokens or 0 for t in turns)
    cost = sum(t.cost_usd or 0.0 for t in turns)
    result = LLMRunResult(
        rollout=rollout,
        step_rows=rec.rows,
        episode_rows=rec.episodes,
        turn_rows=turn_rows,
        turns=turns,
        terminal_reason=terminal_reason,
        terminal_detail=terminal_detail,
        prompt_tokens=pt,
        completion_tokens=ct,
        cost_usd=cost,
        endpoint_error=endpoint_error,
    )
    if result.terminal_reason == "error" and is_max_turns(result.terminal_detail):
        result.terminal_reason = "max_turns"
    if out is not None:
        result.files = write_run(result, out, preset=preset, seed=seed, model=s.model)
    if checkpoint is not None and result.terminal_reason != "error" and Path(checkpoint).exists():
        Path(checkpoint).unlink()  # the run is over: nothing to resume (after an error it stays, to resume from)
    return result


def _rollout(
    model: str,
    seed: int,
    horizon_years: int | None,
    max_episodes: int,
    started_at: str,
    ended_at: str | None,
    reason: str | None,
    detail: str | None,
    episodes: list[dict[str, Any]],
    time_series: dict[str, Any] | None,
) -> dict[str, Any]:
    """``RunState.full_rollout()`` plus ``time_series`` (``runner/main.py``)."""
    last = episodes[-1] if episodes else None
    base: dict[str, Any] = {
        "session_id": f"run-{seed}-{model}",
        "model": model,
        "seed": seed,
        "horizon_years": horizon_years,
        "total_episodes": last["episode"] if last else 1,
        "terminal": reason is not None,
        "terminal_reason": reason,
        "terminal_detail": detail,
        "started_at": last["started_at"] if last else started_at,
        "ended_at": ended_at,
    }
    if max_episodes > 1:
        base["turns_completed"] = sum(e["turns_completed"] for e in episodes)
        base["total_cost_usd"] = round(sum(e["cost_usd"] for e in episodes), 6)
        base["episodes"] = episodes
    else:
        base["turns_completed"] = last["turns_completed"] if last else 0
        base["total_cost_usd"] = last["cost_usd"] if last else 0.0
        base["transcript"] = last["transcript"] if last else []
    base["time_series"] = time_series
    return base


def is_max_turns(detail: str | None) -> bool:
    """Whether a terminal detail is the harness's ``max_turns=N reached``."""
    return detail is not None and detail.startswith("max_turns=")


def _reason(ep_end: Mapping[str, Any]) -> str:
    """An episode end's reason, ``"max_turns"`` for the turn cap (the harness reports it as ``"error"``)."""
    r = str(ep_end["terminal_reason"])
    return "max_turns" if r == "error" and is_max_turns(ep_end.get("terminal_detail")) else r


def _turn_row(run_id: str, model: str, preset: str, seed: int, t: TurnRecord) -> dict[str, Any]:
    from ..spaces import parse_time

    info = t.result["info"]
    ep_end = info["episode_end"]
    return {
        "run_id": run_id,
        "episode_id": t.episode - 1,
        "model": model,
        "preset": preset,
        "seed": seed,
        "call": t.call,
        "turn": t.turn,
        "first_step": t.first_step,
        "steps": t.steps,
        "user_input": t.user_input,
        "messages_sent": t.messages_sent,
        "content": t.content,
        "reasoning_content": t.reasoning_content,
        "tool_calls": json.dumps(t.tool_calls),
        "finish_reason": t.finish_reason,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "cost_usd": t.cost_usd,
        "latency_s": t.latency_s,
        "resumed": bool(info["resumed"]),
        "auto_advanced": bool(info["auto_advanced"]),
        "sim_time": parse_time(info["sim_time"]),
        "funds_cents": int(info["funds_cents"]),
        "reward_cents": int(info["reward_cents"]),
        "done": bool(t.result["done"]),
        "terminal_reason": _reason(ep_end) if ep_end else None,
        "terminal_detail": ep_end["terminal_detail"] if ep_end else None,
    }


def write_run(result: LLMRunResult, out: str | Path, *, preset: str, seed: int, model: str) -> dict[str, Path]:
    """Write the run's files to ``out`` (see the module docstring); returns their paths by name."""
    from ..arrow import EPISODE_SCHEMA, STEP_SCHEMA, TURN_SCHEMA, steps_to_table, write_trajectories

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    files = {
        "trajectories": write_trajectories(steps_to_table(result.step_rows), d / "trajectories.arrow", STEP_SCHEMA),
        "episodes": write_trajectories(steps_to_table(result.episode_rows, EPISODE_SCHEMA), d / "episodes.arrow", EPISODE_SCHEMA),
        "turns": write_trajectories(steps_to_table(result.turn_rows, TURN_SCHEMA), d / "turns.arrow", TURN_SCHEMA),
    }
    summary = d / "summary.json"
    summary.write_text(json.dumps(_summary(model, result.episode_rows), indent=2) + "\n")
    files["summary"] = summary
    rp = rollout_path(d, preset, seed, model)
    rp.parent.mkdir(parents=True, exist_ok=True)
    rp.write_text(json.dumps(result.rollout, indent=2))
    files["rollout"] = rp
    return files
