"""Property tests: any text is a valid action; observations always lie in the space."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ycgym import YCBenchEnv
from ycgym.spaces import UnicodeText


@pytest.fixture(scope="module")
def env() -> Iterator[YCBenchEnv]:
    e = YCBenchEnv()
    yield e
    e.close()


VERBS = ["task accept", "task assign", "market browse", "sim resume", "finance ledger", "scratchpad write", "client", ""]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    verb=st.sampled_from(VERBS),
    tail=st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    seed=st.integers(0, 2**31 - 2),
)
def test_arbitrary_text_is_an_ordinary_step(env: YCBenchEnv, verb: str, tail: str, seed: int) -> None:
    env.reset(seed=seed)
    obs, reward, terminated, truncated, info = env.step(f"{verb} {tail}")
    assert obs in env.observation_space
    assert not terminated and not truncated
    if not obs["ok"]:
        assert reward == 0.0 and info["reward_cents"] == 0


@given(st.text(max_size=50))
def test_unicode_text_contains_every_scalar_string(s: str) -> None:
    space = UnicodeText(100)
    assert (s in space) == (not any(0xD800 <= ord(c) <= 0xDFFF for c in s))


def test_unicode_text_space_basics() -> None:
    space = UnicodeText(5)
    assert "héllo" in space and "toolong" not in space and b"x" not in space and "\ud800" not in space
    assert space.sample() in space and not space.is_np_flattenable
    assert space == UnicodeText(5) and space != UnicodeText(6)
