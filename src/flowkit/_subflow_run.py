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
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._batch_gates import answer_gates, open_gates
from ._events import Event, Failed, NodeFinished, NodeStarted, StateChanged, Waiting
from ._execution import (
    Cursor,
    Instruction,
    _fail,
    back_off,
    check_writes,
    move,
    status_of,
    step_record,
)
from ._jsonform import dump_update
from ._node import NodeError, check_update
from ._outside_steps import gate_input_step, patch_step, validate_gate_input
from ._records import AnyRecord, Status, SubRecord
from ._subflow import Subflow
from ._subflow_attempts import retries, run_child, start_child, start_state
from ._subflow_journal import child_error, child_flow_of
from .errors import InvalidStateError, NotWaitingError

if TYPE_CHECKING:
    from ._flow import Flow

__all__ = [
    "ChildRunner",
    "answer_child",
    "patch_child",
    "run_subflow",
    "waiting_gates",
    "waiting_path",
]


class ChildRunner:
    """What the core needs of a runner, for the child of ``Subflow`` node ``name``.

    Commits wrap the child's records into the parent's journal; ``cursor`` is the parent's
    cursor after the latest of them. Events of the child's nodes reach the parent's
    subscribers with the node named by path (``review/check``); the child's state events
    do not (a stream of the parent shows parent states).
    """

    def __init__(self, parent: Any, name: str, node: Subflow, cursor: Cursor, run_id: str) -> None:
        self.parent = parent
        #: Which attempt of the node the child run is: its commits are journaled as that one.
        self.attempts = 1 if cursor.sub is None else cursor.sub.attempts
        self.run_id = run_id  # events name the run even without a store (no records then)
        self.name = name
        self.node = node
        self.cursor = cursor
        self.flow = node.flow
        self.store = parent.store
        self.step_limit = parent.step_limit
        self.error_text = parent.error_text
        self.clock = parent.clock
        self.stamp = parent._threads.stamp  # its records are the thread's: the same clock
        self.memory = parent.memory
        self._cache_memory = parent._cache_memory
        self._deps_for = parent._deps_for  # the child's nodes see the parent's deps
        self._log = parent._log
        self._subscribers = parent._subscribers
        self._marks = None  # an attempt marker names a node of the flow the runner runs
        self._threads = self
        #: The parent's cursor to announce (waiting or failed inside the child), held until
        #: the child's own events for the step that got it there have gone out.
        self._untold: tuple[str, Cursor] | None = None
        #: Set while ``run_subflow`` runs the node: a failure inside the child is then told by
        #: it, after the node's own ``NodeFinished``, as a failing node's is.
        self.running = False

    # -- the Runner part -------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if isinstance(event, StateChanged | Waiting | Failed) or not hasattr(event, "node"):
            return
        self.parent._emit(replace(event, node=f"{self.name}/{event.node}"))  # type: ignore[call-arg]
        if isinstance(event, NodeFinished):
            self.flush()

    def _announce(self, *_: Any) -> None:
        """The child's state is not the thread's state: the parent announces its own (its
        wait or failure inside the child, once the child's step that got there is told)."""
        self.flush()

    def flush(self) -> None:
        """Say where the thread now waits or failed inside the child, if not said yet."""
        untold = self._untold
        if untold is None or (self.running and untold[1].status == "failed"):
            return
        self._untold = None
        self._tell(untold[0], self.run_id, untold[1])

    def _node_llm(self, thread_id: str, run_id: str, node: str, calls: list[dict[str, Any]]) -> Any:
        return self.parent._node_llm(thread_id, run_id, f"{self.name}/{node}", calls)

    def _step_prefix(self, thread_id: str) -> str:
        """Step keys of the child's nodes: under the parent's step of this node."""
        parent = self.parent._step_prefix(thread_id)
        return f"{parent}/{self.cursor.step_version}/{self.name}"

    # -- the Threads part --------------------------------------------------------------------

    def dump(self, update: Mapping[str, Any], *, thread_id: str, who: str) -> dict[str, Any]:
        if self.store is None:
            return {}
        return dump_update(self.flow.schema, update, thread_id=thread_id, who=who)

    def commit(self, thread_id: str, before: int, after: Cursor, record: AnyRecord | None) -> None:
        """Commit the child's ``after`` as a checkpoint of the parent (``before`` is the
        child's version; the parent's own version is what the parent's journal checks)."""
        del before
        if self.attempts != 1:
            after = after._replace(attempts=self.attempts)
        parent = self.cursor
        status = parent_status(self.parent.flow, self.name, after)
        error = child_error(self.name, after) if status == "failed" else None
        new = Cursor(
            parent.state,
            self.name,
            status,
            parent.version + 1,
            error,
            None,
            after,
            parent.step_version,
        )
        wrapped = None
        if record is not None and self.store is not None:
            wrapped = SubRecord.model_construct(
                version=new.version,
                ts=record.ts,
                run_id=record.run_id,
                next=self.name,
                status=status,
                node=self.name,
                attempts=self.attempts,
                record=record,
            )
        self.parent._threads.commit(thread_id, parent.version, new, wrapped)
        self.cursor = new
        if status != "pending" and not isinstance(self.parent, ChildRunner):
            self._untold = (thread_id, new)  # told after the step's own events

    def _tell(self, thread_id: str, run_id: str, top: Cursor) -> None:
        """The thread (the top flow) now waits or failed inside a child: say where."""
        if not self._subscribers:
            return
        if top.status == "waiting":
            path = waiting_path(self.parent.flow, top)
            self.parent._emit(Waiting(thread_id, run_id, path, top.version))
        elif top.error is not None:
            self.parent._emit(Failed(thread_id, run_id, self.name, top.error, top.version))


