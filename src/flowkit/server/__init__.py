"""flowkit's HTTP server: an API for the threads of any flow, their events over SSE and
WebSocket, and a review page for people. Needs the ``server`` extra::

    pip install 'flowkit-workflows[server]'

``create_app(flows, store=...)`` builds the ASGI app; ``flowkit serve TARGET... --store DIR``
runs it with uvicorn. Nothing here is imported by ``import flowkit``. See docs/server.md.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on what is installed
    from ..foundation._distribution import install_hint

    raise ImportError(
        f"flowkit.server needs the server extra ({exc.name} is missing): {install_hint('server')}"
    ) from exc

from ..foundation._token_hash import hash_token
from ._app import TOKEN_ENV, Server, create_app
from ._jwt import JwtVerifier
from ._redact import Redact, default_redact
from ._roles import ROLES, Identity
from ._security import ADMIN, Access, Action, Authenticate, Authorize
from ._users import Users, load_users

__all__ = [
    "ADMIN",
    "ROLES",
    "TOKEN_ENV",
    "Access",
    "Action",
    "Authenticate",
    "Authorize",
    "Identity",
    "JwtVerifier",
    "Redact",
    "Server",
    "Users",
    "create_app",
    "default_redact",
    "hash_token",
    "load_users",
]
