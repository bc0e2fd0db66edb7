"""The execution core, shared by the sync and async APIs.

A run is a generator that yields instructions (``CallNode``: run this node; ``Sleep``: back
off before a retry) and receives their outcomes. The sync and async drivers differ only in
how they carry out those two instructions, so every rule (routing, reducers, declared writes,
retries, error state, commits, events) lives here once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from ._cache import run_cached
from ._events import (
    Completed,
    Failed,
    NodeFinished,
    NodeStarted,
    StateChanged,
    Waiting,
    classify_changes,
)
from ._invariants import check_invariants
from ._node import Context, Node, NodeError, RetryPolicy, check_update
from ._parallel import Map, Parallel
from ._records import (
    FORMAT_VERSION,
    StartRecord,
    Status,
    StepRecord,
    prebuilt,
)
from ._route_table import END
from ._subflow import Subflow
from .errors import (
    StepLimitError,
    StoreError,
    UndeclaredWriteError,
)

if TYPE_CHECKING:
    from ._flow import Flow
    from ._runner import Runner

__all__ = [
    "AttemptSteps",
    "Batch",
    "CallNode",
    "Cursor",
    "Finished",
    "ItemDone",
    "Job",
    "Outcome",
    "Sleep",
    "check_invariants",
    "replay_record",
    "run_steps",
]


@dataclass(frozen=True, slots=True)
class ItemDone:
    """A finished call of the ``Map``/``Parallel`` node a cursor stands at, not yet merged.

    ``update`` is what merging applies (the normalised update in a live run, its JSON form
    when read back); ``stored`` is the JSON form a snapshot keeps.
    """

    update: Mapping[str, Any]
    stored: Mapping[str, Any]
    error: NodeError | None
    of: int
    label: str = ""


# The values below are NamedTuples rather than frozen dataclasses: they are made several
# times per step, and a frozen dataclass costs three times as much to build (every field goes
# through object.__setattr__), while a NamedTuple is just as immutable.


class Cursor(NamedTuple):
    """A thread's committed position: its state, the machine state, status and version.

    ``items`` holds the finished calls of a ``Map``/``Parallel`` node still running at
    ``node`` (by index); ``None`` everywhere else. ``sub`` is the child's own cursor while
    the ``Subflow`` node at ``node`` runs (or waits, or failed inside). ``entered`` is the
    version at which the thread arrived at ``node`` when records that keep it there (a failed
    attempt, finished calls, child steps) came since; ``None`` when that is ``version``.
    ``attempts``, on a child's cursor (a ``sub``), is which attempt of its ``Subflow`` node
    the child run is (a retry starts the next one afresh).
    """

    state: BaseModel
    node: str
    status: Status
    version: int
    error: NodeError | None = None
    items: Mapping[int, ItemDone] | None = None
    sub: Cursor | None = None
    entered: int | None = None
    attempts: int = 1

    @property
    def step_version(self) -> int:
        """The version the step at ``node`` started from: part of its idempotency key, the
        same on every attempt and re-run of the step (see ``Context.step_key``)."""
        return self.version if self.entered is None else self.entered


class CallNode(NamedTuple):
    node: Node
    name: str
    state: BaseModel
    #: The node's context: made only for nodes that take one or have a timeout (whose
    #: ``cancel_event`` the driver sets); a plain ``fn(state)`` node never sees it.
    ctx: Context | None
    thread_id: str
    #: Who holds the thread (its store, or the runner that keeps no store): attempts of one
    #: node in one thread of one owner never overlap.
    owner: object = None


class Sleep(NamedTuple):
    seconds: float


class Outcome(NamedTuple):
    value: Any = None
    error: Exception | None = None
    #: ``value`` is a node's update reused from its cache (JSON form): the node did not run.
    cached: bool = False


#: One call's own steps: ``CallNode``/``Sleep`` instructions, returning the last outcome, the
#: attempt number and the LLM calls of that attempt.
AttemptSteps = Generator[
    "CallNode | Sleep", Outcome | None, tuple[Outcome, int, list[dict[str, Any]]]
]


@dataclass(frozen=True, slots=True)
class Job:
    """One call of a batch: its index and a maker of its own steps (run by the driver)."""

    index: int
    make: Callable[[], AttemptSteps]


@dataclass(frozen=True, slots=True)
class Finished:
    """What the driver sends back for a batch: one job that finished, with its result."""

    index: int
    outcome: Outcome
    attempts: int
    llm_calls: list[dict[str, Any]]
    latency_s: float


@dataclass(eq=False, slots=True)
class Batch:
    """Run these jobs, at most ``limit`` at once; send back each ``Finished`` as it comes.

    The core yields the same ``Batch`` again for every next finished job, and the driver keeps
    its running state in ``driver`` between sends; ``close`` stops whatever still runs.
    """

    node: str
    jobs: list[Job]
    limit: int
    driver: Any = None

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()


Instruction = CallNode | Sleep | Batch
Steps = Generator[Instruction, Any, Cursor]


def status_of(flow: Flow, target: str) -> Status:
    kind = flow.kind_of(target)
    if kind == "node":
        return "pending"
    if kind == "gate":
        return "waiting"
    return flow.final_status(target)


def mirror(flow: Flow, state: BaseModel, update: dict[str, Any], target: str) -> BaseModel:
    """Write the machine state into ``dialog_state`` (when the model has one)."""
    if "dialog_state" not in flow.schema or target == END:
        return state
    update["dialog_state"] = target
    return state.model_copy(update={"dialog_state": target})


def move(
    flow: Flow,
    thread_id: str,
    source: str,
    target: str,
    state: BaseModel,
    update: dict[str, Any],
    version: int,
) -> BaseModel:
    """Take the edge ``source -> target`` (the machine refuses an undeclared one), mirror the
    target into ``dialog_state`` and check the invariants on the new state; the state."""
    flow.machine.advance(source, target)
    state = mirror(flow, state, update, target)
    if flow.invariants:
        check_invariants(flow, thread_id, source, state, version)
    return state


def log_node_finished(
    runner: Runner[Any],
    thread_id: str,
    run_id: str,
    node: str,
    target: str,
    latency: float,
    attempts: int,
    error: NodeError | None,
) -> None:
    """One line per finished node (its route, latency and outcome), never the state it read:
    enough to follow and time a thread, nothing private. Built only when a debug line can go
    anywhere: its fields cost more than the rest of a plain step."""
    if runner._log.debug_enabled():
        runner._log.debug(
            "node_finished",
            thread_id=thread_id,
            run_id=run_id,
            node=node,
            target=target,
            latency_ms=round(latency * 1000, 3),
            attempts=attempts,
            success=error is None,
            error_type=None if error is None else error.type,
        )


def check_writes(name: str, writes: frozenset[str] | None, update: Mapping[str, Any]) -> None:
    if writes is None:
        return
    for key in update:
        if key not in writes:
            declared = ", ".join(sorted(writes)) or "nothing"
            raise UndeclaredWriteError(
                f"`{name}` wrote `{key}` but declares writes to {declared}; add `{key}` to its "
                "writes or stop writing it. Nothing was saved; fix the node and resume.",
                node=name,
                key=key,
            )


def replay_record(flow: Flow, cursor: Cursor | None, record: Any) -> Cursor:
    """The cursor after one journal record (the same rules the live run used)."""
    if record.kind in ("item", "pause", "join"):
        from ._batch_journal import replay_batch_record

        assert cursor is not None, "a journal starts with a start record"
        return replay_batch_record(flow, cursor, record)
    if record.kind == "sub" or (record.kind == "start" and record.sub is not None):
        from ._subflow_journal import replay_sub_record

        return replay_sub_record(flow, cursor, record)
    error = NodeError.model_validate(record.error) if getattr(record, "error", None) else None
    if isinstance(record, StartRecord):
        state = flow.schema.load_state(record.state)
        return Cursor(state, record.next, record.status, record.version, error)
    assert cursor is not None, "a journal starts with a start record"
    who = getattr(record, "node", None) or getattr(record, "gate", None) or "update_state"
    state = flow.schema.replay(cursor.state, record.update, node=who)
    sub = cursor.sub if record.kind == "patch" else None
    if sub is not None and (record.next, record.status) != (cursor.node, cursor.status):
        sub = None  # a patch that moved the thread leaves the child behind
    entered = None
    if record.kind == "step" and record.status == "failed" and record.next == record.node:
        entered = cursor.step_version  # a failed attempt (`_fail`): still the same step
    return Cursor(state, record.next, record.status, record.version, error, None, sub, entered)


# One function on purpose: it is the hot loop, and every helper call is paid on every step.
def run_steps(  # noqa: PLR0915
    runner: Runner[Any], thread_id: str, run_id: str, cursor: Cursor
) -> Steps:
    """Run nodes from ``cursor`` until the thread waits, finishes or fails."""
    flow = runner.flow
    schema = flow.schema
    # Fixed for the whole run: looked up once here, not on every step.
    mirrors = "dialog_state" in schema
    store = runner.store
    owner = store if store is not None else runner
    composite = flow.composite
    statuses = flow.statuses
    debug = runner._log.debug_enabled()
    steps = 0
    while cursor.status == "pending":
        name = cursor.node
        node = flow.nodes[name]
        steps += 1
        if steps > runner.step_limit:
            raise StepLimitError(thread_id, runner.step_limit, name)
        if name in composite:
            cursor = yield from _run_composite(runner, thread_id, run_id, cursor, name, node)
            continue
        started = time.perf_counter()
        if node.single_call and runner._marks is None and not runner._subscribers:
            # One attempt with nothing to note, announce or pass: the attempt loop's
            # generator would cost more than the node itself.
            outcome = yield CallNode(node, name, cursor.state, None, thread_id, owner)
            assert outcome is not None
            attempt = 1
            calls: list[dict[str, Any]] = []
        elif node.cache is None:
            outcome, attempt, calls = yield from _attempts(runner, thread_id, run_id, name, cursor)
        else:
            outcome, attempt, calls = yield from run_cached(
                runner, thread_id, run_id, name, node, cursor
            )
        latency = time.perf_counter() - started
        error: NodeError | None = None
        if outcome.error is None:
            raw = check_update(outcome.value, name)
            if node.writes is not None:
                check_writes(name, node.writes, raw)
            # A cached update is stored in its JSON form, like the journal's.
            state, update = schema.apply(cursor.state, raw, node=name, strict_json=outcome.cached)
        else:
            error = NodeError.from_exception(
                outcome.error, node=name, attempts=attempt, text=runner.error_text
            )
            runner._log.warning(
                "node_failed",
                thread_id=thread_id,
                run_id=run_id,
                node=name,
                error_type=error.type,
                attempts=attempt,
            )
            if flow.error_field is None or flow.route_table(name) is None:
                cursor = _fail(runner, thread_id, run_id, cursor, error, latency)
                return cursor
            state, update = schema.apply(cursor.state, {flow.error_field: error}, node=name)
        target = flow.next_state(name, state)
        if debug:
            log_node_finished(runner, thread_id, run_id, name, target, latency, attempt, error)
        # Not `move`: the hot loop has looked up whether the state mirrors once per run.
        flow.machine.advance(name, target)
        if mirrors:
            state = mirror(flow, state, update, target)
        if flow.invariants:
            check_invariants(flow, thread_id, name, state, cursor.version)
        after = Cursor(state, target, statuses[target], cursor.version + 1, error)
        # Without a store nothing reads records, so none is built (a third of a step's cost).
        record = (
            None
            if store is None
            else step_record(
                runner, thread_id, run_id, name, after, update, attempt, calls, latency,
                cached=outcome.cached,
            )
        )  # fmt: skip
        runner._threads.commit(thread_id, cursor.version, after, record)
        if runner._subscribers:
            runner._emit(
                NodeFinished(thread_id, run_id, name, latency, attempt, error, outcome.cached)
            )
            runner._announce(thread_id, run_id, name, after, update)
        cursor = after
    return cursor


def step_record(
    runner: Any,
    thread_id: str,
    run_id: str,
    name: str,
    after: Cursor,
    update: Mapping[str, Any],
    attempt: int,
    calls: list[dict[str, Any]],
    latency: float,
    *,
    cached: bool = False,
) -> StepRecord:
    """The journal record of node ``name``'s step to ``after`` (a node's, a failed node's, a
    subflow node's own step); ``runner`` has a store (or is a child runner of one).

    Prebuilt, not validated: every value below has its field's type by construction (the
    update is its checked JSON form), so validating again would only repeat the types."""
    error = after.error
    values = {
        "v": FORMAT_VERSION,
        "version": after.version,
        "ts": runner._threads.stamp(),
        "run_id": run_id,
        "next": after.node,
        "status": after.status,
        "kind": "step",
        "node": name,
        "update": runner._threads.dump(update, thread_id=thread_id, who=name),
        "attempts": attempt,
        # Microseconds, as the float nearest the decimal (like round(x, 6), at a third of it).
        "latency_s": round(latency * 1_000_000) / 1_000_000,
        "error": error.model_dump() if error else None,
        "llm_calls": list(calls),
        "cached": cached,
    }
    return prebuilt(StepRecord, values)


def _run_composite(
    runner: Runner[Any], thread_id: str, run_id: str, cursor: Cursor, name: str, node: Node
) -> Steps:
    """A Map or Parallel (fan-out, join) or a Subflow (a child flow) at ``name``."""
    if isinstance(node, Map | Parallel):
        from ._batch import run_batch  # loaded by the flows that have one

        return (yield from run_batch(runner, thread_id, run_id, cursor, name, node))
    assert isinstance(node, Subflow)
    from ._subflow_run import run_subflow  # loaded by the flows that have one

    return (yield from run_subflow(runner, thread_id, run_id, cursor, name, node))


def _attempts(
    runner: Runner[Any],
    thread_id: str,
    run_id: str,
    name: str,
    cursor: Cursor,
    node: Node | None = None,
    index: int | None = None,
) -> AttemptSteps:
    """Call node ``name`` (or ``node``, call ``index`` of a batch) until it succeeds or its
    retry policy gives up.

    Returns the last outcome, the attempt number and the LLM calls of that attempt.
    """
    if node is None:
        node = runner.flow.nodes[name]
    # A node that takes no context and has no timeout never sees one: don't build it.
    needs_ctx = node.takes_context or node.timeout is not None
    owner = runner.store if runner.store is not None else runner
    attempt = 0
    while True:
        attempt += 1
        if runner._marks is not None:  # opt-in: the default path pays one attribute test
            _mark(runner, thread_id, run_id, name, cursor.version, attempt)
        if runner._subscribers:
            runner._emit(NodeStarted(thread_id, run_id, name, attempt))
        calls: list[dict[str, Any]] = []
        ctx = None
        if needs_ctx:
            ctx = Context(
                thread_id=thread_id,
                run_id=run_id,
                node=name,
                attempt=attempt,
                llm=runner._node_llm(thread_id, run_id, name, calls),
                clock=runner.clock,
                cancel_event=threading.Event() if node.timeout is not None else None,
                emit=runner._emit if runner._subscribers else None,
                step=(cursor, name if index is None else f"{cursor.node}[{index}]"),
                runner=runner,
            )
        outcome = yield CallNode(node, name, cursor.state, ctx, thread_id, owner)
        assert outcome is not None
        if outcome.error is None:
            return outcome, attempt, calls
        if node.retry is None or not node.retry.should_retry(outcome.error, attempt):
            return outcome, attempt, calls
        yield from back_off(runner, thread_id, name, node.retry, attempt, type(outcome.error))


def back_off(
    runner: Any, thread_id: str, name: str, policy: RetryPolicy, attempt: int, error: type | str
) -> Generator[Sleep, Any, None]:
    """Wait before attempt ``attempt + 1`` of ``name``, as its retry policy says; logged with
    the type of the error that made it retry (a class, or a ``NodeError.type``)."""
    delay = policy.delay(attempt)
    runner._log.warning(
        "node_retry",
        thread_id=thread_id,
        node=name,
        attempt=attempt,
        delay_s=round(delay, 3),
        error_type=error if isinstance(error, str) else error.__name__,
    )
    yield Sleep(delay)


def _mark(
    runner: Runner[Any], thread_id: str, run_id: str, node: str, version: int, attempt: int
) -> None:
    """Note durably that ``node`` starts from ``version``; a failed note is only logged."""
    from ._marker import AttemptMarker  # loaded once, by runners that track attempts

    assert runner._marks is not None
    marker = AttemptMarker.model_construct(
        version=version, node=node, attempt=attempt, run_id=run_id, ts=runner._threads.stamp()
    )
    try:
        runner._marks.mark_attempt(thread_id, marker)
    except StoreError as exc:  # a marker only sharpens crash diagnosis; never fail a run
        runner._log.warning(
            "attempt_marker_failed", thread_id=thread_id, node=node, error_type=type(exc).__name__
        )


def _fail(
    runner: Runner[Any],
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    error: NodeError,
    latency: float,
) -> Cursor:
    """A node failed with nowhere to route: the thread stops there, resumable once fixed."""
    after = Cursor(
        cursor.state, cursor.node, "failed", cursor.version + 1, error, entered=cursor.step_version
    )
    record = (
        None
        if runner.store is None
        else step_record(
            runner, thread_id, run_id, cursor.node, after, {}, error.attempts, [], latency
        )
    )
    runner._threads.commit(thread_id, cursor.version, after, record)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, cursor.node, latency, error.attempts, error))
        runner._emit(Failed(thread_id, run_id, cursor.node, error, after.version))
    return after


def announce(
    runner: Runner[Any],
    thread_id: str,
    run_id: str | None,
    node: str,
    after: Cursor,
    update: Mapping[str, Any],
) -> None:
    """Emit the events that follow a commit: state changed, then waiting/completed/failed."""
    emit = runner._emit
    changed = tuple(update)
    classes = classify_changes(changed, runner.flow.change_classes)
    version = after.version
    emit(StateChanged(thread_id, run_id, node, version, changed, classes, after.state, update))
    if after.status == "waiting":
        emit(Waiting(thread_id, run_id, after.node, after.version))
    elif after.status == "done":
        emit(Completed(thread_id, run_id, after.node, after.version))
    elif after.status == "failed" and after.error is not None:
        emit(Failed(thread_id, run_id, after.node, after.error, after.version))
