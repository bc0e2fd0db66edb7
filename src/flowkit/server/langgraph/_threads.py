"""Threads: create (empty), get, search, patch metadata, delete, copy; their state, history
and state updates. A thread a flow ran on is flowkit's thread; one created empty waits in
the registry for its first run."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request, Response

from ...errors import ThreadNotFoundError
from .._audit import answered
from .._context import Principal, Server, ThreadId, open_thread, server_of, thread_runner
from .._listing_api import listed
from .._problems import Problem
from ._context import (
    Opened,
    asked_checkpoint,
    checkpoint_version,
    find_thread,
    own_checkpoint,
    registry_of,
    times_of,
)
from ._documents import StateUpdatedDoc, ThreadDoc, ThreadStateDoc, answer
from ._models import (
    HistoryRequest,
    StateCheckpointRequest,
    ThreadCopy,
    ThreadCreate,
    ThreadPatch,
    ThreadSearch,
    UpdateStateBody,
    unsupported,
)
from ._registry import Registry
from ._shapes import checkpoint_ref, history_state_json, state_json, thread_json
from ._thread_order import by_default, newest_first, ordered

__all__ = ["router", "shared_router"]

router = APIRouter(tags=["langgraph"])
#: The routes flowkit's own API serves too (``GET`` and ``DELETE /threads/{id}``): at the root,
#: flowkit's come first (``_root``).
shared_router = APIRouter(tags=["langgraph"])

_STATE = answer(ThreadStateDoc, "The checkpoint")


def _thread(
    server: Server,
    registry: Registry,
    principal: str | None,
    thread_id: str,
    found: tuple[Any, Opened | None],
) -> dict[str, Any]:
    info, opened = found
    times = times_of(server, thread_id) if opened is not None else None
    return thread_json(server, registry, thread_id, info, opened, principal, times)


@router.post("/threads", response_model=None, responses=answer(ThreadDoc, "The thread"))
def create_thread(request: Request, body: ThreadCreate, principal: Principal) -> dict[str, Any]:
    """An empty thread (a run on it starts its flow), with metadata; ``if_exists``
    ``do_nothing`` answers an existing one as it is, else an existing id is a 409."""
    server, registry = server_of(request), registry_of(request)
    server.guard.require(principal, "start")
    if body.supersteps:
        raise unsupported("creating a thread from supersteps", "Start a run on it instead.")
    if body.graph_id is not None:
        server.served.runner(body.graph_id)  # 404 for a flow the server does not run
    thread_id = body.thread_id or str(uuid.uuid4())
    try:
        found = find_thread(server, registry, principal, "read", thread_id)
    except ThreadNotFoundError:
        info = registry.add_thread(thread_id, body.metadata or {}, body.graph_id)
        return thread_json(server, registry, thread_id, info, None, principal)
    if body.if_exists == "do_nothing":
        return _thread(server, registry, principal, thread_id, found)
    raise Problem(
        409,
        "thread_exists",
        f"Thread `{thread_id}` exists; pass if_exists='do_nothing' to get it as it is.",
        extra={"thread_id": thread_id},
    )


@shared_router.get(
    "/threads/{thread_id}", response_model=None, responses=answer(ThreadDoc, "The thread")
)
def get_thread(request: Request, thread_id: ThreadId, principal: Principal) -> dict[str, Any]:
    server, registry = server_of(request), registry_of(request)
    found = find_thread(server, registry, principal, "read", thread_id)
    return _thread(server, registry, principal, thread_id, found)


@router.patch(
    "/threads/{thread_id}", response_model=None, responses=answer(ThreadDoc, "The thread")
)
def patch_thread(
    request: Request, thread_id: ThreadId, body: ThreadPatch, principal: Principal
) -> dict[str, Any]:
    """Merge ``metadata`` into the thread's (kept by the server, beside the journal)."""
    server, registry = server_of(request), registry_of(request)
    info, opened = find_thread(server, registry, principal, "update", thread_id)
    if info is None:
        flow = opened[0].flow.name if opened is not None else None
        info = registry.add_thread(thread_id, {}, flow)
    registry.merge_metadata(info, body.metadata or {})
    return _thread(server, registry, principal, thread_id, (info, opened))


