"""Principals with roles, and what each role may do to a thread.

A principal is an :class:`Identity`: its name (a ``str``, so every place that took a name
still does) and the roles it holds. Roles map to the server's actions; ``starter`` reads only
the threads it started, which the server knows from the ``started_by`` field of a flow's
state (filled in by the server at start, never by the client). Threads of private flows
(the quality workflow's sessions) are their starter's and the admins' alone, whatever the
roles and ``--open-reads`` say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "ADMIN_ROLE",
    "PRIVATE_FLOWS",
    "ROLES",
    "STARTED_BY",
    "Identity",
    "is_admin",
    "role_allows",
    "roles_of",
    "stamp_starter",
    "started_by",
]

ADMIN_ROLE: Final = "admin"
#: What each role may do. ``starter``'s ``read`` covers the threads it started only.
ROLES: Mapping[str, frozenset[str]] = {
    "admin": frozenset({"read", "start", "resume", "fork", "update", "delete"}),
    "reviewer": frozenset({"read", "resume"}),
    "starter": frozenset({"start", "read"}),
    "reader": frozenset({"read"}),
}
#: The state field the server fills with the name of the principal that started a thread.
STARTED_BY: Final = "started_by"
#: Flows whose threads only their starter and the admins may see (seed 003 §6.2).
PRIVATE_FLOWS: tuple[str, ...] = ("quality",)


class Identity(str):
    """A principal's name, with the roles it holds.

    ``roles`` is ``None`` for a principal from an ``authenticate`` hook that returned a
    plain name: no role limits it (the ``authorize`` hook alone decides), as before roles.
    """

    roles: frozenset[str] | None

    def __new__(cls, name: str, roles: Iterable[str] | None = None) -> Identity:
        made = super().__new__(cls, name)
        made.roles = None if roles is None else frozenset(roles)
        return made

    def __reduce__(self) -> Any:
        return (Identity, (str(self), self.roles))


def roles_of(principal: str | None) -> frozenset[str] | None:
    """The roles ``principal`` holds; ``None``: unlimited (a plain name) or anonymous."""
    return principal.roles if isinstance(principal, Identity) else None


def is_admin(principal: str | None) -> bool:
    """Whether ``principal`` is an administrator: holds ``admin``, or is a plain ``admin``."""
    if principal is None:
        return False
    roles = roles_of(principal)
    return ADMIN_ROLE in roles if roles is not None else principal == ADMIN_ROLE


def role_allows(roles: frozenset[str], action: str, *, own: bool) -> bool:
    """Whether one of ``roles`` allows ``action``; ``own``: on a thread the principal
    started (``starter`` reads only those)."""
    for role in roles:
        if action in ROLES.get(role, ()) and (role != "starter" or action != "read" or own):
            return True
    return False


def started_by(state: Mapping[str, Any] | None) -> str | None:
    """Who started the thread whose state (JSON) this is, when its flow records it."""
    if not state:
        return None
    found = state.get(STARTED_BY)
    return found if isinstance(found, str) and found else None


def stamp_starter(flow: Any, value: Any, principal: str | None) -> Any:
    """The start input ``value`` with ``started_by`` set to ``principal``, when ``flow``'s
    state has that field (whatever the client sent there: the server says who started)."""
    if principal is None or STARTED_BY not in flow.schema:
        return value
    if value is None:
        return {STARTED_BY: str(principal)}
    if isinstance(value, Mapping):
        return {**value, STARTED_BY: str(principal)}
    return value  # not a mapping: the runner refuses it (422)
