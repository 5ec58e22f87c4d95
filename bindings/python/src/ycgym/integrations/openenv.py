"""ycgym as an OpenEnv environment (the ``openenv-core`` package), with OpenEnv clients for it.

Two environments, each an :class:`openenv.core.env_server.Environment` served by OpenEnv's own FastAPI app
(``create_app``: HTTP ``/reset`` ``/step`` ``/state`` ``/schema`` ``/health`` and the stateful WebSocket
``/ws`` that OpenEnv clients use):

* ``step`` (:class:`YCBenchEnvironment`): one action = one CLI command (:class:`YCBenchAction`), exactly as
  :class:`ycgym.YCBenchEnv`: the observation carries the command's exact output text and the status block,
  the reward is the step's change in funds in dollars, ``done`` once bankrupt, at the horizon or truncated.
* ``turns`` (:class:`YCBenchTurnEnvironment`): one action = one agent turn of the paper's protocol (the
  model's tool calls, :class:`YCBenchTurnAction`); the observation carries ``messages``, the chat to send to
  the model next (byte for byte the reference harness's), and ``tools``; the reward is the turn's change in
  funds in dollars and, once ``done``, ``score`` is :func:`ycgym.integrations.score.funds_multiple`.

Both states (OpenEnv's ``state``: seed, step count, funds, terminal reason) carry ``due``: null, or why the episode is
due for a reset, after a step or turn (or a step env's reset) whose reply could not be read (``bad_reply``) or whose
wait was stopped (a timeout, Ctrl-C). The server ran it, or may have, and the env never took its result in: ``step``
raises ``RuntimeError`` until ``reset``, and the state's figures are those of the last step taken in, not the server's.

Serve: ``python -m ycgym.integrations.openenv --kind turns --port 8000`` (loopback by default). Connect
with :class:`YCBenchEnvClient` / :class:`YCBenchTurnEnvClient` (OpenEnv ``EnvClient`` subclasses, async;
``.sync()`` for blocking calls). OpenEnv's HTTP ``/reset`` and ``/step`` are stateless (a fresh
environment per request), so episodes go through the WebSocket, as with every OpenEnv environment.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import socket
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, cast

try:
    from fastapi import FastAPI
    from openenv.core import EnvClient
    from openenv.core.client_types import StepResult
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from openenv.core.env_server.types import EnvironmentMetadata
    from pydantic import BaseModel, ConfigDict, Field
    from starlette.websockets import WebSocketDisconnect
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"ycgym.integrations.openenv needs openenv-core ({e}): pip install 'ycgym[openenv]'") from e

from .. import __version__
from .._argtypes import int_in
from .._backend import Backend, check_server
from .._protocol import DEFAULT_MAX_MESSAGE_BYTES
from .._replies import (
    BAD_REPLY_WHY,
    MALFORMED,
    check_fields,
    due_if_not_taken_in,
    failed_reset_why,
    malformed_result,
    named_session,
    step_flags,
)
from .score import TurnRun

__all__ = [
    "YCBenchAction",
    "YCBenchObservation",
    "YCBenchState",
    "YCBenchEnvironment",
    "YCBenchEnvClient",
    "ToolCall",
    "YCBenchTurnAction",
    "YCBenchTurnObservation",
    "YCBenchTurnState",
    "YCBenchTurnEnvironment",
    "YCBenchTurnEnvClient",
    "make_app",
    "BodyLimit",
    "main",
]

Kind = Literal["step", "turns"]

# The wire protocol caps an action at 64 KiB; refuse longer ones at validation, before any session work.
_MAX_COMMAND = 65536


ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class _JSONClient(EnvClient[ActT, ObsT, StateT]):
    """The OpenEnv client of a pydantic action/observation/state triple (OpenEnv's wire form ``{observation,
    reward, done}``); subclasses name the observation and state types."""

    _observation_type: type[Observation]
    _state_type: type[State]

    def _step_payload(self, action: ActT) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(mode="json")
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        reward = payload.get("reward")
        done = bool(payload.get("done", False))
        obs = self._observation_type.model_validate({**payload.get("observation", {}), "reward": reward, "done": done})
        return StepResult(observation=cast(ObsT, obs), reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        return cast(StateT, self._state_type.model_validate(payload))


class _DueState(State):
    """What both environments' states share: ``due``, set while the episode is due for a reset."""

    due: str | None = Field(
        None,
        description="Why the episode is due for a reset (a step or turn the server ran, or may have, whose result the env "
        "never took in: its reply could not be read, or the wait for it was stopped), or null. While set, step refuses "
        "and the other figures are those of the last step taken in, not the server's.",
    )


