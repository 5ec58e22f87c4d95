"""``encode_observation`` builds the numbers of an observation from two arrays (every float, every integer) and hands
out views of them; it must equal the straightforward encoding, one array per field, field by field. ``encode_batch``
(the vector env's observations, built a column at a time) must equal Gymnasium's ``concatenate`` of those."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array
from hypothesis import given, settings
from hypothesis import strategies as st

from ycgym.spaces import (
    DOMAINS,
    SpaceParams,
    _days,
    check_observation,
    checked_observation,
    encode_batch,
    encode_observation,
    observation_space,
)

_START = datetime(2025, 1, 1, 9, 0, 0)


def plain_encoding(obs: dict[str, Any], params: SpaceParams, start: datetime, max_text_length: int) -> dict[str, Any]:
    """The reference: each field built on its own (0-d arrays for the scalars)."""
    s = obs["status"]
    t = datetime.fromisoformat(s["sim_time"])
    h = datetime.fromisoformat(s["horizon_end"])
    return {
        "text": obs["text"][:max_text_length],
        "command": obs.get("command") or "",
        "ok": np.int64(1 if obs["ok"] else 0),
        "exit_code": np.int64(obs["exit_code"]),
        "funds_cents": np.array(float(s["funds_cents"]), dtype=np.float64),
        "monthly_payroll_cents": np.array(float(s["monthly_payroll_cents"]), dtype=np.float64),
        "runway_months": np.array(2.0**53 if s["runway_months"] is None else float(s["runway_months"]), dtype=np.float64),
        "prestige": np.array([float(s["prestige"][d]) for d in DOMAINS], dtype=np.float64),
        "trust": np.array([float(s["trust"][c]) for c in params.clients], dtype=np.float64),
        "active_tasks": np.int64(s["active_tasks"]),
        "planned_tasks": np.int64(s["planned_tasks"]),
        "completed_tasks": np.int64(s["completed_tasks"]),
        "sim_day": np.array(_days(t, start), dtype=np.float64),
        "days_left": np.array(_days(h, t), dtype=np.float64),
    }


num = st.one_of(st.integers(-(2**40), 2**40), st.floats(-1e12, 1e12, allow_nan=False))
pos = st.one_of(st.integers(0, 2**40), st.floats(0, 1e12, allow_nan=False))


@st.composite
def observations(draw: Any, clients: tuple[str, ...] | None = None) -> tuple[dict[str, Any], SpaceParams]:
    if clients is None:
        clients = tuple(sorted(draw(st.sets(st.text(min_size=1, max_size=8), min_size=0, max_size=7))))
    t = _START + timedelta(microseconds=draw(st.integers(0, 10**14)))
    h = _START + timedelta(microseconds=draw(st.integers(0, 10**14)))

    def iso(x: datetime) -> str:  # with microseconds when there are any, as the server writes it
        return x.isoformat()

    status = {
        "sim_time": iso(t),
        "horizon_end": iso(h),
        "funds_cents": draw(st.integers(-(2**50), 2**50)),
        "monthly_payroll_cents": draw(st.integers(0, 2**40)),
        "runway_months": draw(st.one_of(st.none(), num)),
        "prestige": {d: draw(pos) for d in DOMAINS},
        "trust": {c: draw(pos) for c in clients},
        "active_tasks": draw(st.integers(0, 10**6)),
        "planned_tasks": draw(st.integers(0, 10**6)),
        "completed_tasks": draw(st.integers(0, 10**6)),
        "bankrupt": False,
        "horizon_reached": False,
        "events": [],
    }
    obs = {"text": draw(st.text(max_size=30)), "ok": draw(st.booleans()), "exit_code": draw(st.integers(0, 2)), "command": draw(st.one_of(st.none(), st.text(max_size=10))), "status": status}
    return obs, SpaceParams(clients=clients)


@settings(max_examples=300, deadline=None)
@given(observations(), st.integers(1, 40))
def test_encode_observation_equals_the_plain_encoding(case: tuple[dict[str, Any], SpaceParams], max_text_length: int) -> None:
    obs, params = case
    got = encode_observation(obs, params, _START, max_text_length)
    want = plain_encoding(obs, params, _START, max_text_length)
    assert list(got) == list(want)
    for k, w in want.items():
        g = got[k]
        if isinstance(w, str):
            assert g == w, k
            continue
        assert isinstance(g, (np.ndarray, np.generic)), k
        assert g.dtype == w.dtype and np.shape(g) == np.shape(w), (k, g.dtype, np.shape(g))
        assert np.array_equal(g, w), (k, g, w)


def test_fields_do_not_alias_each_other() -> None:
    """Writing into one field of an observation leaves the others as they were (the shared buffer is cut into slices)."""
    params = SpaceParams(clients=("a", "b"))
    status = {"sim_time": "2025-01-02T09:00:00", "horizon_end": "2026-01-01T09:00:00", "funds_cents": 5, "monthly_payroll_cents": 2, "runway_months": 2.5,
              "prestige": {d: 1 for d in DOMAINS}, "trust": {"a": 0.5, "b": 1.5}, "active_tasks": 1, "planned_tasks": 2, "completed_tasks": 3, "bankrupt": False, "horizon_reached": False, "events": []}
    obs = encode_observation({"text": "x", "ok": True, "exit_code": 0, "command": "c", "status": status}, params, _START)
    before = {k: np.array(v, copy=True) for k, v in obs.items() if not isinstance(v, str)}
    obs["prestige"][:] = 7.0
    obs["trust"][:] = 9.0
    for k, v in before.items():
        if k not in ("prestige", "trust"):
            assert np.array_equal(obs[k], v), k
    assert observation_space(SpaceParams(clients=("a", "b"))).contains(obs)  # what `obs in space` calls


@st.composite
def batches(draw: Any) -> tuple[list[dict[str, Any]], SpaceParams, list[datetime]]:
    """1-6 observations of one preset (the same clients), each env with its own episode start."""
    clients = tuple(sorted(draw(st.sets(st.text(min_size=1, max_size=8), min_size=0, max_size=7))))
    cases = draw(st.lists(observations(clients), min_size=1, max_size=6))
    starts = [_START + timedelta(microseconds=draw(st.integers(0, 10**12))) for _ in cases]
    return [obs for obs, _ in cases], SpaceParams(clients=clients), starts


@settings(max_examples=200, deadline=None)
@given(batches(), st.integers(1, 40))
def test_encode_batch_equals_gymnasiums_concatenate(case: tuple[list[dict[str, Any]], SpaceParams, list[datetime]], max_text_length: int) -> None:
    observations_, params, starts = case
    n = len(observations_)
    got = encode_batch(observations_, params, starts, max_text_length)
    space = observation_space(params)
    empty = create_empty_array(space, n)
    assert isinstance(empty, dict)
    want = concatenate(space, [encode_observation(o, params, s, max_text_length) for o, s in zip(observations_, starts)], empty)
    assert isinstance(want, dict)
    assert sorted(got) == sorted(want)  # the Dict space's keys are sorted
    for k, w in want.items():
        g = got[k]
        if isinstance(w, tuple):
            assert g == w, k
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, g.shape, w.dtype, w.shape)
        assert np.array_equal(g, w), (k, g, w)


_STATUS_NUMBERS = ("funds_cents", "monthly_payroll_cents", "active_tasks", "planned_tasks", "completed_tasks", "runway_months", "prestige", "trust")
# Values of any JSON type a damaged reply could carry where the status block has a number (numpy and float() convert
# several of them without a word: "5", true, null).
_ODD = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from(["5", "1.5", "", "x"]), st.just([]), st.just({}))
# Integers of the right type past what the encodings hold: int64 (counts, amounts, exit code) or float64 (prestige, trust,
# runway).
_HUGE = st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**70, 10**400, -(10**400)])


def _checks(obs: dict[str, Any], params: SpaceParams) -> bool:
    try:
        check_observation(obs, params)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(batches(), st.data())
def test_encode_batch_refuses_what_the_full_check_refuses(case: tuple[list[dict[str, Any]], SpaceParams, list[datetime]], data: st.DataObject) -> None:
    """The vector env takes a step's entries in with a cheap check and lets the batch's encoding find a malformed status
    block (then each entry is checked in full): the encoding must fail exactly when some observation fails the full
    check, whatever the other observations hold, so an entry's fate does not depend on the rest of its batch. It used to
    take a count or amount of ``"5"``, ``true``, ``null`` (NaN) or ``1.5`` (1) that the full check refuses."""
    observations_, params, starts = case
    for obs in observations_:
        for _ in range(data.draw(st.integers(0, 2))):
            key = data.draw(st.sampled_from(_STATUS_NUMBERS))
            st_ = obs["status"]
            if key in ("prestige", "trust"):
                if st_[key]:
                    st_[key][data.draw(st.sampled_from(sorted(st_[key])))] = data.draw(_ODD)
            else:
                st_[key] = data.draw(_ODD)
    ok = all(_checks(o, params) for o in observations_)
    try:
        encode_batch(observations_, params, starts)
    except (KeyError, TypeError, ValueError, AttributeError):
        assert not ok, "encode_batch refused observations that check_observation passes"
    else:
        assert ok, "encode_batch took an observation that check_observation refuses"


@settings(max_examples=300, deadline=None)
@given(batches(), st.data())
def test_the_encodings_refuse_exactly_the_integers_the_full_check_refuses(case: tuple[list[dict[str, Any]], SpaceParams, list[datetime]], data: st.DataObject) -> None:
    """Integers of the right type past what the encodings hold (int64 for the counts, amounts and exit code; float64 for
    prestige, trust and runway) fail ``check_observation``, ``encode_batch`` and ``encode_observation`` alike, with the
    errors the vector envs take for a malformed entry. ``check_observation`` used to pass them and the encodings to
    raise ``OverflowError`` (``Python int too large to convert to C long``, ``int too large to convert to float``),
    which the vector env's intake does not catch: it escaped the step after the env had taken the observation in."""
    observations_, params, starts = case
    for obs in observations_:
        for _ in range(data.draw(st.integers(0, 2))):
            key = data.draw(st.sampled_from((*_STATUS_NUMBERS, "exit_code")))
            value = data.draw(_HUGE)
            st_ = obs["status"]
            if key == "exit_code":
                obs[key] = value
            elif key in ("prestige", "trust"):
                if st_[key]:
                    st_[key][data.draw(st.sampled_from(sorted(st_[key])))] = value
            else:
                st_[key] = value
    each = [_checks(o, params) for o in observations_]
    try:
        encode_batch(observations_, params, starts)
    except (KeyError, TypeError, ValueError, AttributeError):
        assert not all(each), "encode_batch refused observations that check_observation passes"
    else:
        assert all(each), "encode_batch took an observation that check_observation refuses"
    for obs, start, ok in zip(observations_, starts, each):
        try:
            encode_observation(obs, params, start)
        except (KeyError, TypeError, ValueError, AttributeError):
            assert not ok, "encode_observation refused an observation that check_observation passes"
        else:
            assert ok, "encode_observation took an observation that check_observation refuses"


