"""The text vector env's direct step info (``YCBenchVectorEnv._step_infos``) read a column at a time: dicts with the
same keys in other orders (the info, the status block, prestige, trust) are taken, in the first result's order, as
the general path (Gymnasium's ``_add_info`` folded over ``make_info``) orders them; dicts with as many keys but another
key are declined; the status block's object columns (the event lists) hold the results' own objects; prestige and
trust are copied from the step's batch observation when it encodes the results' own observations."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import bare_vector_env, dtypes_of, folded_infos, key_orders, same
from ycgym import YCBenchVectorEnv
from ycgym.spaces import SpaceParams


def _result(i: int) -> dict[str, Any]:
    status = {
        "sim_time": "2025-01-01T09:00:00",
        "horizon_end": "2026-01-01T09:00:00",
        "funds_cents": 20_000_000 + i,
        "monthly_payroll_cents": 3_800_503,
        "runway_months": 5.26 + i,
        "prestige": {"research": 1 + i, "inference": 1.5, "data_environment": 1, "training": 2},
        "trust": {"Cortex": 0.25 * i, "Helix": i},
        "active_tasks": i,
        "planned_tasks": 0,
        "completed_tasks": 0,
        "bankrupt": False,
        "horizon_reached": False,
        "events": [{"type": "task_completed", "i": i}] if i % 2 else [],
    }
    return {
        "observation": {"text": "{}", "ok": True, "exit_code": 0, "command": "company status", "status": status},
        "reward": 0,
        "terminated": False,
        "truncated": False,
        "info": {"reward_cents": -i, "step": i + 1, "funds_cents": 20_000_000 + i, "terminal_reason": None},
    }


def _reordered(d: dict[str, Any], order: list[int]) -> dict[str, Any]:
    keys = list(d)
    return {keys[k]: d[keys[k]] for k in order}


def _where(r: dict[str, Any], part: str) -> tuple[dict[str, Any], str]:
    """The dict holding ``part`` of result ``r`` and its key there."""
    st_ = r["observation"]["status"]
    return {"info": (r, "info"), "status": (r["observation"], "status"), "prestige": (st_, "prestige"), "trust": (st_, "trust")}[part]


def _check_taken(results: list[dict[str, Any]]) -> None:
    v = bare_vector_env(len(results), 100)
    got = v._step_infos(results)  # type: ignore[arg-type]
    assert got is not None  # the direct path takes it
    ref = folded_infos(v, results)
    assert same(got, ref), (got, ref)
    assert key_orders(got) == key_orders(ref)
    assert dtypes_of(got) == dtypes_of(ref)


@pytest.mark.parametrize("part", ["info", "status", "prestige", "trust"])
def test_same_keys_in_another_order_take_the_direct_path_and_equal_the_fold(part: str) -> None:
    results = [_result(i) for i in range(4)]
    for r in results[1:]:
        holder, key = _where(r, part)
        holder[key] = dict(reversed(list(holder[key].items())))
    _check_taken(results)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 5), seed=st.integers(0, 2**32 - 1), parts=st.sets(st.sampled_from(["info", "status", "prestige", "trust"])))
def test_any_key_orders_take_the_direct_path_and_equal_the_fold(n: int, seed: int, parts: set[str]) -> None:
    rng = random.Random(seed)
    results = [_result(i) for i in range(n)]
    for r in results:
        for part in sorted(parts):
            holder, key = _where(r, part)
            order = list(range(len(holder[key])))
            rng.shuffle(order)
            holder[key] = _reordered(holder[key], order)
    _check_taken(results)


@pytest.mark.parametrize("part", ["info", "status", "prestige", "trust"])
def test_as_many_keys_but_another_key_is_declined(part: str) -> None:
    """A later result's dict with as many keys as the first's, one of them another key: not the same keys, so the
    direct path declines it (the general path puts each key in its column, with its mask)."""
    results = [_result(i) for i in range(3)]
    holder, key = _where(results[2], part)
    d = holder[key]
    last = list(d)[-1]
    holder[key] = {**{k: v for k, v in d.items() if k != last}, "another": d[last]}
    v = bare_vector_env(3, 100)
    assert v._step_infos(results) is None  # type: ignore[arg-type]
    ref = folded_infos(v, results)  # what the step returns then
    inner = ref if part == "info" else ref["status"] if part == "status" else ref["status"][part]
    assert list(inner["_another"]) == [False, False, True]


def test_event_lists_are_the_results_own_objects() -> None:
    results = [_result(i) for i in range(4)]
    got = bare_vector_env(4, 100)._step_infos(results)  # type: ignore[arg-type]
    assert got is not None
    events = got["status"]["events"]
    assert events.dtype == object and events.shape == (4,)
    assert all(events[i] is r["observation"]["status"]["events"] for i, r in enumerate(results))


def _encoded_venv(results: list[dict[str, Any]]) -> tuple[YCBenchVectorEnv, dict[str, Any]]:
    """A vector env holding these results' observations (as a step leaves them) and its batch observation of them."""
    v = bare_vector_env(len(results), 100)
    v.params = SpaceParams(clients=("Cortex", "Helix"))
    v._obs = [r["observation"] for r in results]
    v._starts = [datetime(2025, 1, 1, 9)] * len(results)
    return v, v._batch_obs()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    values=st.lists(st.one_of(st.integers(-(2**60), 2**60), st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([2**53 + 1, 0.1, -0.0])), min_size=6, max_size=6),
)
def test_prestige_and_trust_from_the_batch_equal_the_fold(n: int, seed: int, values: list[Any]) -> None:
    """The real step's direct info: prestige and trust copied from the batch observation's arrays (in any key order,
    ints as ``float`` converts them) equal the fold of ``make_info``."""
    rng = random.Random(seed)
    results = [_result(i) for i in range(n)]
    for r in results:
        stt = r["observation"]["status"]
        for part in ("prestige", "trust"):
            stt[part] = {k: rng.choice(values) for k in stt[part]}
            order = list(range(len(stt[part])))
            rng.shuffle(order)
            stt[part] = _reordered(stt[part], order)
    v, batch = _encoded_venv(results)
    got = v._step_infos(results, batch)  # type: ignore[arg-type]
    assert got is not None
    ref = folded_infos(v, results)
    assert same(got, ref), (got, ref)
    assert key_orders(got) == key_orders(ref) and dtypes_of(got) == dtypes_of(ref)
    for part in ("prestige", "trust"):  # columns of their own, not views of the batch observation
        assert all(got["status"][part][k].base is None for k in results[0]["observation"]["status"][part])


def test_a_batch_of_other_observations_is_not_read() -> None:
    """A batch that does not encode the results' own observations (the env holds others): prestige and trust are
    converted from the results, not read from it."""
    results = [_result(i) for i in range(3)]
    v, batch = _encoded_venv(results)
    bogus = {**batch, "prestige": np.full_like(batch["prestige"], 99.0), "trust": np.full_like(batch["trust"], 99.0)}
    v._obs = [dict(r["observation"]) for r in results]  # equal, not the same objects
    got = v._step_infos(results, bogus)  # type: ignore[arg-type]
    assert got is not None and same(got, folded_infos(v, results))


def test_keys_other_than_the_batchs_names_are_converted_from_the_results() -> None:
    """Trust with a client the batch observation does not encode (as many keys, one another): the batch cannot give
    its column, so the values are converted from the results."""
    results = [_result(i) for i in range(3)]
    v, batch = _encoded_venv(results)
    v.params = SpaceParams(clients=("Cortex", "Zeta"))  # the batch (encoded for Cortex, Helix) is the env's own
    got = v._step_infos(results, batch)  # type: ignore[arg-type]
    assert got is not None and same(got, folded_infos(v, results))
