"""``python -m ycgym.llm``: run an LLM on YC-Bench through the paper's turn protocol and record the run.

Example::

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... \\
        python -m ycgym.llm --model my-model --seed 1 --preset default --out runs/my-model-1

Writes ``DIR/trajectories.arrow``, ``DIR/episodes.arrow``, ``DIR/turns.arrow``, ``DIR/summary.json`` and
``DIR/rollouts/yc_bench_result_<preset>_<seed>_<model>.json``; prints a one-line JSON summary on stdout
and one line per turn on stderr (unless ``--quiet``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .runner import LLMSettings, TurnRecord, run_llm_episode

FIXES = ("fresh_scratchpad", "resume_turn_label", "memory_note_rounds", "episode_restart")


def _positive_int(v: str) -> int:
    n = int(v)
    if n < 1:
        raise argparse.ArgumentTypeError("must be an integer >= 1")
    return n


def _nonneg_int(v: str) -> int:
    n = int(v)
    if n < 0:
        raise argparse.ArgumentTypeError("must be an integer >= 0")
    return n


def _json_object(v: str) -> dict[str, Any]:
    try:
        o = json.loads(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(o, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return o


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ycgym.llm",
        description="Run a model behind an OpenAI-compatible Chat Completions endpoint on YC-Bench (the paper's turn protocol).",
    )
    p.add_argument("--model", required=True, help="model name sent to the endpoint")
    p.add_argument("--seed", type=int, default=1, help="world seed (default 1)")
    p.add_argument("--preset", default="default", help="server preset (default 'default')")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--base-url", default=None, help="endpoint base URL (default: $OPENAI_BASE_URL)")
    p.add_argument("--api-key", default=None, help="API key (default: $OPENAI_API_KEY)")
    p.add_argument(
        "--tools",
        choices=("run_command", "verbs", "all"),
        default="run_command",
        help="tool schemas offered (default run_command, the reference's)",
    )
    p.add_argument("--max-turns", type=_positive_int, default=None, help="end the run after N turns (default: the preset's, none)")
    p.add_argument("--max-episodes", type=_positive_int, default=1, help="episodes per run (restart after bankruptcy; default 1)")
    p.add_argument("--history-keep-rounds", type=_positive_int, default=None, help="rounds kept in the chat (default: the preset's, 20)")
    p.add_argument(
        "--auto-advance-after-turns",
        type=_nonneg_int,
        default=None,
        help="turns without resume before the harness resumes (default: the preset's)",
    )
    p.add_argument("--system-prompt-file", default=None, help="replace the system prompt with this file's text")
    p.add_argument("--fix", action="append", choices=FIXES, default=[], help="turn on a named correction of a reference quirk (repeatable)")
    p.add_argument("--temperature", type=float, default=None, help="send this temperature (the reference sends none)")
    p.add_argument("--top-p", type=float, default=None, help="send this top_p (the reference sends none)")
    p.add_argument("--max-tokens", type=_positive_int, default=None, help="send max_tokens (not sent by default)")
    p.add_argument("--extra-body", type=_json_object, default=None, help="JSON object merged into every request body")
    p.add_argument("--request-timeout", type=float, default=300.0, help="seconds per LLM request (default 300, the reference's)")
    p.add_argument("--retries", type=_positive_int, default=3, help="attempts per LLM call (default 3, the reference's)")
    p.add_argument("--retry-backoff", type=float, default=1.0, help="seconds before the first retry, doubling (default 1)")
    p.add_argument("--price-prompt", type=float, default=None, help="USD per 1M prompt tokens (when the endpoint reports no cost)")
    p.add_argument("--price-completion", type=float, default=None, help="USD per 1M completion tokens")
    p.add_argument("--endpoint", default=None, help="ycgym server endpoint (default: start a local server)")
    p.add_argument("--run-id", default=None, help="run_id column (default llm-<preset>-<seed>-<model>)")
    p.add_argument("--quiet", action="store_true", help="no per-turn progress on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    settings = LLMSettings(
        model=a.model,
        base_url=a.base_url,
        api_key=a.api_key,
        tools=a.tools,
        temperature=a.temperature,
        top_p=a.top_p,
        max_tokens=a.max_tokens,
        extra_body=a.extra_body,
        request_timeout=a.request_timeout,
        retry_max_attempts=a.retries,
        retry_backoff=a.retry_backoff,
        price_prompt=a.price_prompt,
        price_completion=a.price_completion,
    )
    system_prompt = None
    if a.system_prompt_file is not None:
        with open(a.system_prompt_file, encoding="utf-8") as f:
            system_prompt = f.read()

    def progress(t: TurnRecord) -> None:
        info = t.result["info"]
        cmds = ", ".join(r["command"] for r in t.result["tool_results"]) or "(no tool call)"
        tokens = "" if t.prompt_tokens is None else f" tokens={t.prompt_tokens}+{t.completion_tokens or 0}"
        print(
            f"[turn {t.turn} ep {t.episode}] {info['sim_time']} funds=${info['funds_cents'] / 100:,.2f}{tokens} {cmds}"[:400],
            file=sys.stderr,
            flush=True,
        )

    r = run_llm_episode(
        a.model,
        seed=a.seed,
        preset=a.preset,
        out=a.out,
        max_turns=a.max_turns,
        max_episodes=a.max_episodes,
        history_keep_rounds=a.history_keep_rounds,
        auto_advance_after_turns=a.auto_advance_after_turns,
        system_prompt=system_prompt,
        fixes={f: True for f in a.fix} or None,
        settings=settings,
        endpoint=a.endpoint,
        run_id=a.run_id,
        on_turn=None if a.quiet else progress,
    )
    last = r.episode_rows[-1] if r.episode_rows else None
    print(
        json.dumps(
            {
                "model": a.model,
                "seed": a.seed,
                "preset": a.preset,
                "turns": r.rollout["turns_completed"],
                "calls": len(r.turns),
                "terminal_reason": r.terminal_reason,
                "terminal_detail": r.terminal_detail,
                "final_funds_cents": last["final_funds_cents"] if last else None,
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "cost_usd": round(r.cost_usd, 6),
                "files": {k: str(v) for k, v in r.files.items()},
            }
        )
    )
    return 0 if r.terminal_reason != "error" or (r.terminal_detail or "").startswith("max_turns=") else 1


if __name__ == "__main__":
    raise SystemExit(main())
