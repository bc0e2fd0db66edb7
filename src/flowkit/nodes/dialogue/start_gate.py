"""Start Gate (SG): the user's turn enters the flow here, a flowkit gate the run waits at.

Resuming the thread with ``{"text": ...}`` appends the user's message (with its language and
arrival time; a message without one, such as "3/14", "15:00", or "Sato" for a question
asking for a name, keeps the language of the user's last message that had one, so the reply
does too), sets ``user_text``, numbers the
turn, writes the thread's id (§2.1: SG owns ``thread_id``) and clears the previous turn's
``error``; a goal under way that the domain has changed since is brought in line with it
(``dialogue._edits``). Empty or oversized input is refused
by the gate's model and the thread keeps waiting.

An external event (``{"intent": ..., "entities": {...}}`` instead of text, an intent of the
domain) is the user's message of the turn, shown as ``/intent``; IR takes it as understood.
While an action's reminder is pending, the gate's deadline is its due time: the timer moves
the conversation to IR, which handles the reminder (see ``flowkit.dialogue.events``).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...definition._gate import Gate
from ...dialogue._edits import follow_domain
from ...dialogue._text import bears_language, detect_language
from ...dialogue.events import next_wake
from ...dialogue.services import Services
from ...dialogue.state import ChatMessage, DialogueState, Event, JsonScalar
from ...routing.dialogue import IR
from . import EXTRA_WRITES

__all__ = ["MAX_CHARS", "UserTurn", "make_start_gate"]

MAX_CHARS = 2000


class UserTurn(BaseModel):
    """What a user sends: one message of 1 to 2,000 characters, or an external event (an
    ``intent`` of the domain with ``entities``, name -> value) instead of text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field("", max_length=MAX_CHARS)
    intent: str | None = Field(None, max_length=100)
    entities: dict[str, JsonScalar] = Field({}, max_length=50)

    @field_validator("text")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _text_or_event(self) -> UserTurn:
        if self.intent is None and not self.text:
            raise ValueError("the message is empty; send some text")
        if self.intent is not None and self.text:
            raise ValueError("send either text or an event's intent, not both")
        if self.entities and self.intent is None:
            raise ValueError("entities come with an event's intent")
        return self


def make_start_gate(services: Services) -> Gate:
    domain = services.domain

    def start_gate(state: DialogueState, value: UserTurn, *, thread_id: str) -> dict[str, Any]:
        if value.intent is not None:
            return _event_turn(state, value, thread_id)
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
            **follow_domain(domain, state),
        }

    def _event_turn(state: DialogueState, value: UserTurn, thread_id: str) -> dict[str, Any]:
        if value.intent not in domain.intents:
            raise ValueError(
                f"domain `{domain.name}` has no intent `{value.intent}`; trigger one of "
                f"{sorted(domain.intents)}"
            )
        said = (m.lang for m in reversed(state.messages) if m.role == "user")
        turn = state.turn_id + 1
        event = Event(intent=value.intent, entities=dict(value.entities))
        message = ChatMessage(
            role="user",
            content=f"/{value.intent}",
            lang=next(said, domain.default_language),
            turn_id=turn,
            ts=round(time.time(), 3),
            event=event,
        )
        return {
            "messages": [message],
            "user_text": message.content,
            "turn_id": turn,
            "thread_id": thread_id,
            "error": None,
            **follow_domain(domain, state),
        }

    return Gate(
        UserTurn,
        apply=start_gate,
        writes=["messages", "user_text", "turn_id", *EXTRA_WRITES["SG"]],
        description="Start Gate: the user's next message",
        # A pending reminder wakes the conversation: its timer moves it to IR (events.py).
        deadline=next_wake,
        on_timeout=IR,
    )
