"""Runs: create (in the background), wait, stream, join, get, list, cancel, delete; on a
thread, or stateless (on a new thread). A run is one flowkit start or resume, decided by
``_plan``; ``multitask_strategy="reject"`` refuses a run while another of the thread's goes
on (409), else runs queue on the thread's lock, one after another."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Executor
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...errors import ConflictError, FlowkitError, RunCancelledError
from ...foundation._logging import get_logger
from ...runner._result import RunResult
from ...runner._runner import Runner
from .._context import Principal, Server, ThreadId, server_of
from .._problems import Problem, problem_of
from ._context import find_thread, registry_of
from ._documents import RunDoc, answer
from ._joined import RunFrames
from ._models import RunCreate, unsupported
from ._plan import Plan, execute, plan_run, refuse_unsupported
from ._registry import MAX_ACTIVE, MAX_QUEUED, Registry, RunInfo
from ._shapes import run_json, values_output
from ._sse import EVENTS, flowkit_modes, frame, sse_events

__all__ = ["router"]

router = APIRouter(tags=["langgraph"])

_RUN = answer(RunDoc, "The run")
_VALUES = answer(
    dict[str, Any],
    "The thread's values once the run ended: `__interrupt__` at a pause, `__error__` after "
    "a failure",
)
#: One server-sent event as a client parses it (``data``: one line of JSON).
_SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {
            "type": "string",
            "enum": ["metadata", "values", "updates", "custom", "events", "messages",
                     "messages/partial", "messages/complete", "error", "end"],
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}  # fmt: skip
_EVENTS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: metadata, then events of the modes asked for "
        "(values, updates, custom, events, messages), error if the run failed, end",
        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
    }
}
RunId = Annotated[str, Path(max_length=64, description="A run's id")]


def _location(run: RunInfo) -> dict[str, str]:
    return {"Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"}


def _admit(
    server: Server,
    registry: Registry,
    principal: str | None,
    thread_id: str,
    body: RunCreate,
    *,
    keep: bool = True,
) -> tuple[RunInfo, Plan | None]:
    """The new run, with its plan; ``None`` when it queues behind a run of the thread (it is
    then decided when its turn comes). ``reject`` refuses it while one goes on (409).
    ``keep=False``: the caller registers the run once it starts."""
    strategy = body.multitask_strategy or "enqueue"
    pinned: int | None = None
    answers = isinstance(body.command, dict) and "resume" in body.command
    earlier = [run for run in registry.runs_of(thread_id) if run.active]
    if len(earlier) >= MAX_QUEUED or registry.active() >= MAX_ACTIVE:
        # Every queued run holds a worker until its turn: a bound, not an ever-longer queue.
        raise Problem(
            429,
            "too_many_runs",
            f"Thread `{thread_id}` has {len(earlier)} runs pending or running (at most "
            f"{MAX_QUEUED} per thread, {MAX_ACTIVE} in all); wait for them to end, or cancel "
            "some.",
            extra={"thread_id": thread_id},
        )
    refuse_unsupported(body)  # a run queued would otherwise fail only once its turn came
    if earlier:
        if strategy == "reject":
            raise Problem(
                409,
                "thread_busy",
                f"Thread `{thread_id}` has a run in progress; multitask_strategy='reject' "
                "refuses another until it ends.",
                extra={"thread_id": thread_id},
            )
        server.guard.require(principal, "resume")
        plan = None
        if answers and any(run.answers for run in earlier):
            pinned = _version_of(server, thread_id, body)
    else:
        plan = plan_run(server, registry, principal, thread_id, body)
    now = time.time()
    run = RunInfo(
        run_id=str(uuid.uuid4()),
        thread_id=thread_id,
        assistant_id=body.assistant_id,
        created_at=now,
        updated_at=now,
        metadata=dict(body.metadata or {}),
        multitask_strategy=strategy,
        after=earlier,
        answers=answers,
        pinned=pinned,
    )
    if keep:
        registry.add_run(run)
    return run, plan


def _version_of(server: Server, thread_id: str, body: RunCreate) -> int | None:
    """The thread's version now (``None``: none can be read; the run is decided when its
    turn comes, as any other)."""
    try:
        return server.served.runner(body.assistant_id).get_state(thread_id).version
    except (FlowkitError, Problem):
        return None


def _run(
    server: Server,
    registry: Registry,
    run: RunInfo,
    plan: Plan | None,
    body: RunCreate,
    principal: str | None,
) -> Any:
    """Run it to its end; what ``wait`` and ``join`` answer (errors included, as LangGraph's
    ``__error__``)."""
    for earlier in run.after:  # queued: decided where the thread stands once they end
        earlier.done.wait()
    run.after = []
    if not registry.move(run, "running"):  # cancelled while it queued
        return run.output
    try:
        if plan is None:
            plan = plan_run(server, registry, principal, run.thread_id, body)
            if run.pinned is not None and plan.expected != run.pinned:
                raise ConflictError(
                    f"Thread `{run.thread_id}` moved on from version {run.pinned}, where it "
                    "waited when this run came, while the runs before it ran (one answered "
                    "that pause); this answer wrote nothing. Read the thread and answer what "
                    "it waits for now.",
                    thread_id=run.thread_id,
                    expected=run.pinned,
                    actual=plan.expected,
                )
        result = execute(plan) if run.frames is None else _streamed(server, plan, run.frames, run)
    except RunCancelledError:  # runs.cancel while it ran: it stopped after its saved step
        assert plan is not None  # only a run that started can be cancelled so
        output = values_output(server, plan.runner, plan.runner.get_state(run.thread_id), principal)
        registry.set_status(run, "interrupted", output)
        return output
    except (FlowkitError, Problem) as exc:
        problem = exc if isinstance(exc, Problem) else problem_of(exc)
        output = {"__error__": {"error": problem.code, "message": problem.detail}}
        registry.set_status(run, "error", output)
        return output
    except Exception as exc:  # never leave a run running; the log names the type only
        get_logger().error(
            "server_langgraph_run_failed", thread_id=run.thread_id, error_type=type(exc).__name__
        )
        output = {"__error__": {"error": "internal_error", "message": "The run failed."}}
        registry.set_status(run, "error", output)
        return output
    server.served.remember(run.thread_id, plan.runner.flow.name)
    registry.touch(run.thread_id, plan.runner.flow.name)
    output = values_output(server, plan.runner, result, principal)
    registry.set_status(run, "error" if result.status == "failed" else "success", output)
    return output


def _streamed(server: Server, plan: Plan, frames: RunFrames, run: RunInfo) -> RunResult[Any]:
    """Run ``plan`` as ``runs.stream`` would, keeping its events for ``join_stream``."""
    outcome: dict[str, Any] = {}
    for event in sse_events(server, plan, frames.modes, run.run_id, outcome):
        frames.add(event)
    result: RunResult[Any] | None = outcome.get("result")
    if outcome.get("cancelled") and result is not None:
        raise RunCancelledError(plan.thread_id, result.version, result.node)
    if result is None:  # refused before it ran (the error event says why)
        error = outcome.get("error") or {"error": "internal_error", "message": "The run failed."}
        raise Problem(409, str(error["error"]), str(error["message"]))
    return result


def _in_background(
    server: Server,
    registry: Registry,
    run: RunInfo,
    plan: Plan | None,
    body: RunCreate,
    principal: str | None,
) -> Any:
    try:
        return _run(server, registry, run, plan, body, principal)
    finally:
        if run.frames is not None:
            run.frames.end()


def _create(request: Request, thread_id: str, body: RunCreate, principal: str | None) -> Any:
    server, registry = server_of(request), registry_of(request)
    run, plan = _admit(server, registry, principal, thread_id, body)
    asked = [body.stream_mode] if isinstance(body.stream_mode, str) else body.stream_mode
    run.frames = RunFrames([mode for mode in dict.fromkeys(asked) if mode in EVENTS] or ["values"])
    run.future = server.executor.submit(
        _in_background, server, registry, run, plan, body, principal
    )
    return JSONResponse(run_json(run), headers=_location(run))


def _wait(request: Request, thread_id: str, body: RunCreate, principal: str | None) -> Any:
    server, registry = server_of(request), registry_of(request)
    run, plan = _admit(server, registry, principal, thread_id, body)
    output = _run(server, registry, run, plan, body, principal)
    return JSONResponse(output, headers=_location(run))


def _stream(request: Request, thread_id: str, body: RunCreate, principal: str | None) -> Any:
    server, registry = server_of(request), registry_of(request)
    asked = flowkit_modes(body.stream_mode)
    run, plan = _admit(server, registry, principal, thread_id, body, keep=False)
    if plan is None:
        raise unsupported("streaming a run queued behind another", "Wait for it, then stream.")

    def events() -> Any:
        # Registered once it runs: a response never sent leaves no run pending forever.
        registry.add_run(run)
        registry.move(run, "running")
        status: Any = "interrupted"  # the client left before the end
        try:
            for event in sse_events(server, plan, asked, run.run_id):
                if event.startswith(b"event: end\n"):
                    status = "error" if b'"status":"error"' in event else "success"
                yield event
        finally:
            registry.touch(thread_id, plan.runner.flow.name)
            server.served.remember(thread_id, plan.runner.flow.name)
            registry.set_status(run, status)

    headers = {**_location(run), "Cache-Control": "no-store"}
    goes_on = server.executor if body.on_disconnect == "continue" else None
    return StreamingResponse(_closed_on_leaving(events(), goes_on),
                             media_type="text/event-stream", headers=headers)  # fmt: skip


async def _closed_on_leaving(
    frames: Iterator[bytes], goes_on: Executor | None = None
) -> AsyncIterator[bytes]:
    """``frames``, read on worker threads, and closed when the client leaves: the run stops
    after the step in progress (saved) and ends as ``interrupted``, rather than staying
    ``running``, its thread busy, for as long as the unread generator lives. With
    ``goes_on`` (``on_disconnect="continue"``) the run goes on to its end there instead,
    its events read and dropped."""
    try:
        while (frame := await run_in_threadpool(next, frames, None)) is not None:
            yield frame
    finally:
        # No read is under way here: a cancelled run_in_threadpool waits for its thread.
        if not _went_on(goes_on, frames):
            with anyio.CancelScope(shield=True):  # the client left: the response is cancelled
                await run_in_threadpool(_close, frames)


def _went_on(goes_on: Executor | None, frames: Iterator[bytes]) -> bool:
    """Whether ``frames`` are read to their end on ``goes_on`` (not when the server is
    shutting down: then the run stops as for a client that leaves)."""
    if goes_on is None:
        return False
    try:
        goes_on.submit(_drain, frames)
    except RuntimeError:  # the executor is shut down
        return False
    return True


def _close(frames: Iterator[bytes]) -> None:
    close = getattr(frames, "close", None)
    if close is not None:
        close()


def _drain(frames: Iterator[bytes]) -> None:
    """Read ``frames`` to their end, nobody listening: the run goes on to its end."""
    for _ in frames:
        pass


# -- on a thread ------------------------------------------------------------------------------


@router.post("/threads/{thread_id}/runs", responses=_RUN)
def create_run(request: Request, thread_id: ThreadId, body: RunCreate, principal: Principal) -> Any:
    """Start a run in the background; answers the run (``pending``) at once."""
    return _create(request, thread_id, body, principal)


@router.post("/threads/{thread_id}/runs/wait", responses=_VALUES)
def wait_run(request: Request, thread_id: ThreadId, body: RunCreate, principal: Principal) -> Any:
    """Run until the thread waits, finishes or fails; answers its values (``__interrupt__``
    at a pause, ``__error__`` after a failure)."""
    return _wait(request, thread_id, body, principal)


@router.post(
    "/threads/{thread_id}/runs/stream", response_class=StreamingResponse, responses=_EVENTS
)
def stream_run(request: Request, thread_id: ThreadId, body: RunCreate, principal: Principal) -> Any:
    """Run, streaming server-sent events of the modes asked for."""
    return _stream(request, thread_id, body, principal)


# -- stateless: each on a new thread (kept, as on_completion='keep') ---------------------------


def _stateless(body: RunCreate) -> tuple[str, RunCreate]:
    return str(uuid.uuid4()), body.model_copy(update={"if_not_exists": "create"})


@router.post("/runs", responses=_RUN)
def create_stateless_run(request: Request, body: RunCreate, principal: Principal) -> Any:
    return _create(request, *_stateless(body), principal)


@router.post("/runs/wait", responses=_VALUES)
def wait_stateless_run(request: Request, body: RunCreate, principal: Principal) -> Any:
    return _wait(request, *_stateless(body), principal)


@router.post("/runs/stream", response_class=StreamingResponse, responses=_EVENTS)
def stream_stateless_run(request: Request, body: RunCreate, principal: Principal) -> Any:
    return _stream(request, *_stateless(body), principal)


# -- one run ----------------------------------------------------------------------------------


def _the_run(request: Request, thread_id: str, run_id: str, principal: str | None) -> RunInfo:
    server, registry = server_of(request), registry_of(request)
    find_thread(server, registry, principal, "read", thread_id)
    run = registry.run(thread_id, run_id)
    if run is None:
        raise Problem(
            404,
            "run_not_found",
            f"Thread `{thread_id}` has no run `{run_id}` on this server (runs are kept in "
            "its memory, not across restarts).",
        )
    return run


@router.get(
    "/threads/{thread_id}/runs",
    response_model=None,
    responses=answer(list[RunDoc], "The thread's runs, newest first"),
)
def list_runs(
    request: Request,
    thread_id: ThreadId,
    principal: Principal,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    status: Annotated[str | None, Query(max_length=20)] = None,
) -> list[dict[str, Any]]:
    """The thread's runs started on this server, newest first."""
    server, registry = server_of(request), registry_of(request)
    find_thread(server, registry, principal, "read", thread_id)
    runs = [r for r in registry.runs_of(thread_id) if status is None or r.status == status]
    return [run_json(run) for run in runs[offset : offset + limit]]


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=None, responses=_RUN)
def get_run(
    request: Request, thread_id: ThreadId, run_id: RunId, principal: Principal
) -> dict[str, Any]:
    return run_json(_the_run(request, thread_id, run_id, principal))


