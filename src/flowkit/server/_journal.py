"""Events derived from the durable journal: one ``checkpoint`` event per journal record.

An event's id is its record's version, so a client that reconnects with ``Last-Event-ID: 12``
gets records 13, 14 ... from the journal, whatever happened to the server in between. Events
that are not journaled (a node started, tokens, ``ctx.emit`` values) get ids ``12.1``,
``12.2`` ...: the version they followed, then a counter; reconnecting with one of those resumes
after version 12 (such events are live only and are not sent again).

A checkpoint names what changed, never the values: clients read the state itself with
``GET /threads/{id}``, where authorisation and redaction apply. The one exception is what a
pause shows whoever answers it: a checkpoint that journals pauses (a gate's payload as the
thread arrives, a node's question, each ``Map`` call's question as it is asked) lists them
(``pauses``: ``{id, payload}``), the payloads redacted as for an anonymous reader (the event
is the same for every subscriber). The whole list of open pauses is the thread's state's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..definition._route_table import END
from ..execution.subflows._journal import in_attempt
from ..records._events import classify_changes
from ..records._records import SubRecord
from ..stores._protocol import AnyRecord
from ._problems import Problem

__all__ = [
    "ShowPauses",
    "carried_pauses",
    "checkpoint_data",
    "frame",
    "parse_event_id",
    "priority_of",
]

_EVENT_ID = re.compile(r"(?P<version>\d{1,12})(?:\.\d{1,12})?")


def parse_event_id(value: str | None) -> int | None:
    """The journal version a ``Last-Event-ID`` stands for; ``None`` when none was given."""
    if value is None or value.strip() == "":
        return None
    found = _EVENT_ID.fullmatch(value.strip())
    if found is None:
        raise Problem(
            400,
            "invalid_event_id",
            "Last-Event-ID must be an id this server sent (`12` or `12.3`); drop it to start "
            "from now.",
        )
    return int(found["version"])


def priority_of(status: str, classes: Mapping[str, tuple[str, ...]]) -> str:
    """Seed 000 §4: a person must act (waiting, done, failed) or a critical field changed:
    ``critical``; a progress field changed: ``progress``; approval fields: ``approval``."""
    if status in ("waiting", "done", "failed") or classes.get("critical"):
        return "critical"
    if classes.get("progress"):
        return "progress"
    if classes.get("approval"):
        return "approval"
    return "normal"


#: ``shown(pauses)``: the pauses (``{id, payload}``) as an event may carry them (redacted).
ShowPauses = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def checkpoint_data(
    record: AnyRecord,
    change_classes: Mapping[str, frozenset[str]],
    shown: ShowPauses | None = None,
) -> dict[str, Any]:
    """What a client learns of one journal record: where the thread went, which keys, and
    the pauses it journals (their payloads ``shown`` as given)."""
    inner: Any = record
    path: list[str] = []
    ids: list[str] = []  # the subflow nodes by name, as pause ids name them
    while isinstance(inner, SubRecord):  # a child flow's step: named by path, as history does
        path.append(in_attempt(inner))
        ids.append(inner.node)
        inner = inner.record
    node = getattr(inner, "node", None) or getattr(inner, "gate", None)
    if path and node is not None:
        node = "/".join([*path, node])
    elif path:
        node = "/".join(path)
    update: Mapping[str, Any] = getattr(inner, "update", None) or {}
    if inner.kind == "start" and not path:
        changed: tuple[str, ...] = ()
    else:
        changed = tuple(sorted(update)) if not path else ()
    classes = {k: v for k, v in classify_changes(changed, change_classes).items() if v}
    error = getattr(record, "error", None) or getattr(inner, "error", None)
    data: dict[str, Any] = {
        "version": record.version,
        "kind": inner.kind,
        "node": node,
        "next": None if record.next == END else record.next,
        "status": record.status,
        "changed": list(changed),
        "classes": {k: list(v) for k, v in classes.items()},
        "priority": priority_of(record.status, classes),
        "ts": record.ts,
        # How many attempts the step's node took (a retried node's, a subflow node's own step).
        "attempts": getattr(inner, "attempts", 1),
    }
    if isinstance(error, Mapping) and error.get("type"):
        data["error_type"] = str(error["type"])
    if inner.kind == "pause":
        data["gates"] = ["/".join([*ids, gate]) for gate in getattr(inner, "gates", ())]
    pauses = carried_pauses(inner.pauses, ids) if getattr(inner, "pauses", None) else []
    if pauses:
        data["pauses"] = pauses if shown is None else shown(pauses)
    return data


def carried_pauses(entries: Mapping[str, Any], path: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The pauses a record journals (``Record.pauses``) as ``{id, payload}``, by path inside
    subflows, in the order they are answered best: a gate's or a node's first, then a
    ``Map``'s calls in item order (a call running a subflow: the pauses of its child, by
    path). A node asleep (``ctx.sleep_until``) waits for no answer: not a pause."""

    def order(pause: str) -> tuple[int, str]:
        index = _entry(entries, pause).get("index")
        return (index, pause) if isinstance(index, int) else (-1, "")

    found = []
    for pause in sorted(entries, key=order):
        entry = _entry(entries, pause)
        if "wake" in entry:
            continue
        inner = entry.get("pauses")
        if isinstance(inner, Mapping):  # a subflow call whose child waits: its pauses
            found += [
                {"id": "/".join([*path, f"{pause}/{each}"]), "payload": payload}
                for each, payload in inner.items()
            ]
        else:
            found.append({"id": "/".join([*path, pause]), "payload": entry.get("payload")})
    return found


def _entry(entries: Mapping[str, Any], pause: str) -> Mapping[str, Any]:
    found = entries[pause]
    return found if isinstance(found, Mapping) else {}


def frame(event: str, data: Any, event_id: str | None = None) -> bytes:
    """One server-sent event, encoded (JSON data on one line)."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"event: {event}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode()
