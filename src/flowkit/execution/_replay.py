"""Replaying a journal: the cursor after each record, by the rules the live run used.

One module for every kind of record (steps, batch items and joins, a child flow's ``sub``
records), because a child's records replay through the same rules, recursively.
"""

from __future__ import annotations

from typing import Any

from ..definition._flow import Flow
from ..errors import RunError
from ..records._node_error import NodeError
from ..records._records import ItemRecord, JoinRecord, PauseRecord, StartRecord
from ._cursor import Cursor, ItemDone
from ._open import merged, without_call
from .batch._journal import items_from_snapshot, merge_items
from .subflows._journal import child_error, child_flow_of, sub_from_snapshot

__all__ = ["replay_record"]


def replay_record(flow: Flow, cursor: Cursor | None, record: Any) -> Cursor:
    """The cursor after one journal record (the same rules the live run used)."""
    if record.kind in ("item", "pause", "join"):
        assert cursor is not None, "a journal starts with a start record"
        return replay_batch_record(flow, cursor, record)
    if record.kind == "sub" or (record.kind == "start" and record.sub is not None):
        return replay_sub_record(flow, cursor, record)
    error = NodeError.model_validate(record.error) if getattr(record, "error", None) else None
    if isinstance(record, StartRecord):
        state = flow.schema.load_state(record.state)
        return Cursor(
            state, record.next, record.status, record.version, error,
            items_from_snapshot(record.items), pauses=record.pauses, due=record.due,
        )  # fmt: skip
    assert cursor is not None, "a journal starts with a start record"
    who = getattr(record, "node", None) or getattr(record, "gate", None) or "update_state"
    state = flow.schema.replay(cursor.state, record.update, node=who)
    sub = cursor.sub if record.kind == "patch" else None
    if sub is not None and (record.next, record.status) != (cursor.node, cursor.status):
        sub = None  # a patch that moved the thread leaves the child behind
    entered = None
    if record.kind == "step" and record.status == "failed" and record.next == record.node:
        entered = cursor.step_version  # a failed attempt (`_fail`): still the same step
    if record.kind == "step" and record.status == "waiting" and record.next == record.node:
        entered = cursor.step_version  # a node that asked: still the same step
    return Cursor(
        state, record.next, record.status, record.version, error, None, sub, entered,
        pauses=record.pauses, due=record.due,
    )  # fmt: skip


def replay_batch_record(flow: Flow, cursor: Cursor, record: Any) -> Cursor:
    """The cursor after an ``item`` or ``join`` record."""
    if isinstance(record, PauseRecord):
        return cursor._replace(
            status=record.status, version=record.version, error=None,
            pauses=merged(cursor.pauses, record.pauses),
            due=record.due,
            entered=cursor.step_version,  # still the same step (as live)
        )  # fmt: skip
    error = NodeError.model_validate(record.error) if record.error else None
    if isinstance(record, ItemRecord):
        done = ItemDone(record.update, record.update, error, record.of, record.label)
        items = {**(cursor.items or {}), record.index: done}
        return Cursor(
            cursor.state,
            record.next,
            record.status,
            record.version,
            None,
            items,
            entered=cursor.step_version,
            pauses=without_call(cursor.pauses, record.index, record.label),
            due=record.due,
        )
    assert isinstance(record, JoinRecord)
    items = dict(cursor.items or {})
    if record.status == "failed" and record.next == record.node:
        kept = {i: done for i, done in items.items() if i not in record.failed}
        return cursor._replace(
            status="failed", version=record.version, error=error, items=kept or None
        )
    missing = [i for i in record.merged if i not in items]
    if missing:
        raise RunError(
            f"The journal joins calls {missing} of `{record.node}` at version {record.version} "
            "but has no item records for them; the thread's journal is damaged.",
            thread_id="",
        )
    state = cursor.state
    if record.folded:
        state = merge_items(flow.schema, state, items, record.merged, record.node)
    state = flow.schema.replay(state, record.update, node=record.node)
    return Cursor(
        state, record.next, record.status, record.version, error,
        pauses=record.pauses, due=record.due,
    )  # fmt: skip


def replay_sub_record(flow: Flow, cursor: Cursor | None, record: Any) -> Cursor:
    """The cursor after a ``sub`` record (or a start record that carries a child)."""
    if isinstance(record, StartRecord):
        base = replay_record(flow, None, record.model_copy(update={"sub": None}))
        return base._replace(sub=sub_from_snapshot(flow, record.next, record.sub))
    assert cursor is not None, "a journal starts with a start record"
    inner = record.record
    child_flow = child_flow_of(flow, record.node)
    child = replay_record(child_flow, None if inner.kind == "start" else cursor.sub, inner)
    if record.attempts != 1:
        child = child._replace(attempts=record.attempts)
    error = child_error(record.node, child) if record.status == "failed" else None
    return Cursor(
        cursor.state,
        record.next,
        record.status,
        record.version,
        error,
        None,
        child,
        cursor.step_version,
        due=record.due,
    )
