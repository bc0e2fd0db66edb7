"""The execution core, shared by the sync and async APIs.

A run is a generator that yields instructions (``CallNode``: run this node; ``Sleep``: back
off before a retry) and receives their outcomes. The sync and async drivers differ only in
how they carry out those two instructions, so every rule (routing, reducers, declared writes,
retries, error state, commits, events) lives here once.
"""

from __future__ import annotations

import time
from typing import Any

from ..definition._ask import Ask
from ..definition._invariants import check_invariants
from ..definition._node import Node, check_update
from ..definition._parallel import Map, Parallel
from ..definition._sleep import SleepUntil
from ..definition._subflow import Subflow
from ..errors import RunCancelledError, StepLimitError
from ..records._events import (
    NodeFinished,
)
from ..records._node_error import NodeError
from ._asks import ask_step
from ._cache import run_cached
from ._cursor import CallNode, Cursor, Steps
from ._open import arrive
from ._port import RunPort
from ._steps import attempts, check_writes, fail, log_node_finished, mirror, step_record
from ._timers import sleep_step
from .batch._run import run_batch
from .subflows._run import run_subflow

__all__ = ["run_steps"]


# One function on purpose: it is the hot loop, and every helper call is paid on every step.
def run_steps(  # noqa: PLR0915
    runner: RunPort, thread_id: str, run_id: str, cursor: Cursor
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
    arrivals = flow.arrivals
    debug = runner._log.debug_enabled()
    cancels = runner._threads.cancels
    steps = 0
    while cursor.status == "pending":
        name = cursor.node
        if cancels and thread_id in cancels:  # Runner.cancel: stop before the next node
            raise RunCancelledError(thread_id, cursor.version, name)
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
            outcome, attempt, calls = yield from attempts(runner, thread_id, run_id, name, cursor)
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
        elif isinstance(outcome.error, SleepUntil):  # the node sleeps until its timer fires
            return sleep_step(
                runner, thread_id, run_id, cursor, name, node, outcome.error, attempt, calls,
                latency,
            )  # fmt: skip
        elif isinstance(outcome.error, Ask):  # the node asked: its step ends in a pause
            return ask_step(
                runner, thread_id, run_id, cursor, name, node, outcome.error, attempt, calls,
                latency,
            )  # fmt: skip
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
                cursor = fail(runner, thread_id, run_id, cursor, error, latency)
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
        if target in arrivals:  # a gate with a payload or a deadline
            pauses, due = arrive(runner, thread_id, target, state)
            after = Cursor(
                state, target, "waiting", cursor.version + 1, error, pauses=pauses, due=due
            )
        else:
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


def _run_composite(
    runner: RunPort, thread_id: str, run_id: str, cursor: Cursor, name: str, node: Node
) -> Steps:
    """A Map or Parallel (fan-out, join) or a Subflow (a child flow) at ``name``."""
    if isinstance(node, Map | Parallel):
        return (yield from run_batch(runner, thread_id, run_id, cursor, name, node))
    assert isinstance(node, Subflow)
    return (yield from run_subflow(runner, thread_id, run_id, cursor, name, node, run_steps))
