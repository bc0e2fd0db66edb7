"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc``, served with their
scripts and styles from this server, so that they work without the internet.

The assets come from the ``fastapi-offline`` package (part of the ``server`` extra), which
bundles them; it is imported when an app is built, never by ``import flowkit.server``. Each
page is sent with a Content-Security-Policy that lets it load from this server only, its one
inline script or style allowed by hash. ReDoc also writes styles of its own at run time
(styled-components), so its page allows inline styles; scripts stay this server's only.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from ..foundation._distribution import install_hint
from ._problems import Problem

__all__ = ["ASSETS", "mount_docs"]

#: Where the pages' assets are served.
ASSETS = "/docs/assets"

_MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)

router = APIRouter(include_in_schema=False)


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs``, ``/redoc`` and their assets on ``app`` (built with ``docs_url=None``
    and ``redoc_url=None``, so that FastAPI's own pages, which load from a CDN, are not)."""
    _assets()  # a missing package fails when the app is built, not on the first visit
    app.include_router(router)


@functools.cache
def _assets() -> Path:
    try:
        import fastapi_offline
    except ImportError as exc:
        raise ImportError(
            f"flowkit's /docs page needs the server extra (fastapi-offline is missing): "
            f"{install_hint('server')}"
        ) from exc
    return Path(fastapi_offline.__file__).parent / "static"


@router.get("/docs")
def swagger_page(request: Request) -> HTMLResponse:
    base = request.scope.get("root_path", "")
    page = get_swagger_ui_html(
        openapi_url=f"{base}{request.app.openapi_url}",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{base}{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{base}{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{base}{ASSETS}/favicon.png",
        oauth2_redirect_url=None,
        swagger_ui_parameters=request.app.swagger_ui_parameters,
    )
    return _strict(page)


@router.get("/redoc")
def redoc_page(request: Request) -> HTMLResponse:
    base = request.scope.get("root_path", "")
    page = get_redoc_html(
        openapi_url=f"{base}{request.app.openapi_url}",
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{base}{ASSETS}/redoc.standalone.js",
        redoc_favicon_url=f"{base}{ASSETS}/favicon.png",
        with_google_fonts=False,
    )
    return _strict(page, inline_styles=True, blob_workers=True)


@router.get(ASSETS + "/{name}")
def docs_asset(name: str) -> FileResponse:
    media_type = _MEDIA_TYPES.get(name)
    if media_type is None:
        raise Problem(404, "not_found", f"No documentation asset is called {name!r:.60}.")
    return FileResponse(
        _assets() / name, media_type=media_type, headers={"Cache-Control": "no-cache"}
    )


def _strict(
    page: HTMLResponse, *, inline_styles: bool = False, blob_workers: bool = False
) -> HTMLResponse:
    """``page`` with a policy letting it load from this server only: the inline script and
    style the page generator writes are allowed by their hashes, nothing else inline (but
    any style, with ``inline_styles``; a hash would turn that off, so none is sent then).
    ``blob_workers``: the page may start workers from scripts it made (ReDoc's search)."""
    html = bytes(page.body).decode()
    allowed: dict[str, list[str]] = {"script": [], "style": []}
    for kind, text in _INLINE.findall(html):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        allowed[kind].append(f"'sha256-{digest}'")
    if inline_styles:
        allowed["style"] = ["'unsafe-inline'"]
    policy = "; ".join(
        (
            "default-src 'none'",
            " ".join(["script-src 'self'", *allowed["script"]]),
            " ".join(["style-src 'self'", *allowed["style"]]),
            "img-src 'self' data:",
            "connect-src 'self'",
            "worker-src blob:" if blob_workers else "worker-src 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )
    return HTMLResponse(
        html, headers={"Content-Security-Policy": policy, "Cache-Control": "no-cache"}
    )
