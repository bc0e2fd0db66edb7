"""Who may do what: bearer tokens, open reads, and the per-thread authorisation hook.

A request's principal comes from its ``Authorization: Bearer`` token: the server's token
(``FLOWKIT_SERVER_TOKEN``) stands for the principal ``admin``; an ``authenticate`` hook can map
other tokens to other principals. Without a principal, a request may only read, and only where
reads were opened explicitly (``open_reads=True``). A principal may hold roles (an
:class:`~flowkit.server._roles.Identity` from a users file or a JWT): each role allows some
actions (``_roles.ROLES``), and threads of private flows (the quality workflow's) are their
starter's and the admins' alone. Every thread operation then asks the ``authorize`` hook with
an :class:`Access`; ``False`` is a 403. Tokens are compared in constant time and never logged
or echoed.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..errors import ServerConfigError
from ._problems import Problem
from ._roles import PRIVATE_FLOWS, Identity, is_admin, role_allows, roles_of, started_by

__all__ = [
    "ADMIN",
    "Access",
    "Action",
    "Authenticate",
    "Authorize",
    "Guard",
    "bearer_of",
    "read_budget",
]

#: The principal the server's own token stands for.
ADMIN = "admin"
_TOKEN_ADMIN = Identity(ADMIN, {"admin"})

Action = Literal["read", "start", "resume", "fork", "update", "delete"]

#: Maps a bearer token to a principal name (a plain ``str``, or an ``Identity`` with roles),
#: or ``None`` for an unknown token.
Authenticate = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class Access:
    """One request to act on one thread, as the ``authorize`` hook sees it.

    ``principal`` is ``None`` for an anonymous reader (only with open reads). ``state`` is the
    thread's state in its JSON form (for ``start``: the start input, or ``None``). ``roles``:
    the principal's roles (from a users file or a JWT; empty for a plain name or anonymous).
    """

    principal: str | None
    action: Action
    thread_id: str
    flow: str
    state: Mapping[str, Any] | None = field(default=None, repr=False)
    roles: frozenset[str] = frozenset()


#: Returns whether ``access`` is allowed; ``False`` answers 403.
Authorize = Callable[[Access], bool]


def bearer_of(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else ``None``."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def _allow_all(access: Access) -> bool:
    return True


#: Rows one listing request may read to decide who sees them, per row asked for (at least
#: ``_MIN_READS``): past that the page comes back short, with a cursor to go on from.
_READS_PER_ROW = 10
_MIN_READS = 200


def read_budget(limit: int) -> int:
    """How many rows one listing request may read (each a thread load, when access is decided
    per thread) to fill a page of ``limit`` rows the caller may see."""
    return max(_MIN_READS, _READS_PER_ROW * limit)


class Guard:
    """The server's security settings, asked by every route."""

    def __init__(
        self,
        *,
        token: str | None,
        open_reads: bool,
        authenticate: Authenticate | None,
        authorize: Authorize | None,
        private_flows: Iterable[str] = PRIVATE_FLOWS,
    ) -> None:
        if token is not None and len(token) < 16:
            raise ServerConfigError(
                "The server token is shorter than 16 characters; use a long random one, e.g. "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
            )
        self._token = token.encode() if token is not None else None
        self.open_reads = open_reads
        self._authenticate = authenticate
        self._hook: Authorize = authorize or _allow_all
        self.authorize: Authorize = self._hook
        self._private = frozenset(private_flows)

    def serving(self, flows: Iterable[str]) -> None:
        """Set the rules for the flows the server runs: roles and private flows are decided
        per thread wherever someone but the admin can get in (other principals, open reads).
        Otherwise ``authorize`` stays the hook given (nothing is read for nothing)."""
        self._private = self._private & frozenset(flows)
        if self._authenticate is not None or (self._private and self.open_reads):
            self.authorize = self._decide

    def _decide(self, access: Access) -> bool:
        """The built-in rules (roles, private flows), then the ``authorize`` hook."""
        principal = access.principal
        roles = roles_of(principal)
        if roles is not None and not access.roles:
            access = replace(access, roles=roles)
        if access.action != "start":
            own = principal is not None and started_by(access.state) == principal
            if access.flow in self._private and not (own or is_admin(principal)):
                return False
            if roles is not None and not role_allows(roles, access.action, own=own):
                return False
        return self._hook(access)

    @property
    def checks_threads(self) -> bool:
        """Whether an ``authorize`` hook decides thread operations (else all are allowed)."""
        return self.authorize is not _allow_all

    @property
    def asks_hook(self) -> bool:
        """Whether finding a principal may ask the ``authenticate`` hook (which may block)."""
        return self._authenticate is not None

    @property
    def can_mutate(self) -> bool:
        """Whether any request could ever change something (a token or hook is set)."""
        return self._token is not None or self._authenticate is not None

    def principal(self, header: str | None) -> str | None:
        """The principal the ``Authorization`` header proves, or ``None``.

        A header that is present but wrong is a 401 at once, even for reads: a client with a
        stale token should hear about it, not silently get the anonymous view.
        """
        if header is None:
            return None
        token = bearer_of(header)
        if token is None:
            raise _unauthorized("The Authorization header is not `Bearer <token>`.")
        if self._token is not None and hmac.compare_digest(token.encode(), self._token):
            return _TOKEN_ADMIN
        if self._authenticate is not None:
            who = self._authenticate(token)
            if who:
                return who if isinstance(who, Identity) else Identity(who)
        raise _unauthorized("The bearer token is not valid for this server.")

    def require(self, principal: str | None, action: Action) -> None:
        """401 unless ``principal`` may attempt ``action`` at all (before any thread is read);
        403 when none of its roles allows ``action``."""
        if principal is not None:
            roles = roles_of(principal)
            if roles is not None and not role_allows(roles, action, own=True):
                held = ", ".join(sorted(roles)) or "none"
                raise Problem(
                    403,
                    "forbidden",
                    f"Your roles ({held}) do not allow `{action}`; ask an admin for a role "
                    "that does.",
                )
            return
        if action == "read" and self.open_reads:
            return
        if action != "read" and not self.can_mutate:
            raise _unauthorized(
                "This server takes no changes: it was started without a token "
                "(set FLOWKIT_SERVER_TOKEN)."
            )
        raise _unauthorized(
            "Send `Authorization: Bearer <token>`"
            + (" to change threads." if action != "read" else " to read threads.")
        )

    def check(self, access: Access) -> None:
        """403 unless the ``authorize`` hook allows ``access``."""
        try:
            allowed = self.authorize(access)
        except Exception as exc:  # a broken hook denies; it never leaks a traceback
            from ..foundation._logging import get_logger

            get_logger().error(
                "server_authorize_failed",
                thread_id=access.thread_id,
                action=access.action,
                error_type=type(exc).__name__,
            )
            allowed = False
        if allowed is not True:
            raise Problem(
                403,
                "forbidden",
                f"You may not {access.action} thread `{access.thread_id}`.",
                extra={"thread_id": access.thread_id},
            )


def _unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
