"""The thread API: list, start, inspect, history, resume, fork, patch and delete.

Handlers are plain functions (FastAPI runs them on its worker threads), since a runner call
blocks until the run waits, finishes or fails. ``wait: false`` hands the run to the server's
own pool and answers 202 at once; the events endpoint then tells how it goes.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from pydantic_core import to_json

from ..errors import (
    ConflictError,
    FlowkitError,
    InvalidListingError,
    InvalidResumeInputError,
    NotWaitingError,
    UnknownGateError,
)
from ..foundation._logging import get_logger
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..stores import _list_threads as stored
from ..stores._ids import check_thread_id
from ..stores._listing import ThreadSummary
from ..stores._record_pages import record_page
from ._audit import answered
from ._context import Principal, Server, ThreadId, open_thread, server_of, thread_runner
from ._journal import checkpoint_data
from ._models import (
    Accepted,
    Checkpoint,
    FlowInfo,
    ForkRequest,
    History,
    Me,
    ResumeRequest,
    StartRequest,
    ThreadList,
    ThreadState,
    UpdateStateRequest,
)
from ._problems import Problem
from ._redact import redact_with_pauses
from ._roles import ROLES, is_admin, roles_of, stamp_starter
from ._security import Access, _allow_all, read_budget
from ._served import gate_spec, gates_json, pause_spec

__all__ = ["router", "state_response", "thread_state"]

router = APIRouter()

FlowName = Annotated[str, Path(max_length=200, description="A flow this server runs")]

_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"description": "The authorisation hook denied it"},
    404: {"description": "No such thread, flow or checkpoint"},
    409: {"description": "The thread is not where the request expects it, or is running"},
}


def thread_state(
    server: Server, runner: Runner[Any], result: RunResult[Any], principal: str | None
) -> dict[str, Any]:
    flow = runner.flow
    raw = flow.schema.dump_state(result.state)
    pauses = [(pause.id, pause.payload) for pause in result.pauses]
    state, shown = redact_with_pauses(server.redact, flow.name, raw, pauses, principal)
    error = None
    if result.error is not None:
        message = result.error.message if principal is not None else None
        error = {"type": result.error.type, "message": message, "node": result.error.node}
    return {
        "thread_id": result.thread_id,
        "flow": flow.name,
        "status": result.status,
        "node": result.node,
        "version": result.version,
        "gates": gates_json(flow, result),
        "pauses": shown,
        "due": None if result.due is None else result.due.isoformat(),
        "state": state,
        "error": error,
    }


def state_response(
    server: Server,
    runner: Runner[Any],
    result: RunResult[Any],
    principal: str | None,
    status_code: int = 200,
) -> Response:
    """``thread_state`` as a response, encoded once. Returned as a ``ThreadState`` it was
    validated against that model again and encoded by FastAPI on a second trip to a worker
    thread, for a body built to fit it (tests/server/test_request_cost.py checks that it does)."""
    body = to_json(thread_state(server, runner, result, principal), inf_nan_mode="null")
    return Response(body, status_code, media_type="application/json")


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
            "state_schema": _schema(flow.state),
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
        float | None, Query(description="Only those last updated before (epoch seconds)")
    ] = None,
    updated_after: Annotated[
        float | None, Query(description="Only those last updated at or after (epoch seconds)")
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
        found, after = _listed(server, principal, filters, limit, offset, cursor)
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


def _listed(
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


# -- one thread ------------------------------------------------------------------------------


@router.post(
    "/flows/{flow}/threads",
    status_code=201,
    response_model=ThreadState,
    responses={**_ERRORS, 202: {"model": Accepted, "description": "Started; it runs on"}},
    tags=["threads"],
)
def start_thread(request: Request, flow: FlowName, body: StartRequest, principal: Principal) -> Any:
    """Start a thread and run it until it waits, finishes or fails (or, ``wait: false``, let
    it run on). ``input`` must fit the flow's state (its schema: ``GET /flows``); what does not
    is a 422 naming the fields."""
    server = server_of(request)
    server.guard.require(principal, "start")
    runner = server.served.runner(flow)
    thread_id = body.thread_id or _new_id(flow)
    check_thread_id(thread_id)
    value = stamp_starter(runner.flow, body.input, principal)
    server.guard.check(Access(principal, "start", thread_id, flow, value))
    if body.wait:
        result = runner.start(thread_id, value)
        server.served.remember(thread_id, flow)
        return state_response(server, runner, result, principal, 201)
    _start_in_background(server, runner, thread_id, value)
    return JSONResponse({"thread_id": thread_id, "flow": flow, "running": True}, 202)


@router.get("/threads/{thread_id}", response_model=ThreadState, responses=_ERRORS, tags=["threads"])
def get_thread(request: Request, thread_id: ThreadId, principal: Principal) -> Response:
    """Where the thread stands: status, state, the open pauses with their input schemas
    (``gates``) and payloads (``pauses``)."""
    server = server_of(request)
    runner, result = open_thread(server, principal, "read", thread_id)
    return state_response(server, runner, result, principal)


@router.get(
    "/threads/{thread_id}/history", response_model=History, responses=_ERRORS, tags=["threads"]
)
def get_history(
    request: Request,
    thread_id: ThreadId,
    principal: Principal,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
    before: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """The thread's checkpoints, oldest first: each step, gate input and patch, with its
    update. Fork from any ``version``. A page is the ``limit`` checkpoints from the
    ``offset``-th on, or with ``before``, the ``limit`` just before that version (the next
    page back: ``before`` = the first version shown); only the page is read."""
    server = server_of(request)
    runner, _ = open_thread(server, principal, "read", thread_id)
    if before is not None and offset:
        raise Problem(
            422, "invalid_request", "Give `offset` or `before` to page the history, not both."
        )
    found = record_page(
        server.served.store, thread_id, limit=limit, before=before,
        offset=None if before is not None else offset,
    )  # fmt: skip
    flow = runner.flow
    page: list[Checkpoint] = []
    for record in found.records:
        data = checkpoint_data(record, flow.change_classes)
        inner: Any = record
        while inner.kind == "sub":
            inner = inner.record
        update = dict(getattr(inner, "update", None) or {})
        page.append(
            Checkpoint(
                version=record.version,
                kind=data["kind"],
                node=data["node"],
                next=record.next,
                status=record.status,
                ts=record.ts,
                run_id=record.run_id,
                actor=getattr(inner, "actor", None),
                reason=getattr(inner, "reason", ""),
                update=dict(server.redact(flow.name, update, principal)),
                error_type=data.get("error_type"),
                attempts=data["attempts"],
            )
        )
    return {
        "thread_id": thread_id,
        "checkpoints": [c.model_dump() for c in page],
        "total": found.last - found.first + 1,
        "limit": limit,
        "offset": offset,
        "before": before,
    }


@router.post(
    "/threads/{thread_id}/resume",
    response_model=ThreadState,
    responses={**_ERRORS, 202: {"model": Accepted, "description": "Accepted; it runs on"}},
    tags=["threads"],
)
def resume_thread(
    request: Request, thread_id: ThreadId, body: ResumeRequest, principal: Principal
) -> Any:
    """Answer what the thread waits for, or continue a failed or interrupted run (no input).

    ``gate`` names the pause to answer (one of the thread's ``pauses``: a gate, a node that
    asked, a ``Map`` call ``node[label]``, by path inside a subflow); without it ``input``
    answers the one open pause, or, as a mapping ``{id: input}``, several of a ``Map`` or
    ``Parallel`` at once. A bare input while several are open is refused (409
    ``not_waiting``); each input is validated against its pause's schema (422 lists the
    field errors)."""
    server = server_of(request)
    if body.wait:
        pause = body.gate
        if server.guard.checks_threads:  # the state is read for the check: name the pause
            runner, current = open_thread(server, principal, "resume", thread_id)
            pause = _answered_pause(body, current)
        else:
            runner = thread_runner(server, principal, "resume", thread_id)
        result = runner.resume(
            thread_id,
            body.input,
            gate=body.gate,
            expected_version=body.expected_version,
            actor=principal or "anonymous",
        )
        answered(principal, "resume", thread_id, flow=runner.flow.name, pause=pause,
                 version=result.version)  # fmt: skip
        return state_response(server, runner, result, principal)
    runner, current = open_thread(server, principal, "resume", thread_id)
    _prevalidate(runner, current, body)
    answered(principal, "resume", thread_id, flow=runner.flow.name,
             pause=_answered_pause(body, current))  # fmt: skip
    _submit(
        server,
        thread_id,
        lambda: runner.resume(
            thread_id,
            body.input,
            gate=body.gate,
            expected_version=body.expected_version,
            actor=principal or "anonymous",
        ),
    )
    return JSONResponse({"thread_id": thread_id, "flow": runner.flow.name, "running": True}, 202)


@router.post(
    "/threads/{thread_id}/fork",
    status_code=201,
    response_model=ThreadState,
    responses=_ERRORS,
    tags=["threads"],
)
def fork_thread(
    request: Request, thread_id: ThreadId, body: ForkRequest, principal: Principal
) -> Response:
    """A new thread standing where this one stood at checkpoint ``at``."""
    server = server_of(request)
    runner = thread_runner(server, principal, "fork", thread_id)
    new = body.new_thread_id or _fork_id(server, thread_id)
    result = runner.fork(thread_id, new, at=body.at)
    server.served.remember(new, runner.flow.name)
    answered(principal, "fork", thread_id, flow=runner.flow.name, version=body.at)
    return state_response(server, runner, result, principal, 201)


@router.patch(
    "/threads/{thread_id}/state", response_model=ThreadState, responses=_ERRORS, tags=["threads"]
)
def update_thread_state(
    request: Request, thread_id: ThreadId, body: UpdateStateRequest, principal: Principal
) -> Response:
    """Patch the state (an audited checkpoint naming the principal and the reason).
    ``values`` and ``goto`` must fit the thread's flow (its state schema and states: ``GET
    /flows``); what does not is a 422. ``as_node`` applies the values as that node's update
    and moves the thread where its route sends the new state."""
    server = server_of(request)
    runner = thread_runner(server, principal, "update", thread_id)
    result = runner.update_state(
        thread_id,
        body.values,
        goto=body.goto,
        reason=body.reason,
        actor=principal or "anonymous",
        expected_version=body.expected_version,
        as_node=body.as_node,
    )
    answered(principal, "update", thread_id, flow=runner.flow.name, version=result.version)
    return state_response(server, runner, result, principal)


@router.delete(
    "/threads/{thread_id}",
    status_code=204,
    response_class=Response,
    responses=_ERRORS,
    tags=["threads"],
)
def delete_thread(request: Request, thread_id: ThreadId, principal: Principal) -> Response:
    """Delete the thread and its whole history (not while it runs: 409)."""
    server = server_of(request)
    runner = thread_runner(server, principal, "delete", thread_id)
    runner.delete(thread_id)  # ConflictError (409) while a run of it goes on
    server.served.forget(thread_id)
    answered(principal, "delete", thread_id, flow=runner.flow.name)
    return Response(status_code=204)


# -- helpers ---------------------------------------------------------------------------------


def _schema(model: Any) -> dict[str, Any]:
    try:
        found: dict[str, Any] = model.model_json_schema()
    except Exception:  # a state with a field JSON schema cannot describe
        return {}
    return found


def _new_id(flow: str) -> str:
    prefix = "".join(ch if ch.isalnum() or ch in "_-" else "-" for ch in flow)[:60] or "thread"
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def _fork_id(server: Server, thread_id: str) -> str:
    existing = set(server.served.store.threads())
    base = thread_id[:110]
    number = 1
    while f"{base}-fork-{number}" in existing:
        number += 1
    return f"{base}-fork-{number}"


def _answered_pause(body: ResumeRequest, current: RunResult[Any]) -> str | None:
    """The pause an answer is for, for the audit line: the one named, else the one open."""
    return body.gate or (current.gates[0] if len(current.gates) == 1 else None)


def _prevalidate(runner: Runner[Any], current: RunResult[Any], body: ResumeRequest) -> None:
    """Refuse now what the background run would refuse, so the caller hears of it: a done
    thread, a pause it does not wait at, a bare answer while several pauses are open, an
    answer its pause's model refuses."""
    if current.status == "done":
        raise NotWaitingError(
            f"Thread `{current.thread_id}` is done at `{current.node}`; fork it to run again.",
            thread_id=current.thread_id,
            status=current.status,
            node=current.node,
        )
    expected = body.expected_version
    if expected is not None and expected != current.version:  # a page that is behind
        raise ConflictError(
            f"Thread `{current.thread_id}` is at version {current.version}, not {expected}; "
            "someone moved it first. Reload it and decide again.",
            thread_id=current.thread_id,
            expected=expected,
            actual=current.version,
        )
    if current.status != "waiting" or body.input is None:
        return
    for pause, given in _answers(runner, current, body).items():
        spec = gate_spec(runner.flow, pause)
        if spec is None:
            continue
        try:
            spec.input.model_validate(given)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False, include_context=False)
            detail = "\n".join(
                f"  {'.'.join(map(str, e['loc'])) or '(input)'}: {e['msg']}" for e in errors
            )
            raise InvalidResumeInputError(
                pause, thread_id=current.thread_id, errors=[dict(e) for e in errors], detail=detail
            ) from exc


