"""The attempts of a ``Subflow`` node: starting its child afresh, which failed attempts run
again (``retry``), and how ``timeout`` stops a child that runs too long without leaving a step
half done.

A failed attempt is judged by its ``NodeError``, the form the journal keeps, so a run resumed
after a crash decides as the interrupted one would have. A timeout is only ever acted on where
nothing of the child is in flight: before the child calls a node or backs off, and when the
node it calls is stopped the way a node's own timeout stops it.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from ...definition._invariants import check_invariants
from ...definition._node import Context
from ...definition._subflow import Subflow
from ...errors import NodeTimeoutError
from ...records._node_error import NodeError
from ...records._records import StartRecord
from .._cursor import CallNode, Cursor, Instruction, Outcome, Sleep
from .._open import arrive
from .._port import RunSteps
from .._steps import fail as _fail
from .._steps import mirror, status_of
from ._child import ChildRunner
from ._journal import dump_child_state

__all__ = ["run_child", "start_child", "start_state"]


def start_state(node: Subflow, parent: BaseModel) -> BaseModel:
    """The start state of the node's child for this parent state (each attempt's)."""
    flow = node.flow
    value = node.start_state(parent)
    try:
        return value if isinstance(value, flow.state) else flow.state.model_validate(value)
    except ValidationError as exc:
        # Only the count: the messages could quote the (possibly private) values.
        raise ValueError(
            f"the start state of subflow `{flow.name}` does not fit {flow.state.__name__}: "
            f"{exc.error_count()} error(s)"
        ) from None


def start_child(holder: ChildRunner, thread_id: str, run_id: str, state: BaseModel) -> Cursor:
    """Start the child afresh from ``state``, journaled as attempt ``holder.attempts``."""
    flow = holder.flow
    state = mirror(flow, state, {}, flow.start)
    if flow.invariants:
        check_invariants(flow, thread_id, "__start__", state, None)
    pauses, due = arrive(holder, thread_id, flow.start, state)
    child = Cursor(state, flow.start, status_of(flow, flow.start), 0, pauses=pauses, due=due)
    record = None
    if holder.store is not None:
        record = StartRecord(
            version=0,
            ts=holder.stamp(),
            run_id=run_id,
            next=child.node,
            status=child.status,
            pauses=pauses,
            due=due,
            flow=flow.name,
            state=dump_child_state(flow, thread_id, state),
        )
    holder.commit(thread_id, -1, child, record)
    return child


def run_child(
    holder: ChildRunner,
    thread_id: str,
    run_id: str,
    child: Cursor,
    timeout: float | None,
    run_steps: RunSteps,
) -> Generator[Instruction, Any, Cursor]:
    """Run the child from ``child`` until it waits, finishes or fails.

    With a ``timeout``, the child stops once it has run that long in this call: a node it
    calls gets at most the time left as its timeout (stopped, if it runs past, as its own
    timeout would stop it), a back-off ends at the deadline, and a child past its deadline
    calls nothing more. It then fails with a ``NodeTimeoutError`` at the step it stands at;
    its committed steps stay. A ``Map``/``Parallel`` in the child runs on to its join.
    """
    steps = run_steps(holder, thread_id, run_id, child)
    if timeout is None:
        return (yield from steps)
    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    try:
        instruction = next(steps)
        while True:
            if isinstance(instruction, CallNode | Sleep):
                left = deadline - time.monotonic()
                if left <= 0:
                    return _stopped(holder, thread_id, run_id, timeout, started)
                given = _within(instruction, left, holder, run_id)
                sent = yield given
                if given is not instruction and _ran_out(given, sent):
                    return _stopped(holder, thread_id, run_id, timeout, started)
            else:
                sent = yield instruction
            instruction = steps.send(sent)
    except StopIteration as stop:
        result: Cursor = stop.value
        return result
    finally:
        steps.close()  # stopped at a yield: nothing of the unfinished step was committed


def _within(
    instruction: CallNode | Sleep, left: float, holder: ChildRunner, run_id: str
) -> CallNode | Sleep:
    """``instruction`` bounded by the ``left`` seconds of the subflow's timeout."""
    if isinstance(instruction, Sleep):
        return instruction if instruction.seconds <= left else Sleep(left)
    own = instruction.node.timeout
    if own is not None and own <= left:
        return instruction  # the node's own timeout comes first: its failure is the child's
    # The driver stops a call at its node's timeout and raises the flag in its context.
    ctx = instruction.ctx or Context(
        thread_id=instruction.thread_id,
        run_id=run_id,
        node=instruction.name,
        attempt=1,
        llm=None,
        clock=holder.clock,
    )
    return instruction._replace(node=replace(instruction.node, timeout=left), ctx=ctx)


def _ran_out(call: CallNode | Sleep, outcome: Any) -> bool:
    """Whether the call stopped at the subflow's deadline (not at a timeout of its own)."""
    if not isinstance(call, CallNode) or not isinstance(outcome, Outcome):
        return False
    error = outcome.error
    return (
        isinstance(error, NodeTimeoutError)
        and error.node == call.name
        and error.timeout == call.node.timeout
    )


def _stopped(
    holder: ChildRunner, thread_id: str, run_id: str, timeout: float, started: float
) -> Cursor:
    """The child fails where it stands, with the subflow node's timeout as its error."""
    child = holder.cursor.sub
    assert child is not None, "a child runs: its start is committed"
    error = NodeError.from_exception(
        NodeTimeoutError(holder.name, timeout),
        node=child.node,
        attempts=1,
        text=holder.error_text,
    )
    runner = holder
    return _fail(runner, thread_id, run_id, child, error, time.perf_counter() - started)
