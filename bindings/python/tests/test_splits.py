"""Seed splits through the Python env: ``options={"split": ...}`` draws seeds of that split from the reset seed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ycgym import Client, YCBenchEnv, YCBenchVectorEnv
from ycgym.splits import parse_splits, split_seed, split_seeds

ROOT = Path(__file__).resolve().parents[3]


def test_hello_reports_the_cli_splits(endpoint: str) -> None:
    entry = os.environ.get("YCGYM_NODE_ENTRY", str(ROOT / "dist" / "src" / "cli" / "main.js"))
    cli = json.loads(subprocess.run(["node", entry, "splits", "--json"], check=True, capture_output=True, text=True).stdout)
    with Client(endpoint) as c:
        hello = c.hello()
    assert hello["splits"] == cli
    ranges = parse_splits(hello)
    assert ranges == {"test": (1, 100), "validation": (101, 1000), "train": (1001, 2**31 - 1)}
    assert split_seeds(ranges, "test", 3) == [1, 2, 3]
    assert split_seed(ranges, "train", 5) == 1006
    with pytest.raises(ValueError, match="unknown split"):
        split_seed(ranges, "nope", 1)
    with pytest.raises(ValueError, match="non-negative"):
        split_seed(ranges, "test", -1)


def test_env_split_option_draws_from_the_split_deterministically(endpoint: str) -> None:
    env = YCBenchEnv(endpoint=endpoint)
    try:
        env.reset(seed=7, options={"split": "train"})
        assert env.seed_used == 1008
        env.reset(seed=7, options={"split": "validation"})
        assert env.seed_used == 108
        env.reset(seed=250, options={"split": "test"})
        assert env.seed_used == 51  # wraps at the split's 100 seeds
        # Unseeded resets draw the index from the env's generator: same generator state, same seed.
        env.reset(seed=3)
        env.reset(options={"split": "train"})
        a = env.seed_used
        env.reset(seed=3)
        env.reset(options={"split": "train"})
        assert env.seed_used == a and a is not None and 1001 <= a <= 2**31 - 1
        with pytest.raises(ValueError, match="unknown split"):
            env.reset(seed=1, options={"split": "dev"})
    finally:
        env.close()


def test_env_split_world_is_the_world_of_that_seed(endpoint: str) -> None:
    a = YCBenchEnv(endpoint=endpoint, render_mode="ansi")
    b = YCBenchEnv(endpoint=endpoint, render_mode="ansi")
    try:
        oa, _ = a.reset(seed=4, options={"split": "train"})
        ob, _ = b.reset(seed=1005)
        assert a.seed_used == b.seed_used == 1005
        for k in oa:
            assert np.array_equal(np.asarray(oa[k]), np.asarray(ob[k])), k
        a.step("market browse --limit 5")
        b.step("market browse --limit 5")
        assert a.render() == b.render()  # same world, same text
    finally:
        a.close()
        b.close()


def test_vector_env_split_in_reset_options_covers_autoresets(endpoint: str) -> None:
    envs = YCBenchVectorEnv(3, endpoint=endpoint, reset_options={"split": "validation"})
    try:
        envs.reset(seed=10)
        assert envs.seeds_used == (111, 112, 113)
        envs.reset(seed=[0, 899, 900])
        assert envs.seeds_used == (101, 1000, 101)
    finally:
        envs.close()


def test_discrete_env_split_option_draws_the_same_seeds(endpoint: str) -> None:
    """The Discrete env reads ``split`` like the text env (it used to pass it to the server, which ignored it)."""
    from ycgym import YCBenchDiscreteEnv

    env = YCBenchDiscreteEnv(endpoint=endpoint)
    try:
        env.reset(seed=7, options={"split": "train"})
        assert env.seed_used == 1008
        env.reset(seed=250, options={"split": "test"})
        assert env.seed_used == 51
    finally:
        env.close()
