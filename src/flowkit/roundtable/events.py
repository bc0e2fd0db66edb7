"""The payloads the roundtable sends through ``ctx.emit``: the origin's WebSocket messages, so a
front end written for the origin can consume them as they are.

- ``{"type": "message", "speaker": <display name>, "text": <displayed text>}``
- ``{"type": "status", "character": <display name>, "status": "THINKING" | "IDLE" | "ACTIVE"}``

They arrive as ``Emitted`` events (``Runner.subscribe``) and as the items of
``Runner.stream(..., mode="custom")``.
"""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = ["MessageEvent", "Status", "StatusEvent", "message_event", "status_event"]

#: THINKING: the character's LLM is working; IDLE: it finished its turn; ACTIVE: the round is
#: over and the table waits for the person.
Status = Literal["THINKING", "IDLE", "ACTIVE"]


class MessageEvent(TypedDict):
    type: Literal["message"]
    speaker: str
    text: str


class StatusEvent(TypedDict):
    type: Literal["status"]
    character: str
    status: Status


def message_event(speaker: str, text: str) -> MessageEvent:
    return {"type": "message", "speaker": speaker, "text": text}


def status_event(character: str, status: Status) -> StatusEvent:
    return {"type": "status", "character": character, "status": status}
