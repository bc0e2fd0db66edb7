"""What the commands show of a waiting thread's open pauses: each pause's id (what
``resume --gate`` takes) with its payload, and the model an answer to it must fit.

A pause is a gate, a gate branch of a ``Parallel``, a node that asked (``ctx.ask``) or a call
of a ``Map`` that asked (``node[label]``); inside a ``Subflow`` its id is a path
(``review/approve``). Its payload is what it shows whoever answers (a question, a draft), as
JSON; in a table it is one line, cut to ``PAYLOAD_LIMIT`` characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..definition._flow import Flow

__all__ = [
    "PAYLOAD_LIMIT",
    "answer_model",
    "carried",
    "pauses_json",
    "payload_text",
    "write_pauses",
]

#: How much of a payload a line shows (``--json`` has all of it).
PAYLOAD_LIMIT = 300


def answer_model(flow: Flow, pause: str) -> type[BaseModel] | None:
    """The model an answer to ``pause`` must fit; ``None`` when the flow has no such pause."""
    from ..definition._pause_ids import pause_spec

    found = pause_spec(flow, pause)
    return None if found is None else found[0].input


def payload_text(payload: Any, limit: int = PAYLOAD_LIMIT) -> str:
    """A payload on one line: compact JSON, cut to ``limit`` characters saying how much more."""
    from ..foundation._plain import shorten

    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return shorten(text, limit)


def pauses_json(pauses: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": pause, "payload": payload} for pause, payload in pauses]


def write_pauses(pauses: Sequence[tuple[str, Any]], out: TextIO, label: str = "payload") -> None:
    """One line per open pause that carries a payload: ``label  id: {...}``."""
    width = max(len(label), 8)
    first = True
    for pause, payload in pauses:
        if payload is None:
            continue
        out.write(f"{label if first else '':<{width}} {pause}: {payload_text(payload)}\n")
        first = False


def carried(entries: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """The payloads of the pauses a record journals (``Record.pauses``), by id: a subflow
    call's child's pauses by path; a node asleep (``ctx.sleep_until``) is no pause."""
    found: dict[str, Any] = {}
    for pause, entry in (entries or {}).items():
        if not isinstance(entry, Mapping):
            found[f"{prefix}{pause}"] = None
        elif isinstance(entry.get("pauses"), Mapping):
            for inner, payload in entry["pauses"].items():
                found[f"{prefix}{pause}/{inner}"] = payload
        elif "wake" not in entry:
            found[f"{prefix}{pause}"] = entry.get("payload")
    return found
