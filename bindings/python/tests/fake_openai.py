"""A tiny OpenAI-compatible Chat Completions server for tests (``http.server`` on 127.0.0.1, random port).

``POST /v1/chat/completions`` answers with what a *script* returns for the request body: a callable
``(body, n) -> reply`` (``n`` counts requests from 1) or a list of replies used in order. A reply is a
dict made by :func:`tool_reply` / :func:`text_reply`, or an :class:`HTTPFailure` to answer with an error
status. Every request body (and its ``Authorization`` header) is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]


class HTTPFailure:
    """Answer the request with ``status`` and an OpenAI-style error body."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


def _usage(usage: tuple[int, int] | None, cost: float | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    u: dict[str, Any] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}
    if cost is not None:
        u["cost"] = cost
    return u


def tool_reply(
    calls: Sequence[tuple[str, dict[str, Any] | str]],
    *,
    content: str | None = None,
    usage: tuple[int, int] | None = (100, 10),
    cost: float | None = None,
    reasoning: str | None = None,
    ids: Sequence[str] | None = None,
) -> Reply:
    """A completion whose message calls tools: ``calls`` are ``(name, arguments)`` (dict or raw JSON text)."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": ids[i] if ids else f"tc_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    return {"message": msg, "finish_reason": "tool_calls", "usage": _usage(usage, cost)}


def text_reply(content: str, *, usage: tuple[int, int] | None = (100, 10), cost: float | None = None) -> Reply:
    """A completion with text and no tool call."""
    return {"message": {"role": "assistant", "content": content}, "finish_reason": "stop", "usage": _usage(usage, cost)}


def run(*commands: str, **kw: Any) -> Reply:
    """``run_command`` calls, one per command."""
    return tool_reply([("run_command", {"command": c}) for c in commands], **kw)


Script = Callable[[dict[str, Any], int], "Reply | HTTPFailure"] | Sequence["Reply | HTTPFailure"]


class FakeOpenAI:
    """The server; use as a context manager. ``base_url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, script: Script, *, api_key: str | None = None) -> None:
        self.script = script
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                auth = self.headers.get("Authorization")
                if fake.api_key is not None and auth != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                    return
                body = json.loads(raw)
                with fake._lock:
                    fake.requests.append(body)
                    fake.auth.append(auth)
                    k = len(fake.requests)
                    reply = fake._reply(body, k)
                if isinstance(reply, HTTPFailure):
                    self._send(reply.status, {"error": {"message": reply.message, "type": "server_error"}})
                    return
                out: dict[str, Any] = {
                    "id": f"chatcmpl-{k}",
                    "object": "chat.completion",
                    "created": 1700000000,
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "message": reply["message"], "finish_reason": reply["finish_reason"]}],
                }
                if reply.get("usage") is not None:
                    out["usage"] = reply["usage"]
                self._send(200, out)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _reply(self, body: dict[str, Any], n: int) -> Reply | HTTPFailure:
        if callable(self.script):
            return self.script(body, n)
        seq = list(self.script)
        if n > len(seq):
            return HTTPFailure(500, f"script exhausted after {len(seq)} replies")
        return seq[n - 1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def last_tool_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of the previous turn (parsed ``tool`` messages after the last assistant message)."""
    msgs = body["messages"]
    out: list[dict[str, Any]] = []
    for m in reversed(msgs):
        if m["role"] == "tool":
            out.append(json.loads(m["content"]))
        elif m["role"] == "assistant":
            break
    return list(reversed(out))
