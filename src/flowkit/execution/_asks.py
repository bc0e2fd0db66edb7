"""A node that asked (``ctx.ask``): its step ends in a pause, saved with its payload.

The update the node gave with its question is applied and journaled with the pause (a ``step``
record whose ``next`` is the node itself, status ``waiting``), so nothing the node did runs
again: the answer (see ``_answers``) becomes the node's update and its route takes over.
"""

from __future__ import annotations

from typing import Any

from ..definition._ask import Ask
from ..definition._invariants import check_invariants
from ..definition._jsonform import dump_payload
from ..definition._node import Node, check_update
from ..records._events import NodeFinished
from ._cursor import Cursor
from ._port import RunPort
from ._steps import check_ask, check_writes, step_record

__all__ = ["ask_step", "wait_at_node"]


def ask_step(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: Node,
    ask: Ask,
    attempt: int,
    calls: list[dict[str, Any]],
    latency: float,
) -> Cursor:
    """Commit node ``name``'s question: the thread waits at the node for its answer."""
    check_ask(name, node.asks, ask)
    entry = {"payload": dump_payload(ask.payload, thread_id=thread_id, who=name)}
    step = (attempt, calls, latency)
    return wait_at_node(runner, thread_id, run_id, cursor, name, node, ask.update, entry, step)


def wait_at_node(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: Node,
    given: Any,
    entry: dict[str, Any],
    step: tuple[int, list[dict[str, Any]], float],
    due: float | None = None,
) -> Cursor:
    """End node ``name``'s step in a wait at the node: apply the update it ``given`` with its
    question (or its sleep), keep ``entry`` as its pause (and ``due`` as its timer), commit.
    Nothing the node did runs again: what ends the wait (an answer, the timer) takes the
    node's route."""
    attempt, calls, latency = step
    flow = runner.flow
    raw = check_update(given, name)
    check_writes(name, node.writes, raw)
    state, update = flow.schema.apply(cursor.state, raw, node=name)
    if flow.invariants:
        check_invariants(flow, thread_id, name, state, cursor.version)
    after = Cursor(
        state,
        name,
        "waiting",
        cursor.version + 1,
        None,
        entered=cursor.step_version,  # still the node's step
        pauses={name: entry},
        due=due,
    )
    record = None
    if runner.store is not None:
        record = step_record(
            runner, thread_id, run_id, name, after, update, attempt, calls, latency
        )
    runner._threads.commit(thread_id, cursor.version, after, record)
    runner._log.debug("node_waits", thread_id=thread_id, run_id=run_id, node=name)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, name, latency, attempt))
        runner._announce(thread_id, run_id, name, after, update)
    return after