@router.get("/threads/{thread_id}/runs/{run_id}/join", responses=_VALUES)
def join_run(request: Request, thread_id: ThreadId, run_id: RunId, principal: Principal) -> Any:
    """Wait for the run to end; answers as ``wait`` does."""
    run = _the_run(request, thread_id, run_id, principal)
    while not run.done.wait(1.0):
        pass
    return run.output


@router.post(
    "/threads/{thread_id}/runs/{run_id}/cancel",
    status_code=204,
    responses={202: {"description": "Cancelled, but still in its step after the wait"}},
)
def cancel_run(
    request: Request,
    thread_id: ThreadId,
    run_id: RunId,
    principal: Principal,
    wait: Annotated[bool, Query(description="Answer once the run has stopped")] = False,
    action: Annotated[
        Literal["interrupt", "rollback"],
        Query(description="`interrupt` (stop after the step in progress); `rollback`: a 501"),
    ] = "interrupt",
) -> Response:
    """Cancel a run: one still queued never runs; a running one stops after the step in
    progress (saved) and ends ``interrupted``; an ended one is a 409. ``wait``: answer once
    it has stopped (204), or 202 if its step still runs after a minute (``_CANCEL_WAIT_S``)."""
    server = server_of(request)
    server.guard.require(principal, "resume")
    if action == "rollback":  # its run and what it wrote undone: a journal keeps every record
        raise unsupported(
            "runs.cancel(action='rollback')",
            "Cancel with action='interrupt', then run from an earlier checkpoint "
            "(`checkpoint_id`) to go back.",
        )
    run = _the_run(request, thread_id, run_id, principal)
    if registry_of(request).move(run, "interrupted"):
        return Response(status_code=204)
    if run.status == "running" and _stop(server.served.runner(run.assistant_id), run):
        stopped = not wait or run.done.wait(_CANCEL_WAIT_S)
        return Response(status_code=204 if stopped else 202)
    raise Problem(
        409,
        "run_not_cancellable",
        f"Run `{run_id}` is {run.status}: only a queued or running run can be cancelled.",
        extra={"thread_id": thread_id},
    )


