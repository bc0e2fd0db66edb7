"""ASGI middleware: request size and nesting limits, safe headers, one quiet log line per
request, and a last line of defence that turns any unexpected error (or a request cut short
by the server shutting down) into a problem.

The log line holds the method, the route's template (``/threads/{thread_id}``), the status and
the time: never a query string, a header, a body or a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..foundation._logging import get_logger
from ..foundation._untrusted import json_depth
from ._problems import PROBLEM_JSON, Problem

__all__ = ["Guarded"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]

_SHUT_DOWN = Problem(
    503,
    "shutting_down",
    "The server shut down before this request finished; what it started keeps every finished "
    "step: look again once the server is back.",
    headers={"Retry-After": "5"},
)


class Guarded:
    """Wraps the app: limits, headers, logging and the 500 of last resort."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_depth: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_depth = max_depth
        self._log = get_logger()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        started = False
        status = 0

        async def send_safe(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in _SAFE_HEADERS if n not in names]
                message = {**message, "headers": headers}
            await send(message)

        try:
            body = await self._read_body(scope, receive)
            if body is None:
                return  # the client left (or was timed out) before its body was whole
            if isinstance(body, Problem):
                await _send_problem(send_safe, body)
                return
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send_safe)
        except asyncio.CancelledError:
            # Only a stopping server cancels a request (a client that leaves is told through
            # ``receive``): answer what the document promises rather than uvicorn's plain 500.
            if not started:
                with contextlib.suppress(Exception):
                    await _send_problem(send_safe, _SHUT_DOWN)
            raise
        except Exception as exc:
            self._log.error(
                "server_unexpected_error",
                method=scope.get("method"),
                path=_route_of(scope),
                error_type=type(exc).__name__,
            )
            if not started:
                await _send_problem(
                    send_safe,
                    Problem(
                        500,
                        "internal_error",
                        f"The server failed unexpectedly ({type(exc).__name__}); its log has "
                        "the error type.",
                    ),
                )
        finally:
            self._log.info(
                "http_request",
                method=scope.get("method"),
                path=_route_of(scope),
                status=status,
                ms=round((time.perf_counter() - began) * 1000, 1),
            )

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | Problem | None:
        """The whole body, a problem with it, or ``None`` when it never came whole: a body
        cut short is never handed on as if it were all."""
        declared = _header(scope, b"content-length")
        limit = self.max_body_bytes
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return _too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and b"json" in (_header(scope, b"content-type") or "").encode():
            text = body.decode("utf-8", errors="replace")
            if text.count("[") + text.count("{") > self.max_depth and (
                json_depth(text, stop_above=self.max_depth) > self.max_depth
            ):
                return Problem(
                    422,
                    "request_too_deep",
                    f"The JSON body nests deeper than {self.max_depth} levels; flatten it.",
                )
        return body


def _too_large(limit: int) -> Problem:
    return Problem(
        413, "request_too_large", f"The request body is larger than {limit:,} bytes; send less."
    )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text.strip()
    return None


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(unrouted)"


async def _send_problem(send: Send, problem: Problem) -> None:
    body = json.dumps(problem.body()).encode()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in problem.headers.items()),
    ]
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
