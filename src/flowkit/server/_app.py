"""``create_app``: the FastAPI application serving flows over one store.

The routes live in ``_api`` (threads), ``_timer_api`` (due timers), ``_streams`` (SSE and
WebSocket) and ``_pages`` (the review page); this module, on top of them, wires them to one
:class:`Server` context (kept in ``_context``, which the routers read it through), the error
handlers that turn every failure into a problem, the limits and the security settings.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..definition._flow import Flow
from ..errors import FlowkitError, ServerConfigError
from ..foundation._logging import get_logger
from ._api import router as api_router
from ._context import Server
from ._docs import mount_docs
from ._hub import Hub
from ._listing_api import router as listing_router
from ._middleware import Guarded
from ._models import ProblemBody
from ._pages import router as page_router
from ._problems import PROBLEM_JSON, Problem, field_errors, problem_of
from ._redact import Redact, default_redact
from ._roles import PRIVATE_FLOWS
from ._security import Authenticate, Authorize, Guard
from ._served import RunnerFactory, Served
from ._streams import router as stream_router
from ._tap import Creations, Fanout
from ._timer_api import router as timer_router
from ._timers import TimerLoop
from .langgraph import mount as mount_langgraph

if TYPE_CHECKING:
    from ..stores._protocol import Store

__all__ = ["TOKEN_ENV", "Server", "create_app"]

#: The environment variable holding the bearer token mutations need.
TOKEN_ENV = "FLOWKIT_SERVER_TOKEN"

_UNSET: Any = object()


def create_app(
    flows: Iterable[Flow | str],
    *,
    store: Store,
    llm: Any = None,
    token: str | None = _UNSET,
    open_reads: bool = False,
    authenticate: Authenticate | None = None,
    authorize: Authorize | None = None,
    redact: Redact | None = None,
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = 1024 * 1024,
    max_depth: int = 64,
    runner_factory: RunnerFactory | None = None,
    max_background_runs: int = 8,
    title: str = "flowkit",
    hub_options: dict[str, Any] | None = None,
    timer_poll_s: float | None = 2.0,
    private_flows: Iterable[str] = PRIVATE_FLOWS,
) -> FastAPI:
    """An ASGI app serving ``flows`` (Flows or registered workflow names) over ``store``.

    ``token``: the bearer token every change needs (default: ``$FLOWKIT_SERVER_TOKEN``; none
    means nothing can be changed). ``open_reads`` lets requests without a token read.
    ``authenticate`` maps other bearer tokens to principals; ``authorize(access)`` may deny
    any thread operation (403). ``llm`` is every runner's LLM, or a mapping flow name -> LLM;
    ``runner_factory(flow, store)`` builds runners another way (keep the ``store`` it gets:
    the server hears of writes through it). ``cors_origins`` lists the web origins allowed to
    call the API from a browser (none by default). ``timer_poll_s``: how often the served
    flows' due timers (deadlines, wake-ups) are fired while the app runs (``None``: never,
    for a deployment where workers do it); a server that cannot change threads (no token)
    fires none. ``private_flows``: flows whose threads only their starter and admins may
    read or change, also with open reads (default: the quality workflow's sessions).
    """
    for name, value in (
        ("max_body_bytes", max_body_bytes),
        ("max_depth", max_depth),
        ("max_background_runs", max_background_runs),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ServerConfigError(
                f"`{name}` must be a whole number of at least 1, not {value!r}."
            )
    if timer_poll_s is not None and (
        isinstance(timer_poll_s, bool)
        or not isinstance(timer_poll_s, int | float)
        or not 0 < timer_poll_s < float("inf")
    ):
        raise ServerConfigError(
            f"`timer_poll_s` must be a positive number of seconds, or None, not "
            f"{timer_poll_s!r:.40}."
        )
    if token is _UNSET:
        token = os.environ.get(TOKEN_ENV) or None
    guard = Guard(
        token=token,
        open_reads=open_reads,
        authenticate=authenticate,
        authorize=authorize,
        private_flows=private_flows,
    )
    hub = Hub(store, **(hub_options or {}))
    creations = Creations()
    served = Served(flows, store, Fanout(hub, creations), llm=llm, runner_factory=runner_factory)
    guard.serving(served.flows)
    for runner in served.runners.values():
        runner.subscribe(hub.on_event)
    executor = ThreadPoolExecutor(max_background_runs, thread_name_prefix="flowkit-run")
    server = Server(served, hub, guard, redact or default_redact, executor, creations, title)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub.start()
        if not guard.can_mutate:
            get_logger().warning("server_read_only", reason=f"no token ({TOKEN_ENV})")
        timers = None
        if timer_poll_s is not None and guard.can_mutate:
            timers = TimerLoop(served.runners.values(), timer_poll_s)
            timers.start()
        try:
            yield
        finally:
            if timers is not None:
                await timers.stop()
            await hub.stop()
            executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title=title,
        version=__version__,
        description="Threads of flowkit flows: start, inspect, answer gates, follow events.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's pages load their scripts from a CDN; ours are local
        redoc_url=None,
        responses={
            400: {"model": ProblemBody, "description": "The body cannot be read"},
            401: {"model": ProblemBody, "description": "No or a wrong bearer token"},
            413: {"model": ProblemBody, "description": "The body is too large"},
            422: {"model": ProblemBody, "description": "The request is not valid"},
        },
    )
    app.state.flowkit = server
    _install_handlers(app)
    _problem_documents(app)

    app.include_router(listing_router)
    app.include_router(api_router)
    app.include_router(timer_router)
    app.include_router(stream_router)
    app.include_router(page_router)
    mount_docs(app)  # /docs and /redoc, with their assets served from here
    mount_langgraph(app)  # the LangGraph client API, under /langgraph

    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["Authorization", "X-Api-Key", "Content-Type", "Last-Event-ID"],
        )
    app.add_middleware(Guarded, max_body_bytes=max_body_bytes, max_depth=max_depth)
    return app


def _problem_documents(app: FastAPI) -> None:
    """Error responses are documented as ``application/problem+json``, as they are sent."""
    from fastapi.openapi.utils import get_openapi

    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        problem = {"schema": {"$ref": "#/components/schemas/ProblemBody"}}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                if "requestBody" in operation:
                    operation["responses"]["415"] = {
                        "description": "The body is not sent as JSON (Content-Type)"
                    }
                for code, response in operation.get("responses", {}).items():
                    if code[:1] in ("4", "5"):
                        response["content"] = {PROBLEM_JSON: problem}
        components = schema.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        app.openapi_schema = schema
        return schema

    app.openapi = build  # type: ignore[method-assign]


def problem_response(problem: Problem) -> JSONResponse:
    return JSONResponse(
        problem.body(),
        status_code=problem.status,
        headers=problem.headers,
        media_type=PROBLEM_JSON,
    )


_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    415: "unsupported_media_type",
}


def _not_json(content_type: str | None) -> Problem:
    sent = "had no Content-Type" if not content_type else "had another Content-Type"
    return Problem(
        415,
        "unsupported_media_type",
        f"The body must be JSON sent with `Content-Type: application/json`; this request {sent}.",
    )


def _install_handlers(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Problem)
        return problem_response(exc)

    async def on_flowkit_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, FlowkitError)
        problem = problem_of(exc)
        if problem.status >= 500:
            get_logger().error(
                "server_request_failed",
                path=getattr(request.scope.get("route"), "path", "(unrouted)"),
                error_type=type(exc).__name__,
            )
        return problem_response(problem)

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        if isinstance(exc.body, bytes) and exc.body:  # bytes: FastAPI did not read it as JSON
            return problem_response(_not_json(request.headers.get("content-type")))
        errors = field_errors(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid"}
        where = ".".join(str(p) for p in first["loc"]) or "(request)"
        return problem_response(
            Problem(
                422,
                "invalid_request",
                f"The request is not valid: {where}: {first['msg']} "
                f"({len(errors)} error(s) in `errors`).",
                extra={"errors": errors},
            )
        )

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        detail = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404:
            detail = "No such resource on this server; GET /docs lists the API."
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names the methods of the first route on the path; the path has more.
            headers["Allow"] = ", ".join(_methods_of(request))
        return problem_response(Problem(exc.status_code, code, detail, headers=headers))

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(FlowkitError, on_flowkit_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(StarletteHTTPException, on_http)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _methods_of(request: Request) -> list[str]:
    """The methods the request's path takes.

    As the API document lists them where it has the path: where templates overlap
    (``/threads/search`` also fits ``/threads/{thread_id}``), the template with the fewest
    parameters is the path's. A path the document leaves out (the pages) is asked of every
    route through its public ``matches``: FastAPI keeps included routers as routes of their
    own (their routes are not on the app's list), so only asking every route finds them all."""
    from starlette.routing import Match

    documented = _documented_methods(request.app, request.url.path)
    if documented:
        return documented
    scope = request.scope
    return [
        method
        for method in _METHODS
        if any(route.matches({**scope, "method": method})[0] is Match.FULL
               for route in request.app.router.routes)
    ]  # fmt: skip


def _documented_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the API document gives the most specific template ``path`` fits."""
    templates = getattr(app.state, "flowkit_templates", None)
    if templates is None:
        templates = []
        for template, operations in app.openapi().get("paths", {}).items():
            names = re.findall(r"\{[^}/]+\}", template)
            parts = re.split(r"\{[^}/]+\}", template)
            pattern = re.compile("[^/]+".join(map(re.escape, parts)) + "$")
            methods = [m.upper() for m in operations if m.upper() in _METHODS]
            templates.append((pattern, len(names), methods))
        app.state.flowkit_templates = templates
    fitting = [(params, methods) for pattern, params, methods in templates if pattern.match(path)]
    if not fitting:
        return []
    least = min(params for params, _ in fitting)
    return [m for m in _METHODS if any(m in ms for params, ms in fitting if params == least)]