def _stop(runner: Runner[Any], run: RunInfo) -> bool:
    """Ask the runner to stop ``run``'s thread before its next node; whether it took the
    request. A run marked running may not hold the thread yet: asked again for a moment."""
    deadline = time.monotonic() + _STOP_WAIT_S
    while not runner.cancel(run.thread_id):
        if run.done.is_set() or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


#: How long a cancel waits for a run marked running to take its thread's lock (seconds).
_STOP_WAIT_S = 2.0
#: How long ``runs.cancel(wait=True)`` waits for the run to stop, at most (seconds): its
#: node in progress finishes first.
_CANCEL_WAIT_S = 60.0


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
def delete_run(
    request: Request, thread_id: ThreadId, run_id: RunId, principal: Principal
) -> Response:
    server_of(request).guard.require(principal, "delete")
    run = _the_run(request, thread_id, run_id, principal)
    if run.active:
        raise Problem(409, "run_active", f"Run `{run_id}` is {run.status}; delete it once done.")
    registry_of(request).drop_run(run)
    return Response(status_code=204)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    response_class=StreamingResponse,
    responses=_EVENTS,
)
def join_run_stream(
    request: Request,
    thread_id: ThreadId,
    run_id: RunId,
    principal: Principal,
    stream_mode: Annotated[list[str] | None, Query(max_length=10)] = None,
    last_event_id: Annotated[
        str | None, Header(alias="Last-Event-ID", max_length=20, pattern=r"^\d*$")
    ] = None,
) -> Any:
    """Follow a background run's events (``runs.create``): from the start, or after
    ``Last-Event-ID``, until it ends; ``stream_mode`` picks among the modes it was started
    with. An ended run gives its first and last events."""
    run = _the_run(request, thread_id, run_id, principal)
    frames = run.frames
    if frames is None and run.active:
        raise unsupported(
            "joining the stream of a run started by runs.wait or runs.stream",
            "Join it (runs.join), or start it with runs.create.",
        )
    modes = frames.modes if frames is not None else []
    asked = [mode for mode in stream_mode or () if mode]  # the SDK sends `stream_mode=` blank
    if asked:
        flowkit_modes(asked)  # 501 for a mode flowkit does not stream
        modes = [mode for mode in modes if mode in asked]
    wanted = {b"metadata", b"error", b"end"} | {
        event.encode() for mode in modes for event in EVENTS[mode]
    }
    after = int(last_event_id) if last_event_id else -1

    def events() -> Iterator[bytes]:
        if frames is None:  # ended: it kept no events
            yield frame("metadata", {"run_id": run.run_id, "attempt": 1})
            yield frame("end", {"run_id": run.run_id, "status": run.status})
            return
        for event in frames.follow(after):
            name = event.partition(b"\nevent: ")[2].partition(b"\n")[0]
            if not name or name in wanted:  # no name: a comment, the run goes on
                yield event

    headers = {**_location(run), "Cache-Control": "no-store"}
    return StreamingResponse(_closed_on_leaving(events()), media_type="text/event-stream",
                             headers=headers)  # fmt: skip
