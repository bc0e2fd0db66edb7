"""Preparing a run's steps, shared by the sync and async APIs: a new thread's first cursor
and its creation, and a resume's answer to the pause the thread waits at (or its going on
after a failure), each handing back the steps the Runner's driver then runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ..definition._flow import Flow
from ..definition._invariants import check_invariants
from ..errors import (
    InvalidResumeInputError,
    InvalidStateError,
    NotWaitingError,
    RunError,
    UnknownGateError,
)
from ..execution._answers import answer
from ..execution._core import run_steps
from ..execution._cursor import Cursor, Steps
from ..execution._open import arrive, known_pause, open_pauses
from ..execution._port import RunPort
from ..execution._steps import mirror, status_of
from ..execution._threads import Threads
from ..execution._timers import sleeping
from ..execution.batch._gates import ChildAnswers, answer_children
from ..execution.subflows._child import waiting_pauses
from ..execution.subflows._run import answer_child
from ..foundation._known_fields import unknown_keys, unknown_keys_message
from ..records._events import Waiting
from ._checkpoints import check_version

__all__ = ["initial_cursor", "pauses_of", "resume_steps", "start_steps"]


def pauses_of(flow: Flow, cursor: Cursor) -> dict[str, Any]:
    """The open pauses of a waiting thread, id -> payload; by path inside a ``Subflow``."""
    if cursor.sub is None:
        return open_pauses(flow, cursor)
    return waiting_pauses(flow, cursor)


def initial_cursor(
    runner: RunPort, thread_id: str, state: BaseModel | Mapping[str, Any] | None
) -> Cursor:
    """A new thread's first cursor: ``state`` validated (``None``: the state's defaults),
    mirrored, and arrived at the flow's start (a gate there opens its pauses)."""
    flow = runner.flow
    try:
        if state is None:
            model = flow.state()
        elif isinstance(state, flow.state):
            # A deep copy: a node changing a list or dict of its state in place must never
            # reach the caller's object.
            model = state.model_copy(deep=True)
        else:
            unknown = unknown_keys(flow.state, state)
            if unknown:
                raise InvalidStateError(
                    f"The start state for thread `{thread_id}` has "
                    f"{unknown_keys_message(flow.state, unknown)}. Pass only its fields.",
                    thread_id=thread_id,
                )
            model = flow.state.model_validate(state)
    except ValidationError as exc:
        raise InvalidStateError(
            f"The start state for thread `{thread_id}` does not fit {flow.state.__name__}: "
            f"{exc.error_count()} error(s), first: {exc.errors()[0]['msg']} at "
            f"{'.'.join(map(str, exc.errors()[0]['loc']))}. Pass a valid state.",
            thread_id=thread_id,
        ) from exc
    update: dict[str, Any] = {}
    # As replay will rebuild it from the start record; a model built here is ours alone.
    model = flow.schema.own_form(model, fresh=model is not state)
    model = mirror(flow, model, update, flow.start)
    pauses, due = arrive(runner, thread_id, flow.start, model)
    return Cursor(model, flow.start, status_of(flow, flow.start), 0, pauses=pauses, due=due)


def start_steps(
    runner: RunPort,
    threads: Threads,
    thread_id: str,
    state: BaseModel | Mapping[str, Any] | None,
    run_id: str,
) -> Steps:
    """Create the thread at its start, then the steps that run it."""
    cursor = initial_cursor(runner, thread_id, state)
    if runner.flow.invariants:
        check_invariants(runner.flow, thread_id, "__start__", cursor.state, None)
    threads.create(thread_id, cursor)
    if cursor.status != "pending":  # a flow that starts at a gate waits at once
        runner._announce(thread_id, run_id, "__start__", cursor, {})
    return run_steps(runner, thread_id, run_id, cursor)


def _no_answer(flow: Flow, thread_id: str, cursor: Cursor) -> InvalidResumeInputError:
    """A resume with no input of a thread that waits for an answer: ``None`` is no answer
    (it continues a pending run or retries a failed node), never a form left empty. A gate
    whose fields all have defaults answered so approved or rejected a draft nobody looked at
    (a "Retry" button, a script resuming every thread)."""
    pause = next(iter(open_pauses(flow, cursor)), cursor.node)
    return InvalidResumeInputError(
        pause,
        thread_id=thread_id,
        errors=[{"loc": (), "msg": "no answer was given", "type": "missing"}],
        detail=f"  (input): no answer was given; the thread waits at `{pause}` for one. Pass "
        "it as input ({} takes the defaults of every field).",
    )