def _check_then_encode(obs: Any, params: SpaceParams, start: datetime, max_text_length: int) -> Any:
    """What checked_observation stands for: the full check, then the encoding (their result, or their exception)."""
    try:
        check_observation(obs, params)
        return encode_observation(obs, params, start, max_text_length)
    except Exception as e:  # noqa: BLE001 - compared with what checked_observation raises
        return e


# Damage anywhere a reply's observation could be damaged: the observation's own fields, the status block's numbers and
# times, the prestige and trust objects (a key missing, one more, a value of another type or past what a float holds).
_OBS_FIELDS = ("text", "ok", "exit_code", "command", "status")
_TIME_ODD = st.one_of(_ODD, st.sampled_from(["2025-13-01T09:00:00", "yesterday", "2025-01-01 09:00:00", "2025-01-01T09:00:00.5"]))


def _damage(obs: dict[str, Any], data: st.DataObject) -> Any:
    kind = data.draw(st.sampled_from(("none", "obs", "number", "huge", "time", "key", "extra", "missing", "whole")))
    status = obs["status"]
    if kind == "obs":
        obs[data.draw(st.sampled_from(_OBS_FIELDS))] = data.draw(_ODD)
    elif kind == "number":
        key = data.draw(st.sampled_from(_STATUS_NUMBERS))
        if key in ("prestige", "trust") and status[key] and data.draw(st.booleans()):
            status[key][data.draw(st.sampled_from(sorted(status[key])))] = data.draw(_ODD)
        else:
            status[key] = data.draw(_ODD)
    elif kind == "huge":
        key = data.draw(st.sampled_from((*_STATUS_NUMBERS, "exit_code")))
        if key == "exit_code":
            obs[key] = data.draw(_HUGE)
        elif key in ("prestige", "trust"):
            if status[key]:
                status[key][data.draw(st.sampled_from(sorted(status[key])))] = data.draw(_HUGE)
        else:
            status[key] = data.draw(_HUGE)
    elif kind == "time":
        status[data.draw(st.sampled_from(("sim_time", "horizon_end")))] = data.draw(_TIME_ODD)
    elif kind == "key":  # a prestige or trust key replaced by another (the count stays)
        key = data.draw(st.sampled_from(("prestige", "trust")))
        if status[key]:
            status[key].pop(data.draw(st.sampled_from(sorted(status[key]))))
            status[key]["zz-other"] = 1.0
    elif kind == "extra":  # one key more, of any value
        status[data.draw(st.sampled_from(("prestige", "trust")))]["zz-extra"] = data.draw(_ODD)
    elif kind == "missing":
        where = data.draw(st.sampled_from(("obs", "status")))
        m = obs if where == "obs" else status
        m.pop(data.draw(st.sampled_from(sorted(m))))
    elif kind == "whole":
        return data.draw(st.one_of(_ODD, st.just(obs["status"])))
    return obs


