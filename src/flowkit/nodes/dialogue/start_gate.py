"""Start Gate (SG): the user's turn enters the flow here, a flowkit gate the run waits at.

Resuming the thread with ``{"text": ...}`` appends the user's message (with its language and
arrival time; a message without one, such as "3/14", "15:00", or "Sato" for a question
asking for a name, keeps the language of the user's last message that had one, so the reply
does too), sets ``user_text``, numbers the
turn, writes the thread's id (§2.1: SG owns ``thread_id``) and clears the previous turn's
``error``. Empty or oversized input is refused
by the gate's model and the thread keeps waiting.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...definition._gate import Gate
from ...dialogue._text import bears_language, detect_language
from ...dialogue.services import Services
from ...dialogue.state import ChatMessage, DialogueState
from . import EXTRA_WRITES

__all__ = ["MAX_CHARS", "UserTurn", "make_start_gate"]

MAX_CHARS = 2000


class UserTurn(BaseModel):
    """What a user sends: one message of 1 to 2,000 characters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(max_length=MAX_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the message is empty; send some text")
        return value


def make_start_gate(services: Services) -> Gate:
    domain = services.domain

    def start_gate(state: DialogueState, value: UserTurn, *, thread_id: str) -> dict[str, Any]:
        asked = next((m.expects for m in reversed(state.messages) if m.role == "assistant"), None)
        slot = domain.slots.get(asked or "")
        entity = domain.entities.get(slot.entity or "") if slot is not None else None
        name_asked = entity is not None and entity.kind in ("text", "regex")
        if bears_language(value.text, name_asked=name_asked):
            lang = detect_language(value.text, domain.languages, domain.default_language)
        else:
            said = (m.lang for m in reversed(state.messages) if m.role == "user")
            lang = next(said, domain.default_language)
        turn = state.turn_id + 1
        message = ChatMessage(
            role="user", content=value.text, lang=lang, turn_id=turn, ts=round(time.time(), 3)
        )
        # §2.1: SG owns thread_id; §2.4's `error` is the latest failure, so a turn starts
        # without one (the route tables read it to send a failing node to the Error Policy).
        return {
            "messages": [message],
            "user_text": value.text,
            "turn_id": turn,
            "thread_id": thread_id,
            "error": None,
        }

    return Gate(
        UserTurn,
        apply=start_gate,
        writes=["messages", "user_text", "turn_id", *EXTRA_WRITES["SG"]],
        description="Start Gate: the user's next message",
    )
