"""What a commit announces: one ``events`` row per journal record, and events read back.

The row is written in the same statement as the record (so an event exists exactly when its
step does) and holds only what the runner's own events tell: the node or gate, where the
thread stands next, which state keys changed, the error. ``to_events`` turns a row into the
same event objects a ``Runner`` emits after that commit (``NodeFinished`` for a step, then
``StateChanged``, then ``Waiting`` / ``Completed`` / ``Failed``), minus what only the
running process has: ``StateChanged.state`` is ``None`` and ``update`` holds key names only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...records._events import Completed, Event, Failed, NodeFinished, StateChanged, Waiting
from ...records._node_error import NodeError
from .._protocol import AnyRecord

__all__ = ["event_body", "to_events"]


def event_body(record: AnyRecord) -> bytes:
    """The ``events`` row body for ``record``: small JSON, never the state's values."""
    who = getattr(record, "node", None) or getattr(record, "gate", None)
    if who is None:
        who = "__start__" if record.kind == "start" else "update_state"
    run_id = None if record.kind == "patch" else record.run_id
    body: dict[str, Any] = {
        "kind": record.kind,
        "node": who,
        "next": record.next,
        "status": record.status,
        "run_id": run_id,
        "changed": list(getattr(record, "update", ())),
    }
    error = getattr(record, "error", None)
    if error is not None:
        body["error"] = error
    if record.kind == "step":
        body["latency_s"] = getattr(record, "latency_s", 0.0)
        body["attempts"] = getattr(record, "attempts", 1)
    if record.pauses and "wake" in record.pauses.get(record.next, ()):
        body["asleep"] = True  # ctx.sleep_until: waiting for its timer, not for an answer
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def to_events(
    thread_id: str,
    version: int,
    raw: bytes,
    change_classes: Mapping[str, frozenset[str]] | None = None,
) -> list[Event]:
    """The events a runner announced for the record at ``version`` (see the module doc)."""
    from ...records._events import classify_changes

    body = json.loads(raw)
    run_id, node = body.get("run_id"), str(body["node"])
    error = NodeError.model_validate(body["error"]) if body.get("error") else None
    found: list[Event] = []
    if body["kind"] == "step":
        latency, attempts = float(body.get("latency_s", 0.0)), int(body.get("attempts", 1))
        found.append(NodeFinished(thread_id, run_id, node, latency, attempts, error))
    changed = tuple(str(key) for key in body.get("changed", ()))
    status = body["status"]
    # As the runner: a start announces itself only when it waits at once; a step that
    # failed with nowhere to route announces no state change, only its failure.
    quiet = (body["kind"] == "start" and status == "pending") or (
        body["kind"] == "step" and status == "failed"
    )
    if not quiet:
        classes = classify_changes(changed, change_classes or {})
        update = dict.fromkeys(changed)
        found.append(StateChanged(thread_id, run_id, node, version, changed, classes, None, update))
    if status == "waiting" and not body.get("asleep"):
        found.append(Waiting(thread_id, run_id, str(body["next"]), version))
    elif status == "done":
        found.append(Completed(thread_id, run_id, str(body["next"]), version))
    elif status == "failed" and error is not None:
        found.append(Failed(thread_id, run_id, str(body["next"]), error, version))
    return found
