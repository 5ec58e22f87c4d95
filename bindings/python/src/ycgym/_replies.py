"""The checks of a reply's values every env makes before it takes a result in (the single envs and the vector envs
alike), and the ``bad_reply`` error of a result that fails them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .client import ProtocolError
from .spaces import _INT64_MAX, _INT64_MIN

UNREAD = "bad_reply"
"""The code of a reply the client could not read, or whose result holds values of the wrong kind (a malformed reply):
unlike the other failures of a request, the server may have run it, so its state there is one the env never saw. The
envs hold such a session (or sub-environment) due for a reset: the vector envs' next step resets it (DISABLED refuses to
step it until it is reset), a single env's next step raises ``gym.error.ResetNeeded``."""

BAD_REPLY_WHY = "its last step's reply could not be read (bad_reply): the server may have run it"
"""Why a sub-environment whose step reply could not be read is due for a reset (``EpisodeOverError``'s message)."""

MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
"""What the checks of a result (and taking a result's fields) raise for one whose fields are missing or wrong."""

_INFO_COUNTS = ("reward_cents", "step", "funds_cents")


def step_flags(sr: Any) -> tuple[float, bool, bool]:
    """A step result's reward and flags, checked (KeyError, TypeError or ValueError for a result whose fields are wrong).
    Shared by every env's check of a step result before it is taken in."""
    reward, term, trunc = sr["reward"], sr["terminated"], sr["truncated"]
    if type(reward) not in (int, float):
        raise TypeError(f"reward must be a number, got {type(reward).__name__}")
    if type(term) is not bool or type(trunc) is not bool:
        raise TypeError("terminated and truncated must be booleans")
    try:
        return float(reward), term, trunc
    except OverflowError:  # an integer no float holds: malformed, as any other value of the wrong kind
        raise ValueError("reward is an integer past a float's range") from None


def check_info_counts(info: Mapping[str, Any]) -> None:
    """ValueError when an info's count or amount (``reward_cents``, ``step``, ``funds_cents``) is an integer past int64
    (the vector envs' infos hold them in int64 columns: such a result cannot be taken in). Shared by every env."""
    for key in _INFO_COUNTS:
        v = info.get(key)
        if type(v) is int and not _INT64_MIN <= v <= _INT64_MAX:
            raise ValueError(f"info[{key!r}] is past 64 bits")


_STR = {str}


def named_session(r: Any) -> str | None:
    """The session a result names (a reset's, a restore's: what the env holds, and closes with it, even when the rest
    of the result is malformed), or None when it names none (not an object, or its ``session`` not a string)."""
    if type(r) is dict:
        session = r.get("session")
        if type(session) is str:
            return session
    return None


def check_info_texts(info: Mapping[str, Any]) -> None:
    """TypeError when a result's info has an ``action_text`` that is not a string, or an ``admissible_commands`` that is
    not a list of strings (each is absent, or of its type: ``list()`` would make a string a list of its characters, an
    object a list of its keys). Shared by every env's check of a result (when both are absent: two key lookups)."""
    text = info.get("action_text", "")
    if type(text) is not str:
        raise TypeError("info['action_text'] must be a string")
    if "admissible_commands" in info:
        adm = info["admissible_commands"]
        if type(adm) is not list or not set(map(type, adm)) <= _STR:
            raise TypeError("info['admissible_commands'] must be a list of strings")


def check_fields(m: Any, types: Mapping[str, tuple[type, ...]]) -> None:
    """KeyError or TypeError unless ``m`` is an object whose every field named in ``types`` has one of its types (by
    ``type()``: a bool is no integer here, a string no number). Shared by the adapters' checks of a result."""
    if type(m) is not dict:
        raise TypeError(f"an object was expected, got {type(m).__name__}")
    for key, kinds in types.items():
        if type(m[key]) not in kinds:
            raise TypeError(f"{key!r} is {type(m[key]).__name__}, not {' or '.join(k.__name__ for k in kinds)}")


_INT = (int,)
_REASON = (str, type(None))
_TURN_INFO = {"funds_cents": _INT, "reward_cents": _INT, "terminal_detail": _REASON}
_TURN_RESET = {"session": (str,), "messages": (list,), "tools": (list,), "info": (dict,)}
_TURN_STEP = {"tool_results": (list,), "done": (bool,), "terminal_reason": _REASON, "info": (dict,)}


def check_turn_result(r: Any, *, reset: bool) -> None:
    """KeyError or TypeError unless ``r`` (a ``turn_reset`` result when ``reset``, else a ``turn_step`` one) holds, with
    their protocol types, the fields ``TurnRun`` and the adapters built on it read."""
    check_fields(r, _TURN_RESET if reset else _TURN_STEP)
    check_fields(r["info"], _TURN_INFO)


def malformed_result(what: str, e: BaseException, maybe: str, request_id: int | None = None, index: int | None = None) -> ProtocolError:
    """The ``bad_reply`` of ``what`` (a reply, or an entry of one), a result whose fields are wrong (``e`` says how);
    ``maybe`` says what the server did, or may have done, all the same."""
    return ProtocolError(UNREAD, f"{what} is a malformed result ({type(e).__name__}: {e}; {maybe})", request_id=request_id, index=index)


def failed_reset_why(e: BaseException) -> str:
    """Why a sub-environment whose reset the server made (or may have made) in a ``reset`` that failed (``e``) is due."""
    if isinstance(e, ProtocolError):
        return f"its reset was made on the server in a reset call that failed ({e.code}): the server holds an episode the env never returned"
    return f"its reset was stopped ({type(e).__name__}) after it went out: the server may have made it"


def stopped_step_why(e: BaseException) -> str:
    """Why an env (or sub-environment) whose step was stopped (``e``: a timeout, Ctrl-C, ...) before its reply was taken
    in is due."""
    return f"its last step was stopped ({type(e).__name__}) before its reply was taken in: the server ran it, or will"


@contextlib.contextmanager
def due_if_not_taken_in(
    mark: Callable[[str], None], unread_why: str, stopped_why: Callable[[BaseException], str] = stopped_step_why
) -> Iterator[None]:
    """Around a request that changes a session (a step, a turn, a reset in place): when its reply could not be read
    (``bad_reply``) or the wait for it was stopped (a timeout, Ctrl-C), the server ran it, or may have, and its result
    was never taken in: ``mark(why)`` (``unread_why``, or ``stopped_why(error)``) records that the caller is due for a
    reset, and the error goes on. Other errors (the server refused the request) change nothing. Shared by the adapters
    (``TurnRun``, the OpenEnv step env)."""
    try:
        yield
    except ProtocolError as e:
        if e.code == UNREAD:
            mark(unread_why)
        raise
    except (TimeoutError, KeyboardInterrupt) as e:
        mark(stopped_why(e))
        raise
