"""The LangGraph client API's routes flowkit does not serve: each answers 501
(``langgraph_unsupported``) naming what to do instead, so a client learns why rather than
getting a bare 404. They stay out of ``/openapi.json``; any other path is a 404 as everywhere.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ._models import unsupported

__all__ = ["router"]

router = APIRouter(tags=["langgraph"], include_in_schema=False)

#: (methods, path, what is not served, what to do instead), as ``langgraph-sdk`` calls them.
_ROUTES: tuple[tuple[list[str], str, str, str], ...] = (
    (["POST"], "/assistants", "creating assistants",
     "Every flow the server runs is an assistant, named after it."),
    (["POST"], "/assistants/{assistant_id}/latest", "assistant versions", ""),
    (["POST"], "/assistants/{assistant_id}/versions", "assistant versions", ""),
    (["GET"], "/assistants/{assistant_id}/subgraphs", "subgraph schemas",
     "Subflows show as nodes of the flow's graph."),
    (["GET"], "/assistants/{assistant_id}/subgraphs/{namespace}", "subgraph schemas",
     "Subflows show as nodes of the flow's graph."),
    (["POST"], "/runs/crons", "crons",
     "flowkit fires timers: a gate's deadline, a node's wake-up."),
    (["POST"], "/runs/crons/count", "crons", ""),
    (["POST"], "/runs/crons/search", "crons", ""),
    (["PATCH", "DELETE"], "/runs/crons/{cron_id}", "crons", ""),
    (["POST"], "/threads/{thread_id}/runs/crons", "crons", ""),
    (["POST"], "/runs/batch", "batches of runs", "Create each run."),
    (["POST"], "/runs/cancel", "cancelling runs in bulk", "Cancel each run."),
    (["GET", "PUT", "DELETE"], "/store/items", "the store API", ""),
    (["POST"], "/store/items/search", "the store API", ""),
    (["POST"], "/store/namespaces", "the store API", ""),
    (["POST"], "/threads/prune", "threads.prune",
     "flowkit's `Runner.prune` (or `flowkit prune`) deletes old threads."),
    (["GET"], "/threads/{thread_id}/stream", "joining a thread's stream",
     "flowkit's GET /threads/{id}/events follows a thread."),
)  # fmt: skip


def _refuse(feature: str, hint: str) -> Any:
    def endpoint() -> Any:
        raise unsupported(feature, hint)

    return endpoint


for _methods, _path, _feature, _hint in _ROUTES:
    router.add_api_route(_path, _refuse(_feature, _hint), methods=_methods)
