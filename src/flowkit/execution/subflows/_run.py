"""The execution core's part for ``Subflow`` nodes: a child flow run inside the parent's thread.

The child runs through the same core (``run_steps``, ``gate_input_step``, ``replay_record``)
with a ``ChildRunner`` in place of the runner. Its commits do not go to a journal of their
own: each child record is wrapped in a ``sub`` record of the parent's journal, and the parent
cursor carries the child's cursor in ``sub``. So a child's gate is the parent waiting, a crash
mid-child resumes mid-child, and fork/update_state/history of the parent see the child too.
A nested subflow is the same thing one level down: its ``ChildRunner`` commits through the
``ChildRunner`` above it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any

from ...definition._node import check_update
from ...definition._parallel import BatchNode
from ...definition._subflow import Subflow
from ...errors import InvalidStateError
from ...records._events import NodeFinished, NodeStarted
from ...records._node_error import NodeError
from .._answers import answer, answers_for
from .._cursor import Cursor, Instruction
from .._invoke import drive_sync
from .._open import arrive
from .._outside_steps import patch_step
from .._port import RunSteps
from .._steps import back_off, check_writes, move, status_of, step_record
from .._steps import fail as _fail
from .._timers import asleep, fire_step, sleeping
from ..batch._gates import answer_children
from ._attempts import run_child, start_child, start_state
from ._child import ChildRunner, leaf, parent_status, retries, waiting_path, waiting_pauses
from ._journal import child_error, child_flow_of

if TYPE_CHECKING:
    from ...definition._flow import Flow

__all__ = [
    "ChildRunner",
    "answer_child",
    "fire_child",
    "patch_child",
    "run_subflow",
    "waiting_gates",
    "waiting_path",
]


def run_subflow(
    runner: Any,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: Subflow,
    run_steps: RunSteps,
) -> Generator[Instruction, Any, Cursor]:
    """Start (or go on with) the child of ``name``, running it again while its retry policy
    says so, then apply its output and route on. The child runs through ``run_steps``, the
    core's own loop."""
    started = time.perf_counter()
    holder = ChildRunner(runner, name, node, cursor, run_id)
    holder.running = True
    if runner._subscribers:
        runner._emit(NodeStarted(thread_id, run_id, name, holder.attempts))
    child = cursor.sub
    if child is not None and child.status == "failed":
        # The run stopped after this attempt failed. A failure the policy retries starts the
        # next attempt; a routed one is routed; a thread that stopped failed and is resumed
        # goes on inside the child where it failed (from its start after a failed final state).
        if retries(node.retry, child_error(name, child), holder.attempts):
            yield from _next_attempt(runner, holder, thread_id, run_id, name, child)
            child = None
        elif parent_status(runner.flow, name, child) == "failed":
            resumed = child.node in node.flow.nodes
            child = child._replace(status="pending", error=None) if resumed else None
    while child is None or child.status == "pending":
        if child is None:
            try:
                state = start_state(node, holder.cursor.state)
            except Exception as exc:  # the input function or the child's start state is wrong
                return _failed(runner, thread_id, run_id, holder, name, exc, started)
            child = start_child(holder, thread_id, run_id, state)
        if child.status == "pending":
            yield from run_child(holder, thread_id, run_id, child, node.timeout, run_steps)
        holder.flush()
        child = holder.cursor.sub
        assert child is not None, "the child's records are committed"
        # A failure the policy retries left the parent pending (so does a routed one).
        retried = child.status == "failed" and holder.cursor.status == "pending"
        if retried and retries(node.retry, child_error(name, child), holder.attempts):
            yield from _next_attempt(runner, holder, thread_id, run_id, name, child)
            child = None
    cursor = holder.cursor
    latency = time.perf_counter() - started
    attempts = holder.attempts
    if cursor.status == "failed":  # with nowhere to route: told as `_fail` tells a node's
        if runner._subscribers:
            runner._emit(NodeFinished(thread_id, run_id, name, latency, attempts, cursor.error))
        holder.running = False
        holder.flush()
        return cursor
    if cursor.status != "pending":
        return cursor  # the child waits at a gate
    if child.status == "failed":
        error = child_error(name, child)
        return _step(runner, thread_id, run_id, cursor, name, node, {}, error, attempts, latency)
    try:
        value = node.parent_update(cursor.state, child.state)
    except Exception as exc:
        return _failed(runner, thread_id, run_id, holder, name, exc, started)
    raw = check_update(value, name)
    check_writes(name, node.writes, raw)
    return _step(runner, thread_id, run_id, cursor, name, node, raw, None, attempts, latency)


