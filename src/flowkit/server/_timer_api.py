"""``GET /timers``: the threads whose timer (a gate's deadline, a node's wake-up) is due by a
time, a page at a time, for the reviewer's inbox and any client.

The page comes from the store's timer index (``flowkit.stores.list_due_timers``), so it costs
the page, not the number of threads. Each timer's thread is then read, as ``GET /threads/{id}``
reads it: to say where the timer is (gate or node), to leave out an index entry the thread
has moved on from, and to let the ``authorize`` hook (roles, private flows) decide who sees it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from ..errors import FlowkitError, InvalidListingError
from ..stores._protocol import DueTimer
from ..stores._timer_listing import list_due_timers, timer_cursor
from ._context import Principal, Server, server_of
from ._problems import Problem
from ._security import Access, read_budget

__all__ = ["DueTimerInfo", "TimerList", "router"]

router = APIRouter()


class DueTimerInfo(BaseModel):
    thread_id: str
    flow: str
    kind: Literal["deadline", "wake"] = Field(
        description="`deadline`: a gate's deadline (`on_timeout`); `wake`: a node asleep "
        "(`ctx.sleep_until`)"
    )
    at: str = Field(description="The gate (by path inside a Subflow) or the sleeping node")
    node: str = Field(description="Where the thread waits (a Subflow's node for its gates)")
    due: datetime = Field(description="When the timer is, or was, due (ISO 8601, UTC)")
    version: int


class TimerList(BaseModel):
    timers: list[DueTimerInfo]
    until: datetime = Field(description="The timers listed are due at or before this time")
    limit: int
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; null: this was the last"
    )


#: ISO 8601 date and time with a zone: what ``until`` accepts (never epoch seconds).
_ISO_TIME = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:\d{2})$"


@router.get("/timers", response_model=TimerList, tags=["threads"])
def list_timers(
    request: Request,
    principal: Principal,
    until: Annotated[
        str | None,
        Query(
            pattern=_ISO_TIME,
            description="Only timers due at or before this time (ISO 8601 with a time zone, "
            "e.g. 2026-11-28T09:30:00Z); default: now",
        ),
    ] = None,
    flow: Annotated[str | None, Query(max_length=200, description="Only this flow's")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[
        str | None,
        Query(max_length=600, description="Continue after the page that gave this next_cursor"),
    ] = None,
) -> dict[str, Any]:
    """Threads the caller may read whose timer is due by ``until``: the earliest first (ties
    by thread id), a page at a time from the store's timer index. ``next_cursor`` continues.
    A timer that fires, or a thread answered, meanwhile is not listed."""
    server = server_of(request)
    server.guard.require(principal, "read")
    moment = _aware(until) if until is not None else datetime.now(UTC)
    try:
        found, after = _listed(server, principal, moment, flow, limit, cursor)
    except InvalidListingError as exc:  # a cursor that is not one
        raise Problem(422, "invalid_request", str(exc)) from exc
    return {"timers": found, "until": moment, "limit": limit, "next_cursor": after}


def _aware(text: str) -> datetime:
    """``until`` as an aware time: a 422 problem for a date that does not exist (the pattern
    has already refused anything but ISO 8601 with a zone; a bare number is not a time here)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise Problem(
            422, "invalid_request", "`until` is not a date and time that exists."
        ) from None
    if moment.utcoffset() is None:  # pragma: no cover - the pattern requires a zone
        raise Problem(422, "invalid_request", "`until` needs a time zone (e.g. Z).")
    return moment


def _listed(
    server: Server,
    principal: str | None,
    until: datetime,
    flow: str | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` due timers the caller may see, from ``cursor``, and the cursor after
    the last one read (``None``: no more). Each entry costs a thread read, so a request
    reads at most ``read_budget(limit)``: a caller who may see few of many gets a short page
    and a cursor, never a request that reads the whole store."""
    found: list[dict[str, Any]] = []
    budget = read_budget(limit)
    while True:
        page = list_due_timers(server.served.store, until, flow=flow, limit=limit, cursor=cursor)
        for index, timer in enumerate(page.timers):
            entry = _entry(server, principal, timer)
            budget -= 1
            if entry is not None:
                found.append(entry)
            if len(found) == limit or budget <= 0:  # a short page, if the reads ran out
                more = index + 1 < len(page.timers) or page.next_cursor is not None
                return found, timer_cursor(timer) if more else None
        if page.next_cursor is None:
            return found, None
        cursor = page.next_cursor


def _entry(server: Server, principal: str | None, timer: DueTimer) -> dict[str, Any] | None:
    """What the listing shows of ``timer``; ``None`` when its thread is gone, has moved on
    (a stale index entry), belongs to a flow this server does not run, or is not the
    caller's to read."""
    try:
        runner = server.served.runner_of(timer.thread_id)
        result = runner.get_state(timer.thread_id)
    except (FlowkitError, Problem):
        return None
    due = result.due
    if (
        result.status != "waiting"
        or due is None
        or round(due.timestamp() * 1000) != round(timer.due * 1000)
    ):
        return None
    if server.guard.checks_threads:
        state = runner.flow.schema.dump_state(result.state)
        access = Access(principal, "read", timer.thread_id, runner.flow.name, state)
        try:
            server.guard.check(access)
        except Problem:
            return None
    return {
        "thread_id": timer.thread_id,
        "flow": runner.flow.name,
        "kind": "deadline" if result.gates else "wake",
        "at": result.gates[0] if result.gates else result.node,
        "node": result.node,
        "due": due,
        "version": result.version,
    }
