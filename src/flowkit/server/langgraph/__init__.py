"""The LangGraph client API: what the official ``langgraph-sdk`` client speaks, served by
``flowkit serve`` under ``/langgraph``, and at the root beside flowkit's own API (``_root``
decides which of the two answers a path both serve).

Flows are assistants, flowkit threads are threads, a pause is an interrupt answered with
``Command(resume=...)``; runs start, resume and stream flows. ``assistants``, ``threads`` and
``runs`` hold the routes, ``_plan`` decides what a run does, ``_sse`` maps a stream to
LangGraph's events (``_joined`` keeps a background run's for ``join_stream``), ``_shapes``
draws every answer and ``_documents`` documents it, ``_registry`` keeps what the journal does
not (threads created empty, metadata, runs). What it does not serve answers 501
(``langgraph_unsupported``, ``_unsupported``); docs/server.md lists it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from ._assistants import router as assistants_router
from ._registry import Registry
from ._root import SdkAtRoot
from ._runs import router as runs_router
from ._threads import router as threads_router
from ._threads import shared_router
from ._unsupported import router as unsupported_router

__all__ = ["PREFIX", "mount"]

#: Where the API is served: a client's URL is the server's plus this.
PREFIX = "/langgraph"

#: What any LangGraph route may answer beside its own success (the app adds 400, 401, 413
#: and 422).
_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"description": "The authorisation hook denied it"},
    404: {"description": "No such assistant, thread, run or checkpoint"},
    409: {"description": "The thread or run is not where the request expects it"},
    501: {"description": "A LangGraph feature flowkit does not serve (`langgraph_unsupported`)"},
}


def mount(app: FastAPI) -> None:
    """Serve the LangGraph client API on ``app`` (built by ``create_app``, after flowkit's own
    routes) under ``PREFIX`` and at the root, where flowkit's routes come first.

    ``/openapi.json`` documents both, but for the root's shadowed ``shared_router`` and the
    routes that only ever answer 501."""
    app.state.flowkit_langgraph = Registry()
    served = (assistants_router, threads_router, shared_router, runs_router)
    for router in served:
        app.include_router(router, prefix=PREFIX, responses=_ERRORS)
    for router in served:
        app.include_router(router, responses=_ERRORS, include_in_schema=router is not shared_router)
    for prefix in (PREFIX, ""):
        app.include_router(unsupported_router, prefix=prefix)
    app.add_middleware(SdkAtRoot, prefix=PREFIX)
