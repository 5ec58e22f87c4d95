"""The vector env's usual-step info built straight from the step results (``YCBenchVectorEnv._step_infos``) and the
client's all-succeeded ``step_batch`` unpacking: each equal to what the general path gives (Gymnasium's ``_add_info``
folded over ``make_info`` of every result; the per-entry loop), or declined (None) where it is not certain."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import bare_vector_env, dtypes_of, folded_infos, key_orders, same
from ycgym.client import Client, ProtocolError

MAX_TEXT = 6


def _status(i: int, clients: tuple[str, ...] = ("Cortex", "Helix")) -> dict[str, Any]:
    return {
        "sim_time": "2025-01-01T09:00:00",
        "horizon_end": "2026-01-01T09:00:00",
        "funds_cents": 20_000_000 + i,
        "monthly_payroll_cents": 3_800_503,
        "runway_months": 5.26,
        "prestige": {"research": 1, "inference": 1.5, "data_environment": 1, "training": 2},
        "trust": {c: (0 if k % 2 else 0.25 * i) for k, c in enumerate(clients)},
        "active_tasks": i,
        "planned_tasks": 0,
        "completed_tasks": 0,
        "bankrupt": False,
        "horizon_reached": False,
        "events": [{"type": "task_completed", "i": i}] if i % 2 else [],
    }


def _result(i: int) -> dict[str, Any]:
    return {
        "observation": {"text": "{}", "ok": True, "exit_code": 0, "command": "company status", "status": _status(i)},
        "reward": 0,
        "terminated": False,
        "truncated": False,
        "info": {"reward_cents": -i, "step": i + 1, "funds_cents": 20_000_000 + i, "terminal_reason": None},
    }


def test_usual_step_takes_the_direct_path_and_equals_the_fold() -> None:
    v = bare_vector_env(4, MAX_TEXT)
    results = [_result(i) for i in range(4)]
    got = v._step_infos(results)  # type: ignore[arg-type]
    assert got is not None  # the usual step: taken
    ref = folded_infos(v, results)
    assert same(got, ref) and key_orders(got) == key_orders(ref) and dtypes_of(got) == dtypes_of(ref)
    assert got["status"]["prestige"]["research"].dtype == np.float64  # 1 (a JSON int) as float, as make_info does


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("runway_months", [3, 3, 3]),  # ints: float64 after make_info's float()
        ("runway_months", [None, None, None]),
        ("runway_months", [3, None, 2.5]),
        ("runway_months", [True, True, True]),
        ("prestige", [{"research": 2}, {"research": True}, {"research": 1.5}]),
        ("trust", [{"final_obs": 1}, {"final_obs": 0}, {"final_obs": 0.5}]),  # a client's name only the general path takes
        ("trust", [{}, {}, {}]),
    ],
)
def test_status_fields_equal_the_fold(field: str, values: list[Any]) -> None:
    v = bare_vector_env(3, MAX_TEXT)
    results = [_result(i) for i in range(3)]
    for r, x in zip(results, values):
        r["observation"]["status"][field] = x
    got = v._step_infos(results)  # type: ignore[arg-type]
    ref = folded_infos(v, results)
    if got is not None:
        assert same(got, ref) and key_orders(got) == key_orders(ref) and dtypes_of(got) == dtypes_of(ref)
    else:
        assert (field == "trust" and "final_obs" in values[0]) or None in values


@pytest.mark.parametrize("key", ["status", "command", "session", "text_length", "text_truncated"])
def test_server_info_keys_make_info_sets_again(key: str) -> None:
    v = bare_vector_env(2, MAX_TEXT)
    results = [_result(i) for i in range(2)]
    for r in results:
        r["info"] = {key: 7, **r["info"]}
    got = v._step_infos(results)  # type: ignore[arg-type]
    ref = folded_infos(v, results)
    assert got is not None
    assert same(got, ref) and key_orders(got) == key_orders(ref) and dtypes_of(got) == dtypes_of(ref)


def test_a_recording_stop_goes_into_the_info_like_make_info_puts_it() -> None:
    """A result with the server's ``recording_stopped`` (its recording reached its budget): the direct path declines,
    so the vector info has it, for that sub-environment, as the fold of ``make_info`` does."""
    v = bare_vector_env(3, MAX_TEXT)
    results = [_result(i) for i in range(3)]
    note = {"path": "r.arrow", "reason": "client_budget", "message": "recording r.arrow stopped", "bytes": 1000}
    results[1]["recording_stopped"] = note
    ref = folded_infos(v, results)
    assert ref["recording_stopped"]["path"][1] == "r.arrow" and list(ref["_recording_stopped"]) == [False, True, False]
    assert v._step_infos(results) is None  # type: ignore[arg-type]


# Values a column may hold: mostly its usual type, sometimes another (the general path then decides).
_scalar = st.one_of(st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.none(), st.text(max_size=2), st.booleans())


@st.composite
def _results(draw: st.DrawFn) -> tuple[int, list[dict[str, Any]]]:
    n = draw(st.integers(1, 4))
    clients = draw(st.sampled_from([(), ("A",), ("A", "B"), ("final_obs",), ("B", "A")]))
    odd = draw(st.integers(0, 12))  # which irregularity, if any (0-3: none)
    out = []
    for i in range(n):
        r = _result(i)
        stt = r["observation"]["status"]
        stt["trust"] = {c: draw(st.sampled_from([0, 0.5, 1])) for c in clients}
        stt["prestige"] = {k: draw(st.sampled_from([1, 1.25, 3])) for k in stt["prestige"]}
        stt["runway_months"] = draw(st.sampled_from([5.26, 3, None])) if odd == 4 else stt["runway_months"]
        r["observation"]["text"] = "x" * draw(st.integers(0, MAX_TEXT + 1)) if odd == 5 else "{}"
        if odd == 6:
            r["info"]["terminal_reason"] = draw(_scalar)
        if odd == 7 and draw(st.booleans()):
            r["info"]["extra"] = i
        if odd == 8:
            r["info"][draw(st.sampled_from(["status", "command", "session", "text_length", "final_obs"]))] = 1
        if odd == 9:
            stt["prestige"]["research"] = draw(_scalar)
        if odd == 10 and draw(st.booleans()):
            del stt["events"]
        if odd == 11:
            r["observation"]["command"] = draw(st.sampled_from(["task list", None]))
        if odd == 12:
            stt["trust"] = draw(st.sampled_from([None, [], {"A": None}, {"A": "0.5"}]))
        out.append(r)
    return n, out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_results())
def test_direct_step_infos_equal_the_fold_or_decline(case: tuple[int, list[dict[str, Any]]]) -> None:
    n, results = case
    v = bare_vector_env(n, MAX_TEXT)
    try:
        ref: dict[str, Any] | None = folded_infos(v, results)
    except (KeyError, TypeError, ValueError, AttributeError):
        ref = None  # make_info refuses a malformed result: the direct path must decline it
    got = v._step_infos(results)  # type: ignore[arg-type]
    if got is None:
        return
    assert ref is not None
    assert same(got, ref), (got, ref)
    assert key_orders(got) == key_orders(ref)
    assert dtypes_of(got) == dtypes_of(ref)


def _unpack_loop(res: Any, base: int = 0) -> list[Any]:
    """The per-entry loop of ``Client._unpack_batch`` with ``raise_errors`` false (the general path): an entry that is
    not an object, or is ok without an object result, is that entry's ``bad_reply``."""
    out: list[Any] = []
    for i, r in enumerate(res["results"], base):
        if not isinstance(r, dict) or (r.get("ok") and not isinstance(r.get("result"), dict)):
            out.append(ProtocolError("bad_reply", f"step_batch reply entry {i - base} is neither a result nor an error (it may have run)", index=i))
        elif r.get("ok"):
            out.append(r["result"])
        else:
            err = r.get("error") or {}
            out.append(ProtocolError(str(err.get("code", "internal")), str(err.get("message", "")), index=i))
    return out


