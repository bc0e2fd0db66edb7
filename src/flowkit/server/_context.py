"""What every route shares: the :class:`Server` context an app keeps, and the request's
principal and thread.

``_app`` builds the context and mounts the routers of ``_api``, ``_streams`` and ``_pages``;
they reach the context through ``server_of`` and open threads with ``open_thread``, so no
router needs the app factory or another router.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Path, Request

from ..runner._result import RunResult
from ..runner._runner import Runner
from ._hub import Hub
from ._models import THREAD_ID_PATTERN
from ._redact import Redact
from ._security import Access, Action, Guard
from ._served import Served
from ._tap import Creations

__all__ = ["Principal", "Server", "ThreadId", "open_thread", "principal_of", "server_of"]


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


def server_of(request: Any) -> Server:
    """The server context of a request or WebSocket."""
    found: Server = request.app.state.flowkit
    return found


ThreadId = Annotated[
    str, Path(pattern=THREAD_ID_PATTERN, max_length=128, description="The thread's id")
]


def principal_of(request: Request) -> str | None:
    """The request's principal (``None``: anonymous); a wrong token is a 401."""
    return server_of(request).guard.principal(request.headers.get("authorization"))


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
