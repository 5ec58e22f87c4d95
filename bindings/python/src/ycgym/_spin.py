"""Waiting for a reply by polling before sleeping (both transports' clients).

A lockstep step's reply usually comes within ~100 us. A client that sleeps in the kernel until it comes is woken by
the server's write, and that wake-up costs both processes (on a VM, about a third of a round trip over the pipe). So a
client first polls its socket or pipe, yielding the CPU between polls (``sched_yield``: any other runnable process on
that CPU goes first), for up to ``spin_us`` microseconds, and sleeps only after that. ``bindings/python/bench/bench_step.py``
measures it (``env_pipe_sleeping_step_per_s``). A pipe server polls for the next request likewise (``serve
--pipe-spin-us``, which ``LocalServer`` passes with the same budget). ``bench_spin.py`` runs N lockstep envs at once
(each with its own pipe server), both sides polling against both sleeping: on 2 vCPUs 3.20x with 1 process, 0.94x
with 2, 1.08x with 4 and 1.29x with 8 (client polling alone: 1.84x, 0.97x, 1.08x, 1.28x).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ._protocol import MAX_PIPE_SPIN_US

__all__ = ["DEFAULT_SPIN_US", "MAX_SPIN_US", "resolve_spin_us", "spin"]

DEFAULT_SPIN_US = 500
"""How long a client polls for a reply before it sleeps, when this process may run on more than one CPU."""

MAX_SPIN_US = MAX_PIPE_SPIN_US
"""Largest accepted spin (a second; the pipe server's ``MAX_PIPE_SPIN_US``): beyond it a typo, not a setting."""


def resolve_spin_us(spin_us: int | None = None) -> int:
    """The spin of a new client: ``spin_us`` when given, else the environment variable ``YCGYM_SPIN_US``, else
    :data:`DEFAULT_SPIN_US` on a process allowed more than one CPU and 0 (sleep at once) on one CPU, where spinning
    would only delay the server. Raises ValueError for a value that is not a whole number of microseconds in
    ``0..MAX_SPIN_US``."""
    raw: object  # what was given, as given, for the error message
    if spin_us is None:
        env = os.environ.get("YCGYM_SPIN_US", "").strip()
        if env == "":
            return DEFAULT_SPIN_US if _usable_cpus() > 1 else 0
        source, raw = "YCGYM_SPIN_US", env
        value = int(env) if env.isascii() and env.isdigit() else -1
    else:
        source, raw = "spin_us", spin_us
        value = spin_us if type(spin_us) is int else -1  # not a bool, a float or a string
    if not 0 <= value <= MAX_SPIN_US:
        raise ValueError(f"ycgym: {source} must be a whole number of microseconds from 0 to {MAX_SPIN_US}, got {raw!r}")
    return value


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def spin(ready: Callable[[], object], budget_s: float) -> bool:
    """Call ``ready`` until it is true or ``budget_s`` has passed, yielding the CPU between calls; whether it was."""
    yield_cpu = os.sched_yield
    clock = time.perf_counter
    end = clock() + budget_s
    while not ready():
        yield_cpu()
        if clock() >= end:
            return False
    return True