def _answers(runner: Runner[Any], current: RunResult[Any], body: ResumeRequest) -> dict[str, Any]:
    """The answers a resume of a waiting thread gives, by pause id, as the runner reads them:
    ``gate`` names one; a mapping ``{id: input}`` answers several (where several can be
    open); a bare input answers the one open pause, and is refused when several are open."""
    flow, waiting, thread_id = runner.flow, current.gates, current.thread_id
    names = ", ".join(f"`{pause}`" for pause in waiting)
    if body.gate is not None:
        if body.gate in waiting:
            return {body.gate: body.input}
        if gate_spec(flow, body.gate) is None:
            raise UnknownGateError(
                body.gate, thread_id=thread_id, gates=list(dict.fromkeys([*flow.gates, *waiting]))
            )
        raise NotWaitingError(
            f"Thread `{thread_id}` waits at {names}, not at `{body.gate}`; resume with gate= "
            + ("that one." if len(waiting) == 1 else "one of those."),
            thread_id=thread_id,
            status=current.status,
            node=current.node,
        )
    given = body.input
    several = any((pause_spec(flow, pause) or (None, False))[1] for pause in waiting)
    if several and isinstance(given, Mapping) and given and set(given) <= set(waiting):
        return dict(given)
    if len(waiting) == 1:
        return {waiting[0]: given}
    raise NotWaitingError(
        f"Thread `{thread_id}` waits at {len(waiting)} pauses ({names}); pass gate='<id>' with "
        "its input, or an input mapping {id: input} to answer several.",
        thread_id=thread_id,
        status=current.status,
        node=current.node,
    )


def _start_in_background(server: Server, runner: Runner[Any], thread_id: str, value: Any) -> None:
    """Start the run on the server's pool; return once the thread exists (or it failed)."""
    created = server.creations.expect(thread_id)
    try:
        future = _submit(server, thread_id, lambda: runner.start(thread_id, value))
        while not created.wait(0.02):
            if future.done():
                future.result()  # raises what the start raised
                return
    finally:
        server.creations.forget(thread_id)


def _submit(server: Server, thread_id: str, call: Callable[[], Any]) -> Any:
    def run() -> Any:
        try:
            return call()
        except Exception as exc:
            get_logger().warning(
                "server_background_run_failed", thread_id=thread_id, error_type=type(exc).__name__
            )
            raise

    return server.executor.submit(run)