@shared_router.delete("/threads/{thread_id}", status_code=204, response_class=Response)
def delete_thread(request: Request, thread_id: ThreadId, principal: Principal) -> Response:
    server, registry = server_of(request), registry_of(request)
    _, opened = find_thread(server, registry, principal, "delete", thread_id)
    if opened is not None:
        opened[0].delete(thread_id)  # ConflictError (409) while a run of it goes on
        server.served.forget(thread_id)
        answered(principal, "delete", thread_id, flow=opened[0].flow.name)
    registry.drop_thread(thread_id)
    return Response(status_code=204)


@router.post(
    "/threads/search",
    response_model=None,
    responses=answer(list[ThreadDoc], "The threads that match"),
)
def search_threads(
    request: Request, body: ThreadSearch, principal: Principal
) -> list[dict[str, Any]]:
    """Threads most recently updated first (those created empty among the store's, read from
    its thread index a page at a time), or in the order ``sort_by`` and ``sort_order`` ask
    (every match sorted); ``metadata`` matches what was set through this API."""
    server_of(request).guard.require(principal, "read")
    found: Iterable[dict[str, Any]] = _found(request, body, principal)
    if body.ids is not None or not by_default(body.sort_by, body.sort_order):
        found = ordered(found, body.sort_by, body.sort_order)
    return list(islice(found, body.offset, body.offset + body.limit))


def _found(request: Request, body: ThreadSearch, principal: str | None) -> Iterator[dict[str, Any]]:
    """The threads that match ``body``'s filters, in search order, among the first ``_SCAN``
    the caller may look at."""
    server, registry = server_of(request), registry_of(request)
    for thread_id in islice(_candidates(server, registry, principal, body), _SCAN):
        try:
            found = find_thread(server, registry, principal, "read", thread_id)
        except (ThreadNotFoundError, Problem):
            continue
        thread = _thread(server, registry, principal, thread_id, found)
        if _matches(thread, body):
            yield thread


#: How many threads a search looks at, at most (filters on metadata and values read each).
_SCAN = 10_000
#: The store's statuses a LangGraph status can be (``busy`` and ``idle``: any).
_STORED = {"interrupted": "waiting", "error": "failed"}


def _candidates(
    server: Server, registry: Registry, principal: str | None, body: ThreadSearch
) -> Iterator[str]:
    """The threads a search may answer: the ids asked for; else those created empty and the
    store's (a page at a time from its thread index), most recently updated first."""
    if body.ids is not None:
        yield from dict.fromkeys(body.ids)
        return
    empty: list[tuple[float, str]] = []
    if body.status in (None, "idle", "busy"):
        empty = sorted(
            ((info.updated_at, info.thread_id) for info in registry.threads()
             if not _in_store(server, info.thread_id)),
            reverse=True,
        )  # fmt: skip
    yield from newest_first(empty, _stored(server, principal, body))


def _stored(
    server: Server, principal: str | None, body: ThreadSearch
) -> Iterator[tuple[float, str]]:
    """The store's threads the caller may list, most recently updated first, as ``(updated,
    thread_id)``: a page at a time from its thread index."""
    filters = {"status": _STORED.get(body.status or "")}
    cursor = None
    while True:
        page, cursor = listed(server, principal, filters, 200, 0, cursor)
        yield from ((row["updated"], row["thread_id"]) for row in page)
        if cursor is None:
            return


@router.post("/threads/count")
def count_threads(request: Request, body: ThreadSearch, principal: Principal) -> int:
    """How many threads match: every page of ``threads/search``, not one."""
    server_of(request).guard.require(principal, "read")
    return sum(1 for _ in _found(request, body, principal))


