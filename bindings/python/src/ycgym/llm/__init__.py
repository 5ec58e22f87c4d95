"""Run a model behind any OpenAI-compatible Chat Completions endpoint through the paper's turn protocol.

``python -m ycgym.llm --model M --seed 1 --preset default --out DIR`` or :func:`run_llm_episode`.
Needs the ``openai`` package (``pip install 'ycgym[llm]'``) and ``pyarrow`` for the files. See
:mod:`ycgym.llm.runner` for what is sent and what is written.
"""

from __future__ import annotations

from .runner import (
    ADVERSARIAL_LOYALTY,
    EndpointError,
    LLMRunResult,
    LLMSettings,
    TurnRecord,
    make_openai_client,
    rollout_path,
    run_llm_episode,
    write_run,
)

__all__ = [
    "ADVERSARIAL_LOYALTY",
    "EndpointError",
    "LLMRunResult",
    "LLMSettings",
    "TurnRecord",
    "make_openai_client",
    "rollout_path",
    "run_llm_episode",
    "write_run",
]