def _outcome(fn: Any) -> Any:
    try:
        got = fn()
    except Exception as e:  # noqa: BLE001 - the exception's type is the outcome compared
        return ("raised", type(e))
    return [(type(x), x.code, x.message, x.index) if isinstance(x, ProtocolError) else ("result", x) for x in got]


_entry = st.one_of(
    st.fixed_dictionaries({"ok": st.just(True), "result": st.integers(0, 3)}),
    st.fixed_dictionaries({"ok": st.just(True), "result": st.fixed_dictionaries({"k": st.integers(0, 3)})}),
    st.fixed_dictionaries({"ok": st.sampled_from([False, 1, None, "yes"]), "result": st.integers(0, 3)}),
    st.fixed_dictionaries({"ok": st.just(False), "error": st.fixed_dictionaries({"code": st.just("bad_action"), "message": st.text(max_size=3)})}),
    st.fixed_dictionaries({"ok": st.just(True)}),
    st.just({}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_entry, st.just(None)), max_size=6), st.integers(0, 3))
def test_unpack_batch_equals_the_loop(entries: list[dict[str, Any]], base: int) -> None:
    res = {"results": entries}
    assert _outcome(lambda: Client._unpack_batch(res, False, base)) == _outcome(lambda: _unpack_loop(res, base))


def test_unpack_batch_of_all_successes_returns_the_results() -> None:
    res = {"results": [{"ok": True, "result": {"k": i}} for i in range(5)]}
    got: list[Any] = Client._unpack_batch(res, True)
    assert got == [{"k": i} for i in range(5)] and got[2] is res["results"][2]["result"]
