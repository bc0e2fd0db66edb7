"""The listing API: the flows this server runs (``GET /flows``), who is asking (``GET /me``)
and the threads they may read, a page at a time from the store's thread index
(``GET /threads``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ..errors import FlowkitError, InvalidListingError
from ..foundation._logging import get_logger
from ..stores import _list_threads as stored
from ..stores._listing import ThreadSummary
from ._context import Principal, Server, server_of
from ._models import FlowInfo, Me, ThreadList
from ._problems import Problem
from ._roles import ROLES, is_admin, roles_of
from ._security import Access, _allow_all, read_budget

__all__ = ["listed", "router", "state_schema"]

router = APIRouter()

# -- flows and listing -----------------------------------------------------------------------


@router.get("/flows", response_model=list[FlowInfo], tags=["flows"])
def list_flows(request: Request, principal: Principal) -> list[dict[str, Any]]:
    """The flows this server runs, with their gates and state schema."""
    server = server_of(request)
    server.guard.require(principal, "read")
    return [
        {
            "name": flow.name,
            "description": flow.description or "",
            "start": flow.start,
            "gates": sorted(flow.gates),
            "states": list(flow.states),
            "state_schema": state_schema(flow.state),
        }
        for flow in server.served.flows.values()
    ]


@router.get("/me", response_model=Me, tags=["flows"])
def who_am_i(request: Request, principal: Principal) -> dict[str, Any]:
    """The principal the request's token proves (``null``: anonymous), its roles and the
    actions they allow, so a page can offer only what its user may do."""
    server = server_of(request)
    if principal is None:
        reads = ["read"] if server.guard.open_reads else []
        return {"principal": None, "roles": [], "admin": False, "actions": reads}
    roles = roles_of(principal)
    allowed = (
        set(ROLES["admin"]) if roles is None else set().union(*(ROLES.get(r, ()) for r in roles))
    )
    return {
        "principal": str(principal),
        "roles": None if roles is None else sorted(roles),
        "admin": is_admin(principal),
        "actions": sorted(allowed),
    }


@router.get("/threads", response_model=ThreadList, tags=["threads"])
def list_threads(
    request: Request,
    principal: Principal,
    status: Annotated[
        str | None, Query(pattern="^(pending|waiting|done|failed)$", description="Only these")
    ] = None,
    flow: Annotated[str | None, Query(max_length=200, description="Only this flow's")] = None,
    updated_before: Annotated[
        float | datetime | None,
        Query(
            description="Only those last updated before (epoch seconds, or an ISO 8601 time "
            "with its zone)"
        ),
    ] = None,
    updated_after: Annotated[
        float | datetime | None,
        Query(
            description="Only those last updated at or after (epoch seconds, or an ISO 8601 "
            "time with its zone)"
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[
        str | None,
        Query(max_length=600, description="Continue after the page that gave this next_cursor"),
    ] = None,
    offset: Annotated[
        int,
        Query(ge=0, le=1_000_000, description="Skip this many first (slower: use the cursor)"),
    ] = 0,
) -> dict[str, Any]:
    """Threads the caller may read, most recently updated first, a page at a time from the
    store's thread index: ``next_cursor`` continues (threads created or deleted meanwhile
    never make one appear twice or go missing). ``offset`` still works, at the cost of
    walking the threads it skips."""
    server = server_of(request)
    server.guard.require(principal, "read")
    filters: dict[str, Any] = {
        "status": status,
        "flow": flow,
        "updated_before": updated_before,
        "updated_after": updated_after,
    }
    try:
        found, after = listed(server, principal, filters, limit, offset, cursor)
        # Counting reads no thread, but deciding who may read each would read them all.
        total = None
        if server.guard.authorize is _allow_all:
            total = stored.count_threads(server.served.store, **filters)
            if status is None:  # all but the unreadable: two counts an index answers
                unlisted = {**filters, "status": "unreadable"}
                total -= stored.count_threads(server.served.store, **unlisted)
    except InvalidListingError as exc:  # a cursor that is not one
        raise Problem(422, "invalid_request", str(exc)) from exc
    return {
        "threads": found,
        "total": total,
        "limit": limit,
        "offset": offset,
        "next_cursor": after,
    }


def listed(
    server: Server,
    principal: str | None,
    filters: dict[str, Any],
    limit: int,
    offset: int,
    cursor: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` threads the caller may read, after ``offset`` of them (from
    ``cursor``), and the cursor after the last one (``None``: no more)."""
    deciding = server.guard.authorize is not _allow_all  # then each row costs a state load
    size = limit if deciding else min(limit + offset, 10_000)
    found: list[dict[str, Any]] = []
    skip = offset
    # Rows a caller may not read cost a load each: at most this many per request (a page
    # comes back short, with its cursor), unless an offset must be walked to the end.
    budget = read_budget(limit) if deciding and not offset else None
    while True:
        page = stored.list_threads(server.served.store, **filters, limit=size, cursor=cursor)
        for index, summary in enumerate(page.threads):
            if budget is not None:
                budget -= 1
            if not _listable(server, principal, summary):
                pass
            elif skip:
                skip -= 1
            else:
                found.append(_summary_json(summary))
            if len(found) == limit or (budget is not None and budget <= 0):
                more = index + 1 < len(page.threads) or page.next_cursor is not None
                return found, summary.cursor() if more else None
        if page.next_cursor is None:
            return found, None
        cursor = page.next_cursor


#: What a thread may be listed as (a thread whose journal cannot be read is not listed).
_LISTED = ("pending", "waiting", "done", "failed")


def _listable(server: Server, principal: str | None, summary: ThreadSummary) -> bool:
    """Whether a listed thread is shown: readable, and (with a hook) the caller's to read."""
    if summary.status not in _LISTED:
        get_logger().warning("server_thread_unreadable", thread_id=summary.thread_id)
        return False
    return _may_read(server, principal, _summary_json(summary))


def _summary_json(summary: ThreadSummary) -> dict[str, Any]:
    return {
        "thread_id": summary.thread_id,
        "flow": summary.flow,
        "status": summary.status,
        "node": summary.node,
        "version": summary.version,
        "updated": summary.updated,
    }


def _may_read(server: Server, principal: str | None, summary: dict[str, Any]) -> bool:
    if server.guard.authorize is _allow_all:
        return True
    runner = server.served.runners.get(summary["flow"])
    state = None
    if runner is not None:
        try:
            state = runner.flow.schema.dump_state(runner.get_state(summary["thread_id"]).state)
        except FlowkitError:
            return False
    access = Access(principal, "read", summary["thread_id"], summary["flow"], state)
    try:
        server.guard.check(access)
    except Problem:
        return False
    return True


def state_schema(model: Any) -> dict[str, Any]:
    """The JSON schema of a state model (empty where JSON schema cannot describe a field)."""
    try:
        found: dict[str, Any] = model.model_json_schema()
    except Exception:  # a state with a field JSON schema cannot describe
        return {}
    return found