def _next_attempt(
    runner: Any, holder: ChildRunner, thread_id: str, run_id: str, name: str, failed: Cursor
) -> Generator[Instruction, Any, None]:
    """Back off after the failed attempt; the child's next records are the next attempt's."""
    assert holder.node.retry is not None
    error = child_error(name, failed)
    yield from back_off(runner, thread_id, name, holder.node.retry, holder.attempts, error.type)
    holder.attempts += 1
    if runner._subscribers:
        runner._emit(NodeStarted(thread_id, run_id, name, holder.attempts))


def _failed(
    runner: Any,
    thread_id: str,
    run_id: str,
    holder: ChildRunner,
    name: str,
    exc: Exception,
    started: float,
) -> Cursor:
    """The input or output function raised: the node's error, not retried (the function
    would raise again); resuming starts the child over."""
    cursor = holder.cursor
    error = NodeError.from_exception(
        exc, node=name, attempts=holder.attempts, text=runner.error_text
    )
    flow = runner.flow
    if flow.error_field is None or flow.route_table(name) is None:
        return _fail(runner, thread_id, run_id, cursor, error, time.perf_counter() - started)
    return _step(runner, thread_id, run_id, cursor, name, None, {}, error, holder.attempts)


def _step(
    runner: Any,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: Subflow | None,
    raw: Mapping[str, Any],
    error: NodeError | None,
    attempts: int,
    latency: float = 0.0,
) -> Cursor:
    """The parent's own step for the finished child: apply ``raw`` (or the error), route."""
    flow = runner.flow
    if error is not None:
        assert flow.error_field is not None
        raw = {flow.error_field: error}
    state, update = flow.schema.apply(cursor.state, raw, node=name)
    target = flow.next_state(name, state)
    runner._log.debug("route_decided", thread_id=thread_id, node=name, target=target)
    state = move(flow, thread_id, name, target, state, update, cursor.version)
    pauses, due = arrive(runner, thread_id, target, state)
    after = Cursor(
        state, target, status_of(flow, target), cursor.version + 1, error, pauses=pauses, due=due
    )
    record = None
    if runner.store is not None:
        record = step_record(runner, thread_id, run_id, name, after, update, attempts, [], latency)
    runner._threads.commit(thread_id, cursor.version, after, record)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, name, latency, attempts, error))
        runner._announce(thread_id, run_id, name, after, update)
    return after


# -- resuming a gate inside a child ------------------------------------------------------------


def waiting_gates(flow: Flow, cursor: Cursor) -> tuple[str, ...]:
    """The open pauses of the innermost child, by path (``review/approve``)."""
    return tuple(waiting_pauses(flow, cursor))


def answer_child(
    runner: Any,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    value: Any,
    gate: str | None,
    actor: str | None = None,
) -> Cursor:
    """Answer the open pause(s) of the innermost child with ``value`` (the child's records
    name ``actor``); the parent's cursor after.

    ``gate`` is a path from ``gates`` (``review/approve``); with several open, ``value`` may
    map their paths to inputs. Everything is validated before anything is saved.
    """
    child_flow, inner, prefix = leaf(runner.flow, cursor)
    if sleeping(inner):  # a node of the child asleep: its timer moves it on, not an answer
        raise asleep(thread_id, inner._replace(node=f"{prefix}/{inner.node}"))
    waiting = tuple(waiting_pauses(runner.flow, cursor))
    several = isinstance(child_flow.nodes.get(inner.node), BatchNode)
    by_path = answers_for(
        thread_id, cursor.node, waiting, value, gate, several=several, inside=cursor.node
    )
    local = {path[len(prefix) + 1 :]: each for path, each in by_path.items()}

    def at_leaf(holder: Any, leaf_cursor: Cursor) -> Cursor:
        if len(local) == 1:
            ((pause, given),) = local.items()
            answered, children = answer(holder, thread_id, run_id, leaf_cursor, given, pause, actor)
        else:
            answered, children = answer(holder, thread_id, run_id, leaf_cursor, local, None, actor)
        if not children:
            return answered
        # Children of Subflow calls in a batch inside this child: answered here, in this
        # thread (the parent's run goes on from the child's cursor once they are).
        return drive_sync(answer_children(holder, thread_id, run_id, answered, children, actor))

    return _answer(runner, run_id, cursor, at_leaf)


