"""How ``Map``/``Parallel`` records read back: the merge, replay and snapshots.

The join's merge lives here because replay must use exactly the function the live run used:
live runs hold normalised values, replay their JSON form, and lenient validation accepts both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...definition._state import StateSchema
from ...records._node_error import NodeError
from .._cursor import Cursor, ItemDone

if TYPE_CHECKING:
    pass

__all__ = [
    "combined_update",
    "field_values",
    "items_from_snapshot",
    "merge_items",
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


def combined_update(
    schema: StateSchema, items: Mapping[int, ItemDone], order: list[int]
) -> dict[str, Any]:
    """The calls' updates in ``order`` as one update, each field's through its reducer
    (``append``: the calls' items in order; no reducer: the last call's value): what the
    node wrote, as a plain node's update is, never the field's whole new value."""
    combined: dict[str, Any] = {}
    for index in order:
        for key, value in field_values(schema, items[index].update).items():
            reducer = schema.fields[key].reducer
            if key in combined and reducer is not None:
                combined[key] = reducer(combined[key], value)
            else:
                combined[key] = value
    return combined


def field_values(schema: StateSchema, update: Mapping[str, Any]) -> dict[str, Any]:
    """An update as field values (models, not dicts), whether live or read back as JSON."""
    return {key: schema.fields[key].adapter.validate_python(value) for key, value in update.items()}


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