@router.post(
    "/threads/{thread_id}/copy",
    response_model=None,
    responses=answer(ThreadDoc, "The new thread"),
)
def copy_thread(
    request: Request,
    thread_id: ThreadId,
    principal: Principal,
    body: Annotated[ThreadCopy | None, Body()] = None,
) -> dict[str, Any]:
    """A new thread standing where this one stands (flowkit's fork at the latest checkpoint).
    ``body``: none, or a JSON object (checked like every body; its fields are not used)."""
    server, registry = server_of(request), registry_of(request)
    try:
        runner = thread_runner(server, principal, "fork", thread_id)
    except ThreadNotFoundError as exc:
        raise _not_started(registry, thread_id, exc, "copy") from None
    new = str(uuid.uuid4())
    runner.fork(thread_id, new)
    server.served.remember(new, runner.flow.name)
    answered(principal, "fork", thread_id, flow=runner.flow.name)
    source = registry.thread(thread_id)
    registry.add_thread(new, dict(source.metadata) if source else {}, runner.flow.name)
    return _thread(server, registry, principal, new, find_thread(
        server, registry, principal, "read", new
    ))  # fmt: skip


# -- state ------------------------------------------------------------------------------------


def _empty_state(thread_id: str) -> dict[str, Any]:
    return {
        "values": {},
        "next": [],
        "checkpoint": checkpoint_ref(thread_id, -1) | {"checkpoint_id": None},
        "metadata": {},
        "created_at": None,
        "parent_checkpoint": None,
        "tasks": [],
        "interrupts": [],
    }


def _state_at(
    request: Request, thread_id: str, principal: str | None, checkpoint_id: str | None
) -> dict[str, Any]:
    server, registry = server_of(request), registry_of(request)
    _, opened = find_thread(server, registry, principal, "read", thread_id)
    if opened is None:
        if checkpoint_id is not None:
            raise Problem(404, "checkpoint_not_found", f"Thread `{thread_id}` has no checkpoints.")
        return _empty_state(thread_id)
    runner, result = opened
    version = checkpoint_version(checkpoint_id)
    if version is None or version == result.version:
        return state_json(server, runner, result, principal)
    if version > result.version:
        raise Problem(
            404,
            "checkpoint_not_found",
            f"Thread `{thread_id}` has no checkpoint {version}; its latest is {result.version}.",
        )
    page = runner.history(thread_id, limit=1, before=version + 1)
    if not page or page[-1].version != version:
        raise Problem(404, "checkpoint_not_found", f"Thread `{thread_id}` has no checkpoint "
                      f"{version} (compacted away, or never there).")  # fmt: skip
    return history_state_json(server, runner, page[-1], principal)


def _checkpoint_id(thread_id: str, before: str | dict[str, Any] | None) -> str | None:
    """The checkpoint id a ``before`` names: the id itself, a checkpoint (``checkpoint_id``)
    or a config (``configurable.checkpoint_id``); a mapping naming none is a 422, one of
    another thread a 404."""
    if before is None or isinstance(before, str):
        return before
    configurable = before.get("configurable")
    own_checkpoint(thread_id, before)
    found = before.get("checkpoint_id")
    if found is None and isinstance(configurable, dict):
        own_checkpoint(thread_id, configurable)
        found = configurable.get("checkpoint_id")
    if not isinstance(found, str):
        raise Problem(
            422,
            "invalid_request",
            "`before` names no checkpoint: send a checkpoint id, or a checkpoint or config "
            "with `checkpoint_id`.",
        )
    return found


@router.get("/threads/{thread_id}/state", response_model=None, responses=_STATE)
def get_state(request: Request, thread_id: ThreadId, principal: Principal) -> dict[str, Any]:
    return _state_at(request, thread_id, principal, None)


@router.get("/threads/{thread_id}/state/{checkpoint_id}", response_model=None, responses=_STATE)
def get_state_at(
    request: Request,
    thread_id: ThreadId,
    checkpoint_id: Annotated[str, Path(max_length=40)],
    principal: Principal,
) -> dict[str, Any]:
    return _state_at(request, thread_id, principal, checkpoint_id)


@router.post("/threads/{thread_id}/state/checkpoint", response_model=None, responses=_STATE)
def get_state_of_checkpoint(
    request: Request, thread_id: ThreadId, body: StateCheckpointRequest, principal: Principal
) -> dict[str, Any]:
    own_checkpoint(thread_id, body.checkpoint)
    wanted = body.checkpoint.get("checkpoint_id")
    return _state_at(request, thread_id, principal, str(wanted) if wanted is not None else None)


