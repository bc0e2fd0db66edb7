"""What every route shares: the :class:`Server` context an app keeps, and the request's
principal and thread.

``_app`` builds the context and mounts the routers of ``_api``, ``_streams`` and ``_pages``;
they reach the context through ``server_of`` and open threads with ``open_thread``, so no
router needs the app factory or another router.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from starlette.concurrency import run_in_threadpool

from ..runner._result import RunResult
from ..runner._runner import Runner
from ._hub import Hub
from ._models import THREAD_ID_PATTERN
from ._redact import Redact
from ._security import Access, Action, Guard
from ._served import Served
from ._tap import Creations
from ._underway import Underway

__all__ = [
    "Principal",
    "Server",
    "ThreadId",
    "open_thread",
    "principal_for",
    "principal_of",
    "server_of",
    "thread_runner",
]


@dataclass(eq=False)
class Server:
    """Everything a route needs, kept on ``app.state.flowkit``."""

    served: Served
    hub: Hub
    guard: Guard
    redact: Redact
    executor: ThreadPoolExecutor
    creations: Creations
    title: str
    #: Threads a request of this server runs now (one answer of two sent at once hears 409).
    underway: Underway = field(default_factory=Underway)


def server_of(request: Any) -> Server:
    """The server context of a request or WebSocket."""
    found: Server = request.app.state.flowkit
    return found


ThreadId = Annotated[
    str, Path(pattern=THREAD_ID_PATTERN, max_length=128, description="The thread's id")
]


async def principal_of(request: Request) -> str | None:
    """The request's principal (``None``: anonymous); a wrong token is a 401. The token
    comes as ``Authorization: Bearer <token>`` or as ``X-Api-Key: <token>``.

    Found on the event loop (a hop to a worker thread cost more than the check itself),
    unless an ``authenticate`` hook may be asked: it may block, so it runs on a worker thread.
    """
    header = request.headers.get("authorization")
    if header is None and (key := request.headers.get("x-api-key")) is not None:
        header = f"Bearer {key}"  # LangGraph clients send their token so
    return await principal_for(server_of(request), header)


async def principal_for(server: Server, header: str | None) -> str | None:
    """The principal of an ``Authorization`` header's value, as ``principal_of`` finds it (on
    a worker thread when the ``authenticate`` hook may be asked)."""
    if server.guard.asks_hook:
        return await run_in_threadpool(server.guard.principal, header)
    return server.guard.principal(header)


Principal = Annotated[str | None, Depends(principal_of)]


def open_thread(
    server: Server, principal: str | None, action: Action, thread_id: str
) -> tuple[Runner[Any], RunResult[Any]]:
    """The thread's runner and state, once ``principal`` may do ``action`` to it."""
    server.guard.require(principal, action)
    runner = server.served.runner_of(thread_id)
    result = runner.get_state(thread_id)
    state = runner.flow.schema.dump_state(result.state)
    server.guard.check(Access(principal, action, thread_id, runner.flow.name, state))
    return runner, result


def thread_runner(
    server: Server, principal: str | None, action: Action, thread_id: str
) -> Runner[Any]:
    """The thread's runner, once ``principal`` may do ``action`` to it: ``open_thread`` for
    a route whose runner call reads the thread itself. The state is then read first only for
    an ``authorize`` hook to see; reading it for nothing cost each answer a second load."""
    if server.guard.checks_threads:
        return open_thread(server, principal, action, thread_id)[0]
    server.guard.require(principal, action)
    return server.served.runner_of(thread_id)