class _Environment(Environment[ActT, ObsT, StateT]):
    """What both environments share: one instance per OpenEnv session (each holds its own ycgym session, so
    concurrent sessions are safe), ``state`` and the metadata OpenEnv shows."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    _name: str
    _description: str
    _state: StateT
    _due: str | None = None

    @property
    def due(self) -> str | None:
        """Why the episode is due for a reset (see :class:`_DueState`), or None."""
        return self._due

    def _mark_due(self, why: str) -> None:
        self._due = why

    @property
    def state(self) -> StateT:
        """The episode's state (a copy): its figures as of the last step taken in, and ``due`` saying when the episode
        is due for a reset, i.e. when those figures are no longer the server's."""
        return cast(StateT, self._state.model_copy(update={"due": self.due}))

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self._name, description=self._description, version=__version__)


# ---------------------------------------------------------------------------------------------- step env


class YCBenchAction(Action):
    """One command of the reference CLI (``"market browse --limit 5"``; the ``yc-bench`` prefix is optional)."""

    command: str = Field(..., max_length=_MAX_COMMAND, description="One yc-bench CLI command, e.g. 'task accept --task-id Task-42'.")


class YCBenchObservation(Observation):
    """What the agent sees after a command. ``reward`` is the step's change in funds in dollars."""

    text: str = Field("", description="The command's output, exactly as the reference CLI prints it.")
    ok: bool = Field(True, description="Whether the command succeeded.")
    exit_code: int = Field(0, description="The reference CLI's exit code (0 ok, 1 rejected, 2 usage error).")
    command: str | None = Field(None, description="The command verb that ran ('task accept'), or null.")
    status: dict[str, Any] = Field(default_factory=dict, description="Status block: sim_time, funds_cents, prestige, trust, ...")
    reward_cents: int = Field(0, description="The step's change in funds, exact, in cents.")
    funds_cents: int = Field(0, description="Funds after the step, in cents.")
    step: int = Field(0, description="Steps taken in the episode.")
    terminal_reason: str | None = Field(None, description="'bankruptcy', 'horizon_end' or 'max_steps' once done.")


class YCBenchState(_DueState):
    """Episode state: seed, preset, funds, and ``due`` (why the episode is due for a reset, or null)."""

    seed: int | None = None
    preset: str = "default"
    funds_cents: int = 0
    terminal_reason: str | None = None


_OBSERVATION: dict[str, tuple[type, ...]] = {"text": (str,), "ok": (bool,), "exit_code": (int,), "status": (dict,)}
_INFO: dict[str, tuple[type, ...]] = {"reward_cents": (int,), "funds_cents": (int,), "step": (int,), "terminal_reason": (str, type(None))}