def parent_status(flow: Flow, name: str, child: Cursor) -> Status:
    """The parent's status while the child stands at ``child``."""
    if child.status == "waiting":
        return "waiting"
    if child.status == "failed" and (flow.error_field is None or flow.route_table(name) is None):
        retry = flow.nodes[name].retry
        if retry is None or not retries(retry, child_error(name, child), child.attempts):
            return "failed"
    return "pending"  # running, finished, or failed to be routed or retried: the node goes on


def run_subflow(
    runner: Any, thread_id: str, run_id: str, cursor: Cursor, name: str, node: Subflow
) -> Generator[Instruction, Any, Cursor]:
    """Start (or go on with) the child of ``name``, running it again while its retry policy
    says so, then apply its output and route on."""
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
            yield from run_child(holder, thread_id, run_id, child, node.timeout)
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
    after = Cursor(state, target, status_of(flow, target), cursor.version + 1, error)
    record = None
    if runner.store is not None:
        record = step_record(runner, thread_id, run_id, name, after, update, attempts, [], latency)
    runner._threads.commit(thread_id, cursor.version, after, record)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, name, latency, attempts, error))
        runner._announce(thread_id, run_id, name, after, update)
    return after


# -- resuming a gate inside a child ------------------------------------------------------------


def leaf(flow: Flow, cursor: Cursor) -> tuple[Flow, Cursor, str]:
    """The innermost child the cursor stands in, its flow, and the path of the subflow nodes
    leading to it (``outer/inner``)."""
    path = []
    while cursor.sub is not None:
        path.append(cursor.node)
        flow = child_flow_of(flow, cursor.node)
        cursor = cursor.sub
    return flow, cursor, "/".join(path)


def waiting_path(flow: Flow, cursor: Cursor) -> str:
    """Where a waiting thread stands: the innermost gate (or node) by path."""
    _, inner, prefix = leaf(flow, cursor)
    return f"{prefix}/{inner.node}"


def waiting_gates(flow: Flow, cursor: Cursor) -> tuple[str, ...]:
    """The open gates of the innermost child, by path (``review/approve``)."""
    child_flow, inner, prefix = leaf(flow, cursor)
    return tuple(f"{prefix}/{gate}" for gate in open_gates(child_flow, inner))


def answer_child(
    runner: Any, thread_id: str, run_id: str, cursor: Cursor, value: Any, gate: str | None
) -> Cursor:
    """Answer the open gate(s) of the innermost child with ``value``; the parent's cursor after.

    ``gate`` is a path from ``gates`` (``review/approve``); for several gate branches of a
    child's ``Parallel``, ``value`` may map their paths to inputs. Everything is validated
    before anything is saved.
    """
    flow, inner, prefix = leaf(runner.flow, cursor)
    waiting = tuple(f"{prefix}/{name}" for name in open_gates(flow, inner))
    if gate is not None and gate not in waiting:
        raise NotWaitingError(
            f"Thread `{thread_id}` waits at {', '.join(f'`{g}`' for g in waiting)} (inside "
            f"subflow `{cursor.node}`), not at `{gate}`; resume with gate= one of those.",
            thread_id=thread_id,
            status=cursor.status,
            node=cursor.node,
        )
    local = None if gate is None else gate[len(prefix) + 1 :]
    if inner.node in flow.nodes:  # gate branches of a Parallel inside the child
        names = {path[len(prefix) + 1 :] for path in waiting}
        if isinstance(value, Mapping) and value and set(value) <= set(waiting):
            value = {key[len(prefix) + 1 :]: each for key, each in value.items()}
        elif gate is None and not (isinstance(value, Mapping) and value and set(value) <= names):
            # Said here, by path: the child's own message would name the gates as the child
            # knows them, which resume on the parent does not accept.
            raise NotWaitingError(
                f"Thread `{thread_id}` waits at {len(waiting)} gates inside subflow "
                f"`{cursor.node}` ({', '.join(f'`{g}`' for g in waiting)}); pass gate='<path>' "
                "with its input, or a mapping {path: input} to answer several.",
                thread_id=thread_id,
                status=cursor.status,
                node=cursor.node,
            )

        def at_leaf(holder: Any, leaf_cursor: Cursor) -> Cursor:
            return answer_gates(holder, thread_id, run_id, leaf_cursor, value, local)

    else:
        model = validate_gate_input(flow, thread_id, inner.node, value)

        def at_leaf(holder: Any, leaf_cursor: Cursor) -> Cursor:
            return gate_input_step(holder, thread_id, run_id, leaf_cursor, model)

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
