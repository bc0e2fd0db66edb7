"""Limits below the app: a cap on open connections, and deadlines for a request's head and
body, so a client that opens connections and sends slowly, or nothing, cannot hold every file
descriptor of the server (one such client once held ~21,000 and stopped every other request).

uvicorn times out only idle keep-alive connections: a connection that never finishes its
request head, or its body, stays open for good. :func:`guarded_protocol` is uvicorn's h11
protocol with three additions: past ``max_connections`` a new connection is answered 503 and
closed at once; a head not complete ``header_timeout_s`` after the connection opened (or after
the first byte of a later request on it) is answered 408 and closed; so is a body not complete
``body_timeout_s`` after its head. WebSockets count as connections; once upgraded they are the
WebSocket protocol's (its own pings time them out).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import ServerConfigError
from ._problems import PROBLEM_JSON, Problem

__all__ = ["Limits", "fitting_connections", "guarded_protocol"]

#: Descriptors left for the store's files and connections when the cap meets the process's
#: open-files limit.
_SPARE_FDS = 64


@dataclass(frozen=True, slots=True)
class Limits:
    """How many connections, and how long a request may take to arrive."""

    max_connections: int = 1000
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        cap = self.max_connections
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise ServerConfigError(
                f"`max_connections` must be a whole number of at least 1, not {cap!r}."
            )
        for name in ("header_timeout_s", "body_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ServerConfigError(f"`{name}` must be a number of seconds above 0.")


def fitting_connections(max_connections: int) -> int:
    """``max_connections``, lowered to leave some descriptors spare under the process's
    open-files limit (``ulimit -n``): past that limit nothing can be opened, not even a file
    of the store."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not on POSIX
        return max_connections
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - _SPARE_FDS))


def guarded_protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol keeping to ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    return type("GuardedH11Protocol", (_GuardedH11,), {"limits": limits})


_Phase = Literal["head", "body"]

_TOO_MANY = Problem(
    503,
    "too_many_connections",
    "The server holds as many connections as it takes; try again shortly.",
    headers={"Retry-After": "5"},
)
_TIMED_OUT: dict[_Phase, Problem] = {
    "head": Problem(
        408,
        "request_timeout",
        "The request's headers did not arrive in time; send the whole request at once.",
    ),
    "body": Problem(
        408,
        "request_timeout",
        "The request's body did not arrive in time; send the whole request at once.",
    ),
}


class _GuardedH11(H11Protocol):
    limits: Limits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused = False
        self._phase: _Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.server_state.connections) >= self.limits.max_connections:
            self._refused = True  # never counted, never served: closed with a 503
            transport.write(_raw_problem(_TOO_MANY))
            transport.close()
            return
        super().connection_made(transport)
        self._arm("head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # the keep-alive timeout takes over while idle
        self._follow()

    def _follow(self) -> None:
        """The deadline that fits where the request stands."""
        if self not in self.connections or self.transport.is_closing():
            self._disarm()  # upgraded to a WebSocket, or closing
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self.timeout_keep_alive_task is not None:
                self._disarm()  # idle between requests: uvicorn's keep-alive timeout
            elif self._phase != "head":
                self._arm("head")  # part of a head has come
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body")
        else:
            self._disarm()

    def _arm(self, phase: _Phase) -> None:
        self._disarm()
        self._phase = phase
        seconds = self.limits.header_timeout_s if phase == "head" else self.limits.body_timeout_s
        self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._phase = None

    def _expired(self, phase: _Phase) -> None:
        self._deadline = None
        self._phase = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        running = cycle is not None and not cycle.response_complete and phase == "body"
        if not (running and cycle is not None and cycle.response_started):
            self.transport.write(_raw_problem(_TIMED_OUT[phase]))
        if running and cycle is not None:
            # The app sees the client gone (never a cut body as if whole); what it sends
            # from now on is dropped.
            cycle.response_started = True
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()


def _raw_problem(problem: Problem) -> bytes:
    """A whole ``Connection: close`` response, for where no request (or no app) can answer."""
    body = json.dumps(problem.body()).encode()
    reason = {408: "Request Timeout", 503: "Service Unavailable"}[problem.status]
    lines = [
        f"HTTP/1.1 {problem.status} {reason}",
        f"content-type: {PROBLEM_JSON}",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name.lower()}: {value}" for name, value in problem.headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