def _answer(
    runner: Any, run_id: str, cursor: Cursor, at_leaf: Callable[[Any, Cursor], Cursor]
) -> Cursor:
    if cursor.sub is None:
        return at_leaf(runner, cursor)
    holder = ChildRunner(runner, cursor.node, runner.flow.nodes[cursor.node], cursor, run_id)
    _answer(holder, run_id, cursor.sub, at_leaf)
    holder.flush()
    return holder.cursor


def fire_child(runner: Any, thread_id: str, run_id: str, cursor: Cursor) -> Cursor:
    """Fire the due timer of the innermost child (a deadline of its gate, a wake-up of its
    node), through the children above it as an answer goes; the parent's cursor after. The
    caller holds the thread's lock and has just read it."""

    def at_leaf(holder: Any, leaf_cursor: Cursor) -> Cursor:
        return fire_step(holder, thread_id, run_id, leaf_cursor)

    return _answer(runner, run_id, cursor, at_leaf)


def patch_child(
    runner: Any,
    thread_id: str,
    cursor: Cursor,
    path: str,
    values: Mapping[str, Any],
    goto: str | None,
    reason: str,
    actor: str,
) -> Cursor:
    """``update_state`` of the running child at ``path`` (``review``, ``outer/inner``): patch
    its state with ``values``, moving it to ``goto`` (a state of the child's flow); the
    parent's cursor after.

    The patch is the child's own record, wrapped like the child's steps, so history shows it
    by path and replay rebuilds it; ``InvalidStateError`` (nothing written) when no child runs
    at ``path`` or ``goto`` is not a state of its flow.
    """
    names = path.split("/")
    flow, at = runner.flow, cursor
    running: list[str] = []
    for name in names:
        if at.sub is None or at.node != name:
            where = "/".join(running) or "the thread"
            inner = f"`{'/'.join([*running, at.node])}`" if at.sub is not None else "none"
            raise InvalidStateError(
                f"Thread `{thread_id}` has no running subflow at `{path}`: in {where} the "
                f"running child is {inner}. Patch a child while its subflow node runs or "
                "waits, by the path `get_state().gates` shows (without the gate).",
                thread_id=thread_id,
            )
        running.append(name)
        flow, at = child_flow_of(flow, name), at.sub
    if goto is not None and goto not in flow.states:
        raise InvalidStateError(
            f"Cannot move the child `{path}` of thread `{thread_id}` to `{goto}`: not a state "
            f"of flow `{flow.name}` ({', '.join(flow.states)}).",
            thread_id=thread_id,
        )

    def patch(holder: Any, leaf_cursor: Cursor) -> Cursor:
        return patch_step(holder, thread_id, leaf_cursor, values, goto, reason, actor)

    return _down(runner, "", cursor, len(names), patch)


def _down(
    runner: Any, run_id: str, cursor: Cursor, depth: int, at_leaf: Callable[[Any, Cursor], Cursor]
) -> Cursor:
    if depth == 0:
        return at_leaf(runner, cursor)
    holder = ChildRunner(runner, cursor.node, runner.flow.nodes[cursor.node], cursor, run_id)
    assert cursor.sub is not None
    _down(holder, run_id, cursor.sub, depth - 1, at_leaf)
    holder.flush()
    return holder.cursor


# -- replay, snapshots, history -----------------------------------------------------------------
