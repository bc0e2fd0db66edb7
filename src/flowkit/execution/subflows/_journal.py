"""How ``Subflow`` records read back: replay, snapshots and history's view of a child.

A child's records are ``sub`` records in the parent's journal and its cursor rides in the
parent's (``Cursor.sub``); these functions turn them back into cursors at any depth, and give
the paths (``review/check``) that history and the CLI show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...definition._jsonform import dump_state
from ...definition._subflow import Subflow
from ...records._node_error import NodeError
from ...records._records import Snapshot
from .._cursor import Cursor
from ..batch._journal import items_from_snapshot, snapshot_items

if TYPE_CHECKING:
    from ...definition._flow import Flow

__all__ = [
    "SUBFLOW_FAILED",
    "child_error",
    "child_flow_of",
    "dump_child_state",
    "in_attempt",
    "sub_from_snapshot",
    "sub_snapshot",
    "unwrap",
]

#: ``NodeError.type`` when the child stopped in a final state marked ``failed``.
SUBFLOW_FAILED = "SubflowFailed"


def child_error(name: str, child: Cursor) -> NodeError:
    """The ``Subflow`` node's error for a child that failed: the child's error, by path, with
    the node's attempts so far."""
    if child.error is not None:
        error = child.error
        # A nested child's message starts with its own path already.
        where = "" if child.sub is not None else f"{error.node or child.node}: "
        return NodeError(
            type=error.type,
            message=f"{name}/{where}{error.message}",
            node=name,
            retryable=error.retryable,
            attempts=child.attempts,
        )
    return NodeError(
        type=SUBFLOW_FAILED,
        message=f"`{name}` ended at its failed final state `{child.node}`",
        node=name,
        retryable=False,
        attempts=child.attempts,
    )


def in_attempt(record: Any) -> str:
    """The subflow node of a ``sub`` record as paths name it: ``review``, and ``review#2`` for
    the records of its second attempt."""
    return str(record.node) if record.attempts == 1 else f"{record.node}#{record.attempts}"


def child_flow_of(flow: Flow, name: str) -> Flow:
    node = flow.nodes[name]
    assert isinstance(node, Subflow), f"`{name}` is not a Subflow node"
    return node.flow


def sub_snapshot(flow: Flow, cursor: Cursor, thread_id: str, ts: float) -> dict[str, Any] | None:
    """The child's position as a snapshot keeps it (recursively), or ``None``."""
    if cursor.sub is None:
        return None
    child_flow = child_flow_of(flow, cursor.node)
    sub = cursor.sub
    return Snapshot(
        version=sub.version,
        ts=ts,
        next=sub.node,
        status=sub.status,
        flow=child_flow.name,
        state=dump_child_state(child_flow, thread_id, sub.state),
        error=sub.error.model_dump() if sub.error else None,
        items=snapshot_items(sub),
        sub=sub_snapshot(child_flow, sub, thread_id, ts),
        entered=sub.entered,
        attempts=sub.attempts,
        pauses=None if sub.pauses is None else dict(sub.pauses),
        due=sub.due,
    ).model_dump(mode="json", exclude=_defaults(sub))


def sub_from_snapshot(flow: Flow, node: str, data: Mapping[str, Any] | None) -> Cursor | None:
    if data is None:
        return None
    snap = Snapshot.model_validate(data)
    child_flow = child_flow_of(flow, node)
    return Cursor(
        child_flow.schema.load_state(snap.state),
        snap.next,
        snap.status,
        snap.version,
        NodeError.model_validate(snap.error) if snap.error else None,
        items_from_snapshot(snap.items),
        sub_from_snapshot(child_flow, snap.next, snap.sub),
        snap.entered,
        snap.attempts,
        snap.pauses,
        snap.due,
    )


def _defaults(sub: Cursor) -> set[str]:
    """Fields of a child's snapshot left out while they hold their defaults (as before they
    existed, so a parent's snapshot of a plain child is byte for byte what it was)."""
    left = set()
    if sub.attempts == 1:
        left.add("attempts")
    if sub.pauses is None:
        left.add("pauses")
    if sub.due is None:
        left.add("due")
    return left


def dump_child_state(flow: Flow, thread_id: str, state: BaseModel) -> dict[str, Any]:
    return dump_state(
        state, thread_id=thread_id, who="subflow", dump=lambda: flow.schema.dump_state(state)
    )


def unwrap(record: Any, cursor: Cursor) -> tuple[Any, str, str, BaseModel | None, NodeError | None]:
    """A ``sub`` record as history shows it: the child's record, its node and next as paths,
    the state of the (innermost) child after it, and the node's error when the child failed
    (an attempt that is retried, too). A path names a subflow node's second and later
    attempts ``review#2``."""
    name, child = record.node, cursor.sub
    assert child is not None, "a sub record leaves a child cursor"
    error = child_error(name, child) if child.status == "failed" else None
    prefix: list[str] = []
    while record.kind == "sub":
        prefix.append(in_attempt(record))
        record = record.record
        assert cursor.sub is not None, "a sub record leaves a child cursor"
        cursor = cursor.sub
    node = getattr(record, "node", None) or getattr(record, "gate", None)
    where = "/".join(prefix)
    return (
        record,
        f"{where}/{node}" if node else where,
        f"{where}/{record.next}",
        cursor.state,
        error,
    )
