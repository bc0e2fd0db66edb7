"""The thread API: start, inspect, history, resume, fork, patch and delete (listing:
``_listing_api``).

Handlers are plain functions (FastAPI runs them on its worker threads), since a runner call
blocks until the run waits, finishes or fails. ``wait: false`` hands the run to the server's
own pool and answers 202 at once; the events endpoint then tells how it goes.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic_core import to_json

from ..errors import ConflictError, ThreadExistsError
from ..foundation._logging import get_logger
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..stores._ids import check_thread_id
from ..stores._record_pages import record_page
from ._answers import answered_pause, prevalidate
from ._audit import answered
from ._context import Principal, Server, ThreadId, open_thread, server_of, thread_runner
from ._journal import checkpoint_data
from ._models import (
    Accepted,
    Checkpoint,
    ForkRequest,
    History,
    ResumeRequest,
    StartRequest,
    ThreadState,
    UpdateStateRequest,
)
from ._problems import Problem
from ._redact import mask_free_text, redact_with_pauses
from ._roles import stamp_starter
from ._security import Access
from ._served import gates_json

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
        with _claimed(server, thread_id, starting=True):
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
                actor=mask_free_text(getattr(inner, "actor", None), principal),
                reason=mask_free_text(getattr(inner, "reason", ""), principal) or "",
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

    def answer(runner: Runner[Any], expected_version: int | None) -> RunResult[Any]:
        return runner.resume(
            thread_id,
            body.input,
            gate=body.gate,
            expected_version=expected_version,
            actor=principal or "anonymous",
        )

    if body.wait:
        pause = body.gate
        if server.guard.checks_threads:  # the state is read for the check: name the pause
            runner, current = open_thread(server, principal, "resume", thread_id)
            pause = answered_pause(body, current)
        else:
            runner = thread_runner(server, principal, "resume", thread_id)
        with _claimed(server, thread_id):
            result = answer(runner, body.expected_version)
        answered(principal, "resume", thread_id, flow=runner.flow.name, pause=pause,
                 version=result.version)  # fmt: skip
        return state_response(server, runner, result, principal)
    runner, current = open_thread(server, principal, "resume", thread_id)
    prevalidate(runner, current, body)
    # The run expects the thread where the answer was checked: moved meanwhile (by another
    # process; this one's other requests are refused by the claim), it writes nothing, never
    # answering a pause its sender did not see.
    checked_at = current.version if body.expected_version is None else body.expected_version
    _claim(server, thread_id)  # let go by the run when it ends (``_submit``)
    _submit(server, thread_id, lambda: answer(runner, checked_at))
    answered(principal, "resume", thread_id, flow=runner.flow.name,
             pause=answered_pause(body, current))  # fmt: skip
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
    with _claimed(server, thread_id):
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
    with _claimed(server, thread_id):
        runner.delete(thread_id)  # ConflictError (409) while a run of it goes on
    server.served.forget(thread_id)
    answered(principal, "delete", thread_id, flow=runner.flow.name)
    return Response(status_code=204)


# -- helpers ---------------------------------------------------------------------------------


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


def _claim(server: Server, thread_id: str, *, starting: bool = False) -> None:
    """Claim ``thread_id`` for this request (``_underway``); a start that finds it claimed is
    a ``ThreadExistsError`` (another request is starting it), anything else a
    ``ConflictError``."""
    try:
        server.underway.claim(thread_id)
    except ConflictError:
        if starting:
            raise ThreadExistsError(thread_id) from None
        raise


@contextmanager
def _claimed(server: Server, thread_id: str, *, starting: bool = False) -> Iterator[None]:
    """``thread_id`` claimed for the request's ``with`` block (see ``_claim``)."""
    _claim(server, thread_id, starting=starting)
    try:
        yield
    finally:
        server.underway.release(thread_id)


def _start_in_background(server: Server, runner: Runner[Any], thread_id: str, value: Any) -> None:
    """Start the run on the server's pool; return once the thread exists (or it failed)."""
    _claim(server, thread_id, starting=True)
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
    """Run ``call`` on the server's pool; the thread's claim (``_underway``), taken by the
    caller, is let go when it ends."""

    def run() -> Any:
        try:
            return call()
        except Exception as exc:
            get_logger().warning(
                "server_background_run_failed", thread_id=thread_id, error_type=type(exc).__name__
            )
            raise
        finally:
            server.underway.release(thread_id)

    try:
        return server.executor.submit(run)
    except BaseException:
        server.underway.release(thread_id)
        raise
