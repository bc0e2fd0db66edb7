"""The review page and what it reads: the page itself (static files shipped with flowkit, no
build step), a thread's view, its diagram as SVG, and the files it offers for download.

The page is one HTML file, one script and one style sheet, served with a strict Content
Security Policy (nothing inline, nothing from elsewhere); its script renders every value as
text, never as markup. The chat page (``/chat/{id}``, ``/chat?flow=NAME`` to start a new
conversation) is built the same way from its own three files.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from ._context import Principal, ThreadId, open_thread, server_of
from ._problems import Problem
from ._svg import flow_svg
from ._views import download, view_of

__all__ = ["router"]

router = APIRouter()

_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "common.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
    "chat.css": "text/css; charset=utf-8",
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"description": "The authorisation hook denied it"},
    404: {"description": "No such thread or file"},
}


def _asset(name: str) -> bytes:
    return resources.files("flowkit.server").joinpath("static", name).read_bytes()


def _page(name: str) -> Response:
    return Response(
        _asset(name),
        media_type="text/html; charset=utf-8",
        headers={"Content-Security-Policy": _CSP, "Cache-Control": "no-cache"},
    )


@router.get("/", include_in_schema=False)
def review_page() -> Response:
    """The review page: threads waiting for a person, and each thread's page."""
    return _page("index.html")


@router.get("/chat", include_in_schema=False)
def new_chat_page(request: Request, flow: str | None = None) -> Response:
    """The chat page starting a conversation of the flow its ``?flow=`` names (a 404 for a
    flow this server does not run)."""
    if flow is not None:
        server_of(request).served.runner(flow[:200])
    return _page("chat.html")


@router.get("/chat/{thread_id}", include_in_schema=False)
def chat_page(thread_id: ThreadId) -> Response:
    """The chat page of one conversation (its script reads the thread with the token)."""
    return _page("chat.html")


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return Response(status_code=204)


@router.get("/static/{name}", include_in_schema=False)
def static_file(name: str) -> Response:
    media = _STATIC.get(name)
    if media is None:
        raise Problem(404, "not_found", f"No static file `{name[:60]}`.")
    return Response(_asset(name), media_type=media, headers={"Cache-Control": "no-cache"})


@router.get("/threads/{thread_id}/view", responses=_ERRORS, tags=["page"])
def thread_view(request: Request, thread_id: ThreadId, principal: Principal) -> dict[str, Any]:
    """What the review page shows of the thread: ``sas`` (task list, module steps, files),
    ``chat`` (the conversation), or ``generic``."""
    server = server_of(request)
    runner, result = open_thread(server, principal, "read", thread_id)
    view = view_of(runner, result, server.served.store)
    return dict(server.redact(runner.flow.name, view, principal))


@router.get(
    "/threads/{thread_id}/diagram.svg",
    responses={**_ERRORS, 200: {"content": {"image/svg+xml": {"schema": {"type": "string"}}}}},
    response_class=Response,
    tags=["page"],
)
def thread_diagram(request: Request, thread_id: ThreadId, principal: Principal) -> Response:
    """The flow as SVG, the thread's current state marked."""
    server = server_of(request)
    runner, result = open_thread(server, principal, "read", thread_id)
    svg = flow_svg(runner.flow, result.node, result.status)
    return Response(
        svg,
        media_type="image/svg+xml",
        headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"},
    )


@router.get(
    "/threads/{thread_id}/files/{name}",
    responses={
        **_ERRORS,
        200: {"content": {"application/octet-stream": {"schema": {"type": "string"}}}},
    },
    response_class=Response,
    tags=["page"],
)
def thread_file(
    request: Request,
    thread_id: ThreadId,
    name: Annotated[str, Path(max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")],
    principal: Principal,
) -> Response:
    """A file a finished thread produced (a sas thread's ``flow.xml``), as an attachment."""
    server = server_of(request)
    runner, result = open_thread(server, principal, "read", thread_id)
    data = download(runner, result, server.served.store, name)
    media = "application/xml" if name.endswith(".xml") else "application/octet-stream"
    return Response(
        data,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{thread_id}-{name}"'},
    )
