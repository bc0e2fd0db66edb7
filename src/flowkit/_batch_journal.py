"""How ``Map``/``Parallel`` records read back: the merge, replay and snapshots.

The join's merge lives here because replay must use exactly the function the live run used:
live runs hold normalised values, replay their JSON form, and lenient validation accepts both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ._execution import Cursor, ItemDone
from ._node import NodeError
from ._records import ItemRecord, JoinRecord, PauseRecord
from ._state import StateSchema
from .errors import RunError

if TYPE_CHECKING:
    from ._flow import Flow

__all__ = [
    "field_values",
    "items_from_snapshot",
    "merge_items",
    "replay_batch_record",
    "snapshot_items",
]


def merge_items(
    schema: StateSchema,
    state: BaseModel,
    items: Mapping[int, ItemDone],
    order: list[int],
    node: str,
) -> BaseModel:
    """Apply the calls' updates to ``state`` through the reducers, in ``order``.

    Live runs hold normalised values and replay holds their JSON form; validating leniently
    accepts both, so the two give the same state.
    """
    for index in order:
        state, _ = schema.apply(state, items[index].update, node=node, strict_json=True)
    return state


def field_values(schema: StateSchema, update: Mapping[str, Any]) -> dict[str, Any]:
    """An update as field values (models, not dicts), whether live or read back as JSON."""
    return {key: schema.fields[key].adapter.validate_python(value) for key, value in update.items()}


def replay_batch_record(flow: Flow, cursor: Cursor, record: Any) -> Cursor:
    """The cursor after an ``item`` or ``join`` record."""
    if isinstance(record, PauseRecord):
        return cursor._replace(status="waiting", version=record.version, error=None)
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
    return Cursor(state, record.next, record.status, record.version, error)


def snapshot_items(cursor: Cursor) -> dict[int, dict[str, Any]] | None:
    """The finished calls a snapshot keeps (JSON form)."""
    if not cursor.items:
        return None
    return {
        index: {
            "update": dict(done.stored),
            "error": done.error.model_dump() if done.error else None,
            "of": done.of,
            "label": done.label,
        }
        for index, done in cursor.items.items()
    }


def items_from_snapshot(data: Mapping[int, Mapping[str, Any]] | None) -> dict[int, ItemDone] | None:
    if not data:
        return None
    return {
        int(index): ItemDone(
            each["update"],
            each["update"],
            NodeError.model_validate(each["error"]) if each.get("error") else None,
            int(each["of"]),
            str(each.get("label", "")),
        )
        for index, each in data.items()
    }