@settings(max_examples=600, deadline=None)
@given(observations(), st.integers(1, 40), st.data())
def test_checked_observation_is_the_check_then_the_encoding(case: tuple[dict[str, Any], SpaceParams], max_text_length: int, data: st.DataObject) -> None:
    """The single envs' step checks and encodes an observation in one pass (checked_observation): for any observation,
    damaged or not, it returns what check_observation then encode_observation return, with the same types, or raises
    the same exception (type and message)."""
    obs, params = case
    obs = _damage(obs, data)
    want = _check_then_encode(obs, params, _START, max_text_length)
    try:
        got: Any = checked_observation(obs, params, _START, max_text_length)
    except Exception as e:  # noqa: BLE001
        got = e
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"took an observation the check refuses ({want!r})"
        assert (type(got), str(got)) == (type(want), str(want))
        return
    assert not isinstance(got, Exception), f"refused an observation the check passes: {got!r}"
    assert list(got) == list(want)
    for k, w in want.items():
        g = got[k]
        assert type(g) is type(w), k
        if isinstance(w, str):
            assert g == w, k
            continue
        assert g.dtype == w.dtype and np.shape(g) == np.shape(w), (k, g.dtype, np.shape(g))
        assert np.array_equal(g, w), (k, g, w)


@settings(max_examples=300, deadline=None)
@given(observations(), st.data())
def test_checked_observation_converts_integers_as_float_does(case: tuple[dict[str, Any], SpaceParams], data: st.DataObject) -> None:
    """checked_observation hands the integers it checked to numpy as they came (no ``float()`` per value): each float64
    is ``float()`` of its integer, past 2**53 too (where a conversion that rounds otherwise would differ), as
    encode_observation's ``float()`` of each gives it."""
    obs, params = case
    status = obs["status"]
    big = st.integers(-(2**80), 2**80)
    for m in (status["prestige"], status["trust"]):
        for k in m:
            m[k] = data.draw(big)
    status["runway_months"] = data.draw(big)
    status["funds_cents"] = data.draw(st.integers(-(2**63), 2**63 - 1))
    status["monthly_payroll_cents"] = data.draw(st.integers(0, 2**63 - 1))
    got = checked_observation(obs, params, _START)
    assert got["prestige"].tolist() == [float(status["prestige"][d]) for d in DOMAINS]
    assert got["trust"].tolist() == [float(status["trust"][c]) for c in params.clients]
    for key in ("runway_months", "funds_cents", "monthly_payroll_cents"):
        assert got[key].item() == float(status[key]), key
    want = encode_observation(obs, params, _START)
    assert all(np.array_equal(got[k], w) for k, w in want.items() if not isinstance(w, str))
