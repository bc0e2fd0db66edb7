"""The LangGraph client API at the server's root, beside flowkit's own API.

LangGraph clients take the server's URL with no prefix, so its routes are served at the root
too, after flowkit's: where both serve a method and path (``GET`` and ``DELETE
/threads/{id}``, answered in different shapes) flowkit's comes first, and this middleware
sends a request from LangGraph's SDK (its User-Agent starts with ``langgraph-sdk``) to the
route under the prefix instead.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["SdkAtRoot"]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

#: How LangGraph's SDK names itself (``langgraph-sdk-py/<version>``).
_SDK_AGENT = b"langgraph-sdk"
#: The routes both APIs serve.
_SHARED = re.compile(r"/threads/[^/]+")
_SHARED_METHODS = ("GET", "DELETE")


class SdkAtRoot:
    """ASGI middleware: a LangGraph SDK's request to a route both APIs serve at the root
    goes to the route under ``prefix``."""

    def __init__(self, app: ASGIApp, *, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in _SHARED_METHODS
            and _SHARED.fullmatch(scope["path"])
            and _from_sdk(scope)
        ):
            path = self.prefix + scope["path"]
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


def _from_sdk(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"user-agent":
            return bool(value.lower().startswith(_SDK_AGENT))
    return False