class YCBenchEnvironment(_Environment[YCBenchAction, YCBenchObservation, YCBenchState]):
    """The step env (the protocol's ``reset``/``step``, as :class:`ycgym.YCBenchEnv`) behind OpenEnv's interface.

    One instance per OpenEnv session, holding one ycgym session.

    Args:
        preset: ycgym preset. endpoint: ycgym server (``None``: the process's shared local server).
        max_steps: truncate episodes after this many commands.
    """

    _name = "ycgym"
    _description = "YC-Bench (arXiv 2604.01212): run a simulated AI startup for a year with yc-bench CLI commands."

    def __init__(self, preset: str = "default", endpoint: str | None = None, max_steps: int | None = None) -> None:
        super().__init__()
        self._preset = preset
        self._endpoint = endpoint
        self._max_steps = max_steps
        # Connected on the first reset: OpenEnv builds throwaway instances for /state and /metadata.
        self._backend: Backend | None = None
        self._session: str | None = None
        # Why the episode is due for a reset (a reply the env could not read, a wait stopped): step refuses until one is
        # made, and state says so.
        self._due = None
        self._state = YCBenchState(preset=preset)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> YCBenchObservation:
        """Start an episode of ``seed`` (default 0: the simulation needs one; OpenEnv's may be absent)."""
        if kwargs:
            raise ValueError(f"unknown reset arguments: {sorted(kwargs)} (known: seed, episode_id)")
        if self._backend is None:
            self._backend = Backend(self._endpoint)
        s = 0 if seed is None else int(seed)
        opts = {"max_steps": int(self._max_steps)} if self._max_steps is not None else None
        # In a new session when the server reaped this one (idle past its timeout) or the local server restarted.
        unread = "its reset reply could not be read (bad_reply): the server may have made a reset the env never saw"
        with due_if_not_taken_in(self._mark_due, unread, failed_reset_why):
            r = self._backend.reset_session(self._session, s, self._preset, opts)
        sid = named_session(r)
        if sid is not None:  # reused by the next reset, closed with the backend, even when the rest is malformed
            self._session = sid
        try:
            if sid is None:
                raise TypeError("it has no session id")
            obs = self._observation(r["observation"], r["info"], reward=None, done=False)
        except MALFORMED as e:
            self._due = "its reset reply could not be read (bad_reply): the server made a reset the env never saw"
            raise malformed_result("the reset reply", e, "the reset was made") from None
        self._due = None
        self._state = YCBenchState(episode_id=episode_id, step_count=0, seed=s, preset=self._preset, funds_cents=obs.funds_cents)
        return obs

    def step(self, action: YCBenchAction, timeout_s: float | None = None, **kwargs: Any) -> YCBenchObservation:
        """Run ``action.command``; raises ``RuntimeError`` before reset, after the episode ended, or after a step whose
        reply the env could not read (``bad_reply``) or whose wait was stopped (a timeout, Ctrl-C): the server ran it, or
        may have, so the episode is due for a reset, and ``state.due`` says why until one is made."""
        if self._backend is None or self._session is None:
            raise RuntimeError("call reset before step")
        if self._due is not None:
            raise RuntimeError(f"the episode is due for a reset ({self._due}); call reset to start another")
        if self._state.terminal_reason is not None:
            raise RuntimeError(f"the episode is over ({self._state.terminal_reason}); call reset to start another")
        with due_if_not_taken_in(self._mark_due, BAD_REPLY_WHY):
            r = self._backend.client.step(self._session, action.command)
        try:
            reward, term, trunc = step_flags(r)
            obs = self._observation(r["observation"], r["info"], reward=reward, done=term or trunc)
        except MALFORMED as e:
            self._due = BAD_REPLY_WHY
            raise malformed_result("the step reply", e, "the step was run") from None
        self._state.step_count = obs.step
        self._state.funds_cents = obs.funds_cents
        self._state.terminal_reason = obs.terminal_reason
        return obs

    @staticmethod
    def _observation(obs: Mapping[str, Any], info: Mapping[str, Any], *, reward: float | None, done: bool) -> YCBenchObservation:
        """The observation of a reset or step result's ``observation`` and ``info``: KeyError or TypeError when a field
        it holds is missing or not of its protocol type (checked by type: the model's own coercion would take a
        string ``"1"`` for the integer 1)."""
        check_fields(obs, _OBSERVATION)
        check_fields(info, _INFO)
        return YCBenchObservation(
            text=obs["text"],
            ok=bool(obs["ok"]),
            exit_code=int(obs["exit_code"]),
            command=obs.get("command"),
            status=dict(obs["status"]),
            reward_cents=int(info["reward_cents"]),
            funds_cents=int(info["funds_cents"]),
            step=int(info["step"]),
            terminal_reason=info["terminal_reason"],
            reward=reward,
            done=done,
        )

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
            self._session = None


class YCBenchEnvClient(_JSONClient[YCBenchAction, YCBenchObservation, YCBenchState]):
    """OpenEnv client of the ``step`` server: ``await env.reset(seed=1)``, ``await env.step(YCBenchAction(command=...))``."""

    _observation_type = YCBenchObservation
    _state_type = YCBenchState


# ---------------------------------------------------------------------------------------------- turn env


class ToolCall(BaseModel):
    """One tool call of the model's reply (``arguments``: the JSON text the model produced, or an object,
    which is sent as ``json.dumps`` of it)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., max_length=256)
    name: str = Field(..., max_length=256)
    arguments: str | dict[str, Any] = Field(default="{}")


class YCBenchTurnAction(Action):
    """One agent turn: the model's reply. With ``tool_calls`` empty the turn runs no command (a text reply)."""

    tool_calls: list[ToolCall] = Field(default_factory=list, max_length=4096, description="The reply's tool calls, in order.")
    content: str | None = Field(None, description="The reply's text (kept in the chat).")
    reasoning_content: str | None = Field(None, description="The reply's reasoning, when the model returns one.")


