"""``ycgym-llm`` (or ``python -m ycgym.llm``): run an LLM on YC-Bench through the paper's turn protocol.

Example::

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... \\
        ycgym-llm --model my-model --seed 1 --preset default --out runs/my-model-1

Writes ``DIR/trajectories.arrow``, ``DIR/episodes.arrow``, ``DIR/turns.arrow``, ``DIR/summary.json`` and
``DIR/rollouts/yc_bench_result_<preset>_<seed>_<model>.json``; prints a one-line JSON summary on stdout
and one line per turn on stderr (unless ``--quiet``). Several seeds (``--seeds 1-3``, ``--split test
--count 3``) run ``--parallel N`` at a time, each into ``DIR/seed-<N>/``, and ``DIR`` gets the combined
``trajectories.arrow``, ``episodes.arrow`` and ``summary.json`` (so ``ycgym report DIR`` works): one JSON
line per seed on stdout.

Exit status: 0 when every run ended (bankruptcy, horizon, ``max_turns``); 3 when the endpoint refused for good
(HTTP 400/401/403/404/422: the status and the endpoint's message are on stderr); 1 for other failures
(retries of 429/5xx/timeouts exhausted); 2 for a usage error (a bad flag, no API key, an ``--out`` that cannot be
made, nothing to ``--resume``, no server at ``--endpoint``), found before anything runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .._argtypes import int_in, nonneg_float, positive_float, seed, unit_float
from .._backend import check_server
from ..splits import parse_seed_list
from .runner import LLMRunResult, LLMSettings, TurnRecord, _summary, checkpoint_path, endpoint_of, read_checkpoint, run_llm_episode

EXIT_ENDPOINT = 3
SPLITS = ("test", "validation", "train")

FIXES = ("fresh_scratchpad", "resume_turn_label", "memory_note_rounds", "episode_restart")


def _json_object(v: str) -> dict[str, Any]:
    try:
        o = json.loads(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(o, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return o


def _seed_list(v: str) -> list[int]:
    try:
        return parse_seed_list(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _prog() -> str:
    return "ycgym-llm" if os.path.basename(sys.argv[0] or "").startswith("ycgym-llm") else "python -m ycgym.llm"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=_prog(),
        description="Run a model behind an OpenAI-compatible Chat Completions endpoint on YC-Bench (the paper's turn protocol).",
    )
    p.add_argument("--model", required=True, help="model name sent to the endpoint")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=seed, default=None, help="world seed (default 1)")
    seeds.add_argument("--seeds", type=_seed_list, default=None, help="several seeds, e.g. 1-3 or 1,5,9 (each into OUT/seed-N/)")
    seeds.add_argument("--split", choices=SPLITS, default=None, help="the seeds of a split (ycgym splits): with --count, its first N")
    p.add_argument("--count", type=int_in(1), default=None, help="with --split: how many seeds (default: all of test)")
    p.add_argument("--parallel", type=int_in(1), default=1, help="seeds run at the same time (default 1)")
    p.add_argument("--preset", "--config", dest="preset", default="default", help="server preset name (default 'default'); --config is an alias")
    p.add_argument("--out", default=None, help="output directory (required unless --resume)")
    p.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue the interrupted run in DIR from its last completed turn (same flags; finished seeds are kept)",
    )
    p.add_argument("--base-url", default=None, help="endpoint base URL (default: $OPENAI_BASE_URL)")
    p.add_argument("--api-key", default=None, help="API key (default: $OPENAI_API_KEY)")
    p.add_argument(
        "--tools",
        choices=("run_command", "verbs", "all"),
        default="run_command",
        help="tool schemas offered (default run_command, the reference's)",
    )
    p.add_argument("--max-turns", type=int_in(1), default=None, help="end the run after N turns (default: the preset's, none)")
    p.add_argument("--max-episodes", type=int_in(1), default=1, help="episodes per run (restart after bankruptcy; default 1)")
    p.add_argument("--history-keep-rounds", type=int_in(1), default=None, help="rounds kept in the chat (default: the preset's, 20)")
    p.add_argument(
        "--auto-advance-after-turns",
        type=int_in(0),
        default=None,
        help="turns without resume before the harness resumes (default: the preset's)",
    )
    p.add_argument("--system-prompt-file", default=None, help="replace the system prompt with this file's text")
    p.add_argument("--fix", action="append", choices=FIXES, default=[], help="turn on a named correction of a reference quirk (repeatable)")
    p.add_argument("--temperature", type=nonneg_float, default=None, help="send this temperature (the reference sends none)")
    p.add_argument("--top-p", type=unit_float, default=None, help="send this top_p (the reference sends none)")
    p.add_argument("--max-tokens", type=int_in(1), default=None, help="send max_tokens (not sent by default)")
    p.add_argument("--extra-body", type=_json_object, default=None, help="JSON object merged into every request body")
    p.add_argument("--request-timeout", type=positive_float, default=300.0, help="seconds per LLM request (default 300, the reference's)")
    p.add_argument("--retries", type=int_in(1), default=3, help="attempts per LLM call (default 3, the reference's)")
    p.add_argument("--retry-backoff", type=nonneg_float, default=1.0, help="seconds before the first retry, doubling (default 1)")
    p.add_argument("--price-prompt", type=nonneg_float, default=None, help="USD per 1M prompt tokens (when the endpoint reports no cost)")
    p.add_argument("--price-completion", type=nonneg_float, default=None, help="USD per 1M completion tokens")
    p.add_argument("--endpoint", default=None, help="ycgym server endpoint (default: start a local server)")
    p.add_argument("--run-id", default=None, help="run_id column (default llm-<preset>-<seed>-<model>; with several seeds ID-seed-<N>)")
    p.add_argument("--quiet", action="store_true", help="no per-turn progress on stderr")
    return p


def _split_seeds(parser: argparse.ArgumentParser, hello: Any, name: str, count: int | None) -> list[int]:
    """The first ``count`` seeds of split ``name``, with the ranges the server reports in ``hello``."""
    from ..splits import parse_splits, split_seeds

    ranges = parse_splits(hello)
    first, last = ranges[name]
    if count is None and last - first + 1 > 1000:
        parser.error(f"--split {name} has {last - first + 1} seeds: give --count N")
    try:
        return split_seeds(ranges, name, count)
    except ValueError as e:
        parser.error(str(e))


def _missing_packages(*names: str) -> list[str]:
    """The packages of ``names`` that cannot be imported (imported here, as the run would)."""
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def _out_problem(out: str) -> str | None:
    """Why directory ``out`` cannot be made, found before a server starts (the ``mkdir`` after it stays the judge):
    something in its path that is not a directory, or a parent it would be made in that is not writable."""
    path = Path(out).absolute()
    for q in (path, *path.parents):
        if q.exists():
            if not q.is_dir():
                return f"{q} is not a directory"
            if q != path and not os.access(q, os.W_OK | os.X_OK):
                return f"{q} is not writable"
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.count is not None and a.split is None:
        parser.error("--count goes with --split")
    if a.resume is not None:
        if a.out is not None and Path(a.out) != Path(a.resume):
            parser.error("--resume DIR writes to DIR: leave out --out (or give the same directory)")
        if not Path(a.resume).is_dir():
            parser.error(f"--resume: no such directory: {a.resume}")
        a.out = a.resume
        single = checkpoint_path(a.resume)
        if a.seed is None and a.seeds is None and a.split is None and single.exists():
            a.seed = int(read_checkpoint(single)["seed"])
    elif a.out is None:
        parser.error("--out DIR is required")
    try:
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
        endpoint_of(settings)
    except ValueError as e:
        parser.error(str(e))
    # The wheel installs this script without the [llm] extra: say what is missing before anything runs.
    missing = _missing_packages("openai", "pyarrow")
    if missing:
        parser.error(f"the LLM runner needs the {' and '.join(missing)} package{'s' if len(missing) > 1 else ''}: pip install 'ycgym[llm]'")
    system_prompt = None
    if a.system_prompt_file is not None:
        try:
            with open(a.system_prompt_file, encoding="utf-8") as f:
                system_prompt = f.read()
        except (OSError, UnicodeDecodeError) as e:
            parser.error(f"--system-prompt-file: cannot read {a.system_prompt_file}: {getattr(e, 'strerror', None) or e}")
    problem = _out_problem(a.out)
    if problem is not None:
        parser.error(f"--out: cannot create {a.out}: {problem}")

    def check_resume(seeds: Sequence[int], many: bool) -> None:
        if a.resume is None:
            return
        dirs = [Path(a.out) / f"seed-{sd}" for sd in seeds] if many else [Path(a.out)]
        if not any(checkpoint_path(d).exists() or (d / "episodes.arrow").exists() for d in dirs):
            parser.error(f"--resume: nothing to resume in {a.out} (no checkpoint or finished run of these seeds; start anew with --out)")

    # Seeds given as such are checked against --resume before a server starts; a split's come from the server.
    seeds = a.seeds if a.seeds is not None else [a.seed if a.seed is not None else 1]
    many = len(seeds) > 1 or a.seeds is not None or a.split is not None
    if a.split is None:
        check_resume(seeds, many)
    # The server (--endpoint's, else this process's local one, which the run then uses) answers and has the preset.
    hello = check_server(parser, a.endpoint, a.preset)
    if a.split is not None:
        seeds = _split_seeds(parser, hello, a.split, a.count)
        check_resume(seeds, many)
    try:
        Path(a.out).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"--out: cannot create {a.out}: {e.strerror or e}")

    def progress(t: TurnRecord) -> None:
        info = t.result["info"]
        cmds = ", ".join(r["command"] for r in t.result["tool_results"]) or "(no tool call)"
        tokens = "" if t.prompt_tokens is None else f" tokens={t.prompt_tokens}+{t.completion_tokens or 0}"
        print(
            f"[turn {t.turn} ep {t.episode}] {info['sim_time']} funds=${info['funds_cents'] / 100:,.2f}{tokens} {cmds}"[:400],
            file=sys.stderr,
            flush=True,
        )

    stop = threading.Event()
    print_lock = threading.Lock()

    def one(seed: int) -> LLMRunResult | None:
        if stop.is_set():
            return None
        out = Path(a.out) / f"seed-{seed}" if many else Path(a.out)
        cp = checkpoint_path(out)
        resume = None
        if a.resume is not None:
            if cp.exists():
                resume = read_checkpoint(cp)
            elif (out / "episodes.arrow").exists():
                with print_lock:
                    print(json.dumps({"model": a.model, "seed": seed, "preset": a.preset, "resumed": "already finished"}), flush=True)
                return None
        r = run_llm_episode(
            a.model,
            checkpoint=cp,
            resume=resume,
            seed=seed,
            preset=a.preset,
            out=out,
            max_turns=a.max_turns,
            max_episodes=a.max_episodes,
            history_keep_rounds=a.history_keep_rounds,
            auto_advance_after_turns=a.auto_advance_after_turns,
            system_prompt=system_prompt,
            fixes={f: True for f in a.fix} or None,
            settings=settings,
            endpoint=a.endpoint,
            run_id=f"{a.run_id}-seed-{seed}" if a.run_id is not None and many else a.run_id,
            on_turn=None if a.quiet else progress,
        )
        if r.endpoint_error is not None:
            stop.set()  # the endpoint refuses: start no further seed
        last = r.episode_rows[-1] if r.episode_rows else None
        line = {
            "model": a.model,
            "seed": seed,
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
        with print_lock:
            print(json.dumps(line), flush=True)
            if r.endpoint_error is not None:
                e = r.endpoint_error
                print(f"{parser.prog}: the endpoint refused the request (seed {seed}): HTTP {e.status}: {e.message}", file=sys.stderr, flush=True)
            elif r.terminal_reason == "error":
                print(f"{parser.prog}: seed {seed} failed: {r.terminal_detail}", file=sys.stderr, flush=True)
        return r

    if a.parallel > 1 and len(seeds) > 1:
        with ThreadPoolExecutor(max_workers=a.parallel) as pool:
            results = list(pool.map(one, seeds))
    else:
        results = [one(sd) for sd in seeds]
    done = [r for r in results if r is not None]
    if any(r.endpoint_error is not None for r in done):
        if many:
            _write_combined(Path(a.out), a.model, seeds)
        return EXIT_ENDPOINT
    if many:
        _write_combined(Path(a.out), a.model, seeds)
    if stop.is_set() or any(r.terminal_reason == "error" for r in done):
        return 1
    return 0


def _write_combined(out: Path, model: str, seeds: Sequence[int]) -> None:
    """OUT/trajectories.arrow, OUT/episodes.arrow and OUT/summary.json of the seeds' runs (OUT/seed-N/), in seed order."""
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    import pyarrow.ipc as ipc  # type: ignore[import-untyped,unused-ignore]

    from ..arrow import EPISODE_SCHEMA, STEP_SCHEMA, write_trajectories

    def read(p: Path) -> pa.Table:
        with pa.memory_map(str(p), "r") as src:
            return ipc.open_file(src).read_all()

    dirs = [out / f"seed-{sd}" for sd in seeds if (out / f"seed-{sd}" / "episodes.arrow").exists()]
    steps = pa.concat_tables([read(d / "trajectories.arrow") for d in dirs]) if dirs else STEP_SCHEMA.empty_table()
    episodes = pa.concat_tables([read(d / "episodes.arrow") for d in dirs]) if dirs else EPISODE_SCHEMA.empty_table()
    out.mkdir(parents=True, exist_ok=True)
    write_trajectories(steps, out / "trajectories.arrow", STEP_SCHEMA)
    write_trajectories(episodes, out / "episodes.arrow", EPISODE_SCHEMA)
    (out / "summary.json").write_text(json.dumps(_summary(model, episodes.to_pylist()), indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
