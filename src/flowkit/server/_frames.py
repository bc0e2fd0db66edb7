"""The server-sent events the hub sends, encoded once: a journal record's checkpoint, a live
event (its id: the version it followed and a counter), ``deleted`` and ``lagging``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..records._events import Emitted, Event, NodeFinished, NodeStarted, TokenStreamed
from ..stores._protocol import AnyRecord
from ._journal import ShowPauses, checkpoint_data, frame

__all__ = ["checkpoint_frame", "deleted_frame", "json_ready", "lagging_frame", "live_frame"]


def lagging_frame(version: int) -> bytes:
    detail = "This client fell behind; reconnect with Last-Event-ID to resume from here."
    return frame("lagging", {"version": version, "detail": detail}, str(version))


def checkpoint_frame(
    record: AnyRecord, classes: Mapping[str, frozenset[str]], shown: ShowPauses | None = None
) -> bytes:
    return frame("checkpoint", checkpoint_data(record, classes, shown), str(record.version))


def live_frame(event: Event, event_id: str) -> bytes:
    data: dict[str, Any] = {"node": getattr(event, "node", None)}
    if isinstance(event, NodeStarted):
        data["attempt"] = event.attempt
    elif isinstance(event, NodeFinished):
        data |= {"latency_s": round(event.latency_s, 6), "attempts": event.attempts}
        if event.error is not None:
            data["error_type"] = event.error.type
    elif isinstance(event, TokenStreamed):
        data |= {"text": event.text, "done": event.done, "call": event.call}
    elif isinstance(event, Emitted):
        data["value"] = json_ready(event.value)
    return frame(event.kind, data, event_id)


def json_ready(value: Any) -> Any:
    """``value`` if JSON can carry it, else a note naming its type (never its repr)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return {"unserializable": type(value).__name__}
    return value


def deleted_frame(thread_id: str) -> bytes:
    return frame("deleted", {"thread_id": thread_id})