def resume_steps(
    runner: RunPort,
    threads: Threads,
    thread_id: str,
    value: Any,
    gate: str | None,
    expected_version: int | None,
    run_id: str,
    actor: str | None = None,
) -> Steps:
    """Answer the pause the thread waits at with ``value`` (or go on after a failure), then
    the steps that run it on (see ``Runner.resume``)."""
    if gate is not None and not isinstance(gate, str):
        raise UnknownGateError(repr(gate)[:60], thread_id=thread_id, gates=[])
    if actor is not None and not isinstance(actor, str):
        raise RunError(
            f"Cannot resume thread `{thread_id}` with a {type(actor).__name__} as `actor`: "
            "`actor` is text naming who answers, kept in the thread's history; pass a str, "
            "or None.",
            thread_id=thread_id,
        )
    if actor is not None:
        actor = str(actor)  # a str subclass (a server's Identity) is journaled as its text
    if expected_version is not None and (
        isinstance(expected_version, bool) or not isinstance(expected_version, int)
    ):
        raise RunError(
            f"Cannot resume thread `{thread_id}` expecting version {expected_version!r:.40}: "
            "`expected_version` is a whole number (a RunResult's `version`), or None.",
            thread_id=thread_id,
        )
    cursor = threads.load(thread_id, migrate=True)
    if expected_version is not None:
        check_version(thread_id, cursor.version, expected_version)
    if (
        value is None
        and gate is None
        and cursor.status == "waiting"
        and not sleeping(cursor)
        and len(open_pauses(runner.flow, cursor)) <= 1  # several: a bare answer is refused
    ):
        raise _no_answer(runner.flow, thread_id, cursor)
    if cursor.sub is not None and cursor.status == "waiting":  # a gate inside a Subflow
        cursor = answer_child(runner, thread_id, run_id, cursor, value, gate, actor)
        return run_steps(runner, thread_id, run_id, cursor)
    if gate is not None and not known_pause(runner.flow, gate, cursor):
        raise UnknownGateError(
            gate,
            thread_id=thread_id,
            gates=list(dict.fromkeys([*runner.flow.gates, *open_pauses(runner.flow, cursor)])),
        )
    if cursor.status == "waiting":
        batch = cursor.node
        cursor, children = answer(runner, thread_id, run_id, cursor, value, gate, actor)
        if children:  # answers for the child threads of a batch's Subflow calls
            return _answered_steps(runner, thread_id, run_id, cursor, children, actor)
        in_batch = batch in runner.flow.composite
        if in_batch and cursor.status == "waiting" and cursor.node == batch:
            return _still_waiting(runner, thread_id, run_id, cursor)
    elif cursor.status == "failed" and cursor.node in runner.flow.nodes and value is None:
        # Calls of a Map/Parallel node that had finished stay finished.
        cursor = cursor._replace(status="pending", error=None)
    elif cursor.status != "pending" or value is not None or gate is not None:
        raise NotWaitingError(
            f"Thread `{thread_id}` is {cursor.status} at `{cursor.node}`, not waiting at a "
            "gate; "
            + (
                "it has finished: fork it to run again."
                if cursor.node not in runner.flow.nodes  # END or a final state
                else "resume it without input to continue."
            ),
            thread_id=thread_id,
            status=cursor.status,
            node=cursor.node,
        )
    return run_steps(runner, thread_id, run_id, cursor)


def _still_waiting(runner: RunPort, thread_id: str, run_id: str, cursor: Cursor) -> Steps:
    """Some pauses of a batch were answered, others are still open: say which (as steps,
    so a stream has begun with the current state before these events go out)."""
    if runner._subscribers:
        for pause, payload in pauses_of(runner.flow, cursor).items():
            runner._emit(Waiting(thread_id, run_id, pause, cursor.version, payload))
    return cursor
    yield  # a generator: nothing to run


def _answered_steps(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    children: ChildAnswers,
    actor: str | None,
) -> Steps:
    """Give the children of a batch's Subflow calls their answers, then run on."""
    cursor = yield from answer_children(runner, thread_id, run_id, cursor, children, actor)
    return (yield from run_steps(runner, thread_id, run_id, cursor))
