"""Who may see a quality session over HTTP: its initiator and the admins (seed 003 §6.2).

``flowkit serve`` takes an ``authorize`` hook; this one applies the rule the state store
already enforces on every read, so the server and ``flowkit quality history`` agree. A
quality thread's id is its session id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from .errors import AccessDeniedError, SessionNotFoundError
from .models import Principal
from .stores import WorkflowStateStore

__all__ = ["session_access"]


def session_access(
    store: WorkflowStateStore, *, admins: Iterable[str] = (), flow: str = "quality"
) -> Callable[[Any], bool]:
    """An ``authorize`` hook for ``create_app``/``flowkit serve``: a thread of ``flow`` is
    readable and changeable only by its session's initiator and by ``admins``; threads of
    other flows pass. Sessions begin with ``flowkit quality check`` (which takes the episode
    lock), so starting one over HTTP is left to admins."""
    admin_names = frozenset(admins)

    def authorize(access: Any) -> bool:
        if access.flow != flow:
            return True
        if access.principal is None:  # anonymous readers never see a session
            return False
        try:
            principal = Principal(user_id=access.principal, admin=access.principal in admin_names)
        except ValidationError:  # a name no session can have (empty, too long)
            return False
        if access.action == "start":
            return principal.admin
        try:
            store.get_session(access.thread_id, principal=principal)
        except AccessDeniedError:
            return False
        except SessionNotFoundError:
            return principal.admin  # an engine thread with no session: not anyone's
        return True

    return authorize
