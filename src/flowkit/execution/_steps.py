"""The rules every step follows, wherever it runs (the core's loop, a batch item, a child
flow, an answer or a patch): move along a declared edge, mirror ``dialog_state``, check the
declared writes, attempt a node under its retry policy, fail, record and announce.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..definition._ask import Ask
from ..definition._gate import Gate
from ..definition._invariants import check_invariants
from ..definition._node import Context, Node, RetryPolicy
from ..definition._route_table import END
from ..errors import (
    AttemptsExhaustedError,
    InvalidUpdateError,
    NodeContractError,
    RecoveryLimitError,
    StoreError,
    UndeclaredWriteError,
)
from ..records._events import (
    Completed,
    Failed,
    NodeFinished,
    NodeStarted,
    StateChanged,
    Waiting,
    classify_changes,
)
from ..records._node_error import NodeError
from ..records._records import (
    FORMAT_VERSION,
    Status,
    StepRecord,
    prebuilt,
)
from ._cursor import AttemptSteps, CallNode, Cursor, Outcome, Sleep
from ._open import open_pauses
from ._port import RunPort

if TYPE_CHECKING:
    from ..definition._flow import Flow


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
    runner: RunPort,
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
        "pauses": after.pauses,  # a cursor's pauses are never changed in place: shared
        "due": after.due,
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


def attempts(
    runner: RunPort,
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
    attempt, crashes = 0, 0
    noted = runner._marks is not None or (node.retry is not None and index is None)
    if noted and index is None and runner._attempt_store is not None:
        # A current marker of another run: that run's process died inside this node.
        attempt, crashes = _carried(runner, thread_id, run_id, name, cursor.version)
        limit = runner._max_recoveries
        if limit is not None and crashes > limit:
            error = RecoveryLimitError(thread_id, name, crashes, limit)
            return Outcome(error=error), attempt, []
        if node.retry is not None and attempt >= node.retry.max_attempts:
            return Outcome(error=_exhausted(thread_id, name, attempt)), attempt, []
    while True:
        attempt += 1
        if noted and runner._attempt_store is not None:  # opt-in, or a node that retries
            mark(runner, thread_id, run_id, name, cursor.version, attempt, crashes)
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
        if ctx is not None and ctx._signalled is not None and not isinstance(outcome.error, Ask):
            raise _signal_caught(name, ctx._signalled)
        if outcome.error is None or isinstance(outcome.error, Ask):  # asking is no failure
            return outcome, attempt, calls
        if node.retry is None or not node.retry.should_retry(outcome.error, attempt):
            return outcome, attempt, calls
        yield from back_off(runner, thread_id, name, node.retry, attempt, type(outcome.error))


def _signal_caught(name: str, call: str) -> NodeContractError:
    """A node that called ``ctx.ask``/``ctx.sleep_until`` and then went on: the signal they
    raise (an ``Exception``, as LangGraph's ``interrupt`` is) was caught in the node."""
    return NodeContractError(
        f"`{name}` called {call}, then went on: something in the node caught the signal it "
        "raises (an `except Exception` around the call?), so the node ran on as if no one was "
        f"asked. Let it through: catch narrower exceptions, or re-raise flowkit.Ask (which "
        f"{call} raises) first. Nothing was saved; fix the node and resume.",
        node=name,
    )


def check_ask(name: str, spec: Gate | None, ask: Ask) -> Gate:
    """The answer node ``name`` declares; ``InvalidUpdateError`` (nothing saved, as for a
    write it did not declare) if it declares none, or another model than the one it named."""
    if spec is None:
        raise InvalidUpdateError(
            f"`{name}` asked for input (ctx.ask) but declares no answer; declare what the "
            "answer looks like: @node(asks=AnswerModel) (a Map's function too).",
            node=name,
        )
    if ask.input is not None and ask.input is not spec.input:
        raise InvalidUpdateError(
            f"`{name}` asked for a {getattr(ask.input, '__name__', ask.input)!s} answer but "
            f"declares {spec.input.__name__} (@node(asks=...)); ask for the declared one.",
            node=name,
        )
    return spec


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


def _carried(
    runner: RunPort, thread_id: str, run_id: str, node: str, version: int
) -> tuple[int, int]:
    """The attempts of ``node`` at ``version`` made by runs whose process died in it, and how
    many such runs there were (``0, 0``: none, or no marker to tell)."""
    assert runner._attempt_store is not None
    try:
        last = runner._attempt_store.last_attempt(thread_id)
    except StoreError:
        return 0, 0
    if last is None or last.version != version or last.node != node or last.run_id == run_id:
        return 0, 0
    return last.attempt, last.crashes + 1


def _exhausted(thread_id: str, node: str, attempts: int) -> Exception:
    """What a node that used all its attempts before its process died fails with."""
    return AttemptsExhaustedError(
        f"Node `{node}` of thread `{thread_id}` used its {attempts} attempts (the last ended "
        "with its process); it was not run again. Resume the thread to start a new round."
    )


def mark(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    node: str,
    version: int,
    attempt: int,
    crashes: int = 0,
) -> None:
    """Note that ``node`` starts from ``version`` (it only has to outlive the process); a
    failed note is only logged."""
    from ..records._marker import AttemptMarker  # loaded once, by runners that mark attempts

    store = runner._attempt_store
    assert store is not None
    marker = AttemptMarker.model_construct(
        version=version,
        node=node,
        attempt=attempt,
        run_id=run_id,
        ts=runner._threads.stamp(),
        crashes=crashes,
    )
    try:
        store.mark_attempt(thread_id, marker)
    except StoreError as exc:  # a marker only sharpens crash diagnosis; never fail a run
        runner._log.warning(
            "attempt_marker_failed", thread_id=thread_id, node=node, error_type=type(exc).__name__
        )


def fail(
    runner: RunPort,
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
    runner: RunPort,
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
        for pause, payload in open_pauses(runner.flow, after).items():
            emit(Waiting(thread_id, run_id, pause, after.version, payload))
    elif after.status == "done":
        emit(Completed(thread_id, run_id, after.node, after.version))
    elif after.status == "failed" and after.error is not None:
        emit(Failed(thread_id, run_id, after.node, after.error, after.version))
