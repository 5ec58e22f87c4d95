"""``vector.text_actions`` (both text vector envs' check of a step's actions): its path for a tuple or list of plain
ASCII strings gives what checking each action with ``action_text`` gives, and raises what that raises."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ycgym.spaces import action_text
from ycgym.vector import text_actions


class _Str(str):
    def __str__(self) -> str:
        return "not this"


def _each(actions: Any, n: int) -> Any:
    """The reference: every action checked in turn, then the count."""
    try:
        acts = [action_text(a) for a in actions]
        if len(acts) != n:
            raise ValueError(f"expected {n} actions, got {len(acts)}")
        return acts
    except (TypeError, ValueError) as e:
        return (type(e), str(e))


def _got(actions: Any, n: int) -> Any:
    try:
        return text_actions(actions, n)
    except (TypeError, ValueError) as e:
        return (type(e), str(e))


_action = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8),
    st.text(max_size=4),  # non-ASCII
    st.sampled_from(["\ud800", "ok \udfff", "caf\u00e9"]),  # lone surrogates (not text), non-ASCII text
    st.binary(max_size=4),
    st.builds(_Str, st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=4)),
    st.none(),
    st.integers(),
)


@given(st.lists(_action, max_size=6), st.integers(0, 7), st.booleans())
def test_text_actions_equal_each_action_checked(actions: list[Any], n: int, as_tuple: bool) -> None:
    given_actions = tuple(actions) if as_tuple else actions
    got, ref = _got(given_actions, n), _each(actions, n)
    assert got == ref
    if isinstance(got, list):
        assert type(got) is list and all(type(a) is str for a in got)
        assert got is not given_actions  # a list of its own: the caller's list is not kept


def test_plain_ascii_strings_are_taken_as_they_are() -> None:
    acts = ["company status", "task list"]
    got = text_actions(tuple(acts), 2)
    assert got == acts and all(g is a for g, a in zip(got, acts))
    assert text_actions(np.array(acts), 2) == acts  # numpy strings: each converted by action_text
    assert type(text_actions(np.array(acts), 2)[0]) is str