class YCBenchTurnObservation(Observation):
    """After reset or a turn: the chat to send next. ``reward`` is the turn's change in funds in dollars."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="The chat for the next model call (system prompt first).")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Tool schemas to send with it (tool_choice 'auto').")
    tool_results: list[dict[str, Any]] = Field(default_factory=list, description="The turn's tool results, in call order.")
    info: dict[str, Any] = Field(default_factory=dict, description="TurnInfo: turn, funds_cents, reward_cents, sim_time, ...")
    terminal_reason: str | None = Field(None, description="'bankruptcy', 'horizon_end' or 'error' (max_turns) once done.")
    score: float | None = Field(None, description="Final funds / starting funds, once done (1.0 = break-even).")


class YCBenchTurnState(_DueState):
    """Run state: seed, preset, starting and current funds, and ``due`` (why the run is due for a reset, or null)."""

    seed: int | None = None
    preset: str = "default"
    start_funds_cents: int = 0
    funds_cents: int = 0
    terminal_reason: str | None = None


class YCBenchTurnEnvironment(_Environment[YCBenchTurnAction, YCBenchTurnObservation, YCBenchTurnState]):
    """The paper's turn protocol (the server's ``TurnEnv``) behind OpenEnv's interface.

    Args:
        preset: ycgym preset. endpoint: ycgym server (``None``: the process's shared local server).
        tools: ``"run_command"`` (the reference's), ``"verbs"`` or ``"all"``.
        options: default ``turn_reset`` options (``max_turns``, ...); ``reset(options=...)`` overrides them.
    """

    _name = "ycgym-turns"
    _description = "YC-Bench (arXiv 2604.01212) with the paper's turn protocol: one action = one LLM turn of tool calls."

    def __init__(
        self,
        preset: str = "default",
        endpoint: str | None = None,
        tools: str = "run_command",
        options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self._preset = preset
        self._endpoint = endpoint
        self._tools = tools
        self._options = dict(options or {})
        self._run: TurnRun | None = None
        self._state = YCBenchTurnState(preset=preset)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> YCBenchTurnObservation:
        """Start a run of ``seed`` (default 0) with the paper's first two messages."""
        if kwargs:
            raise ValueError(f"unknown reset arguments: {sorted(kwargs)} (known: seed, episode_id, options)")
        if self._run is None:
            self._run = TurnRun(self._endpoint, preset=self._preset, options=self._options, tools=self._tools)
        s = 0 if seed is None else int(seed)
        # The run's reset closes its session first: should it fail, there is no run, and the state is that of none.
        self._state = YCBenchTurnState(preset=self._preset)
        res = self._run.reset(s, options=options)
        self._state = YCBenchTurnState(
            episode_id=episode_id,
            seed=s,
            preset=self._preset,
            start_funds_cents=self._run.start_funds_cents,
            funds_cents=self._run.funds_cents,
        )
        return YCBenchTurnObservation(messages=res["messages"], tools=self._run.tools, info=dict(res["info"]), reward=None, done=False)

    def step(self, action: YCBenchTurnAction, timeout_s: float | None = None, **kwargs: Any) -> YCBenchTurnObservation:
        """Play one turn; raises ``RuntimeError`` before reset, after the run ended, or after a turn whose reply could
        not be read (``bad_reply``) or whose wait was stopped: the run is due for a reset, as the step env is, and
        ``state.due`` says why until one is made."""
        run = self._run
        if run is None or run.session is None:
            raise RuntimeError("call reset before step")
        calls = [
            {"id": c.id, "name": c.name, "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}
            for c in action.tool_calls
        ]
        reply: dict[str, Any] = {"tool_calls": calls}
        if action.content is not None:
            reply["content"] = action.content
        if action.reasoning_content is not None:
            reply["reasoning_content"] = action.reasoning_content
        res = run.step(reply)
        self._state.step_count += 1
        self._state.funds_cents = run.funds_cents
        self._state.terminal_reason = run.terminal_reason
        return YCBenchTurnObservation(
            messages=[] if run.done else run.messages(),
            tools=run.tools,
            tool_results=[dict(r) for r in res["tool_results"]],
            info=dict(res["info"]),
            terminal_reason=res["terminal_reason"],
            score=run.score() if run.done else None,
            reward=res["info"]["reward_cents"] / 100,
            done=bool(res["done"]),
        )

    @property
    def due(self) -> str | None:
        """Why the run is due for a reset (:attr:`TurnRun.due`), or None."""
        return None if self._run is None else self._run.due

    def close(self) -> None:
        if self._run is not None:
            self._run.close()
            self._run = None


class YCBenchTurnEnvClient(_JSONClient[YCBenchTurnAction, YCBenchTurnObservation, YCBenchTurnState]):
    """OpenEnv client of the ``turns`` server: send each model reply as a :class:`YCBenchTurnAction`."""

    _observation_type = YCBenchTurnObservation
    _state_type = YCBenchTurnState


# ---------------------------------------------------------------------------------------------- server


class BodyLimit:
    """ASGI middleware: an HTTP request body above ``max_bytes`` is answered ``413`` (a short JSON error) without being
    read whole: at once when its ``Content-Length`` says so, else as soon as the bytes received pass the limit (chunked
    bodies; the app is then told the client left, and whatever it answers is dropped). Without it a request is read
    into memory whatever its size, and FastAPI's validation error echoes the whole input back (a 20 MB command came
    back as a 20 MB reply). WebSocket messages are bounded by the server (uvicorn's ``ws_max_size``, which :func:`main`
    sets to the same limit).

    A WebSocket session ends quietly: openenv-core 0.3 closes the socket again after the client has closed it, and the
    ``WebSocketDisconnect`` that raises (the peer is gone; nothing is left to do) would be logged by uvicorn as an
    ``Exception in ASGI application`` with its traceback after every session (OpenEnv issue 1159)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            with contextlib.suppress(WebSocketDisconnect):
                await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0
        started = refused = False

        async def limited_receive() -> Any:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes and not started:
                    refused = True
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def tracked_send(message: Any) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except Exception:
            if not refused:
                raise

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": f"request body above {self.max_bytes} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def make_app(
    kind: Kind = "turns",
    *,
    preset: str = "default",
    endpoint: str | None = None,
    max_concurrent_envs: int = 64,
    tools: str = "run_command",
    max_steps: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> FastAPI:
    """OpenEnv's FastAPI app serving the ``step`` or ``turns`` environment (one instance per session). HTTP request
    bodies above ``max_body_bytes`` (default: the ycgym server's message limit, 8 MiB) are refused with 413
    (:class:`BodyLimit`); serve it with uvicorn's ``ws_max_size`` at the same value to bound WebSocket messages."""
    factory: Callable[[], Environment[Any, Any, Any]]
    app: FastAPI
    if kind == "step":
        factory = functools.partial(YCBenchEnvironment, preset=preset, endpoint=endpoint, max_steps=max_steps)
        app = create_app(factory, YCBenchAction, YCBenchObservation, env_name="ycgym", max_concurrent_envs=max_concurrent_envs)
    elif kind == "turns":
        factory = functools.partial(YCBenchTurnEnvironment, preset=preset, endpoint=endpoint, tools=tools)
        app = create_app(factory, YCBenchTurnAction, YCBenchTurnObservation, env_name="ycgym", max_concurrent_envs=max_concurrent_envs)
    else:
        raise ValueError(f"kind must be 'step' or 'turns', got {kind!r}")
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be a positive integer, got {max_body_bytes!r}")
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


def main(argv: list[str] | None = None) -> None:
    """``python -m ycgym.integrations.openenv``: serve one kind with uvicorn."""
    import uvicorn

    p = argparse.ArgumentParser(prog="python -m ycgym.integrations.openenv", description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", choices=["step", "turns"], default="turns", help="step: one command per action; turns: one LLM turn")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    p.add_argument("--port", type=int_in(0, 65535), default=8000, help="TCP port (0: any free one; default 8000)")
    p.add_argument("--preset", "--config", dest="preset", default="default", help="a preset of the ycgym server (default 'default'); --config is an alias")
    p.add_argument("--endpoint", default=None, help="ycgym server endpoint (default: start a local one)")
    p.add_argument("--tools", choices=["run_command", "verbs", "all"], default="run_command", help="turns: the tools offered")
    p.add_argument("--max-steps", type=int_in(1), default=None, help="step: truncate episodes after N commands")
    p.add_argument("--max-concurrent-envs", type=int_in(1), default=64, help="WebSocket sessions at once")
    p.add_argument(
        "--max-body-bytes", type=int_in(1), default=DEFAULT_MAX_MESSAGE_BYTES, help="largest HTTP body and WebSocket message (default 8 MiB)"
    )
    a = p.parse_args(argv)
    if a.max_steps is not None and a.kind != "step":
        p.error("--max-steps goes with --kind step")
    check_server(p, a.endpoint, a.preset)
    app = make_app(
        a.kind,
        preset=a.preset,
        endpoint=a.endpoint,
        max_concurrent_envs=a.max_concurrent_envs,
        tools=a.tools,
        max_steps=a.max_steps,
        max_body_bytes=a.max_body_bytes,
    )
    # Bind here so that --port 0 works: the chosen address is printed as one JSON line before serving.
    family = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((a.host, a.port))
    except OSError as e:
        sock.close()
        p.error(f"cannot listen on {a.host}:{a.port}: {e.strerror or e}")
    host, port = sock.getsockname()[:2]
    print(json.dumps({"event": "listening", "url": f"http://{host}:{port}", "kind": a.kind}), flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", ws_max_size=a.max_body_bytes)).run(sockets=[sock])


if __name__ == "__main__":
    main()