@router.post(
    "/threads/{thread_id}/state",
    response_model=None,
    responses=answer(StateUpdatedDoc, "The new checkpoint"),
)
def update_state(
    request: Request, thread_id: ThreadId, body: UpdateStateBody, principal: Principal
) -> dict[str, Any]:
    """Patch the state through the flow's reducers: an audited checkpoint of its own (kind
    ``patch``), naming the principal. At an earlier checkpoint (``checkpoint_id``) the thread
    is first put back where it stood then (a checkpoint too; history keeps the old branch):
    a run with no input goes on from there. ``as_node``: the values go in as that node's
    update and the thread moves where its route sends the new state (a run with no input
    goes on from there). No values, no ``as_node`` and no earlier checkpoint: nothing changes,
    nothing is written, and the answer is the latest checkpoint."""
    server = server_of(request)
    if not isinstance(body.values, dict | None):
        raise unsupported("a list of updates in update_state", "Send one mapping of values.")
    try:
        runner, current = open_thread(server, principal, "update", thread_id)
    except ThreadNotFoundError as exc:
        raise _not_started(registry_of(request), thread_id, exc, "update") from None
    version = asked_checkpoint(thread_id, body.checkpoint_id, body.checkpoint)
    actor = principal or "anonymous"
    result = current
    if version is not None and version != current.version:
        result = runner.rewind(
            thread_id,
            version,
            reason=f"update_state at checkpoint {version} (LangGraph API)",
            actor=actor,
            expected_version=current.version,
        )
    if body.values or body.as_node is not None:
        result = runner.update_state(
            thread_id,
            body.values,
            reason="update_state (LangGraph API)"
            + ("" if body.as_node is None else f" as {body.as_node}"),
            actor=actor,
            expected_version=None if version is None else result.version,
            as_node=body.as_node,
        )
    if result is not current:
        registry_of(request).touch(thread_id)
        answered(principal, "update", thread_id, flow=runner.flow.name, version=result.version)
    return {"checkpoint": checkpoint_ref(thread_id, result.version)}


@router.post(
    "/threads/{thread_id}/history",
    response_model=None,
    responses=answer(list[ThreadStateDoc], "Checkpoints, newest first"),
)
def get_history(
    request: Request, thread_id: ThreadId, body: HistoryRequest, principal: Principal
) -> list[dict[str, Any]]:
    """Checkpoints newest first, ``limit`` of them, before the ``before`` checkpoint."""
    server, registry = server_of(request), registry_of(request)
    if body.metadata:
        raise unsupported("filtering history by metadata")
    _, opened = find_thread(server, registry, principal, "read", thread_id)
    if opened is None:
        return []
    runner, _ = opened
    version = checkpoint_version(_checkpoint_id(thread_id, body.before))
    if version is not None and version <= 0:
        return []
    page = runner.history(thread_id, limit=body.limit, before=version)
    return [history_state_json(server, runner, point, principal) for point in reversed(page)]


def _not_started(
    registry: Registry, thread_id: str, exc: ThreadNotFoundError, doing: str
) -> Exception:
    """What to answer for a thread the store lacks: created empty (no flow has run on it),
    a 409 saying to start it first; else ``exc`` (404)."""
    if registry.thread(thread_id) is None:
        return exc
    return Problem(
        409,
        "thread_not_started",
        f"Thread `{thread_id}` was created, but no flow has run on it yet: it has no state "
        f"to {doing}. Start a run on it first (runs.wait or runs.create with `input`, the "
        "values to begin with).",
        extra={"thread_id": thread_id},
    )


def _in_store(server: Server, thread_id: str) -> bool:
    try:
        server.served.flow_name(thread_id)
    except ThreadNotFoundError:
        return False
    return True


def _matches(thread: dict[str, Any], body: ThreadSearch) -> bool:
    if body.status is not None and thread["status"] != body.status:
        return False
    for key, value in (body.metadata or {}).items():
        if thread["metadata"].get(key) != value:
            return False
    values = thread["values"] or {}
    return all(values.get(key) == value for key, value in (body.values or {}).items())
