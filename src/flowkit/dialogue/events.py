"""External events and reminders: intents that come from outside the user's typing.

An *external event* is an intent injected into a conversation (``Dialogue.trigger``, the
HTTP API's resume of the Start Gate with ``{"intent": ..., "entities": {...}}``): SG records
it as the user's message of the turn and IR takes its intent and entities as understood, so
the rest of the turn runs as for a typed message.

A *reminder* is an event an action scheduled (``ActionResult.schedule``): GE records it in
``exec_trace`` (a ``schedule`` entry with its id and due time). While it is pending, the
Start Gate's deadline is the earliest pending due time, on the engine's timers: when it
passes, ``Runner.fire_due`` (``flowkit serve``, ``flowkit worker``, ``flowkit chat``,
``Dialogue.fire_due``) moves the waiting conversation from SG to IR without a user message,
and IR takes the earliest pending event as the turn's intent. The reply RN appends names the
event (``ChatMessage.event``), which is what makes it delivered. An action cancels pending
events by name (``ActionResult.cancel``). A user message before the due time does not cancel
a reminder; the timer is set again when the turn ends.
"""

from __future__ import annotations

import unicodedata
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from ._models import Domain
from .actions import ActionResult
from .nlu import Understanding
from .state import DialogueState, Entity, Event, JsonScalar, TraceEntry

__all__ = [
    "Pending",
    "current_event",
    "event_understanding",
    "next_wake",
    "pending",
    "schedule_entries",
]


@dataclass(frozen=True, slots=True)
class Pending:
    """A scheduled event not delivered nor cancelled yet, and when it is due."""

    event: Event
    due: datetime
    name: str | None = None


def schedule_entries(domain: Domain, result: ActionResult, now: datetime) -> list[TraceEntry]:
    """GE's ``schedule`` trace entries for what an action's ``result`` scheduled or cancelled.

    Raises:
        ValueError: a scheduled intent the domain does not have (the action fails).
    """
    entries: list[TraceEntry] = []
    if result.cancel:
        entries.append(TraceEntry(node="GE", kind="schedule", detail={"cancel": result.cancel}))
    for item in result.schedule:
        if item.intent not in domain.intents:
            raise ValueError(
                f"the action scheduled intent `{item.intent}`, which domain `{domain.name}` "
                "does not have; schedule one of its intents"
            )
        due = item.at if item.at is not None else now + item.after if item.after else now
        detail = {
            "id": uuid.uuid4().hex[:12],
            "intent": item.intent,
            "entities": dict(item.entities),
            "due": due.astimezone(UTC).isoformat(),
            "name": item.name,
        }
        entries.append(TraceEntry(node="GE", kind="schedule", detail=detail))
    return entries


def pending(state: DialogueState) -> list[Pending]:
    """The conversation's pending scheduled events, earliest first."""
    delivered = {
        m.event.id for m in state.messages if m.role == "assistant" and m.event is not None
    }
    found: dict[str, Pending] = {}
    for entry in state.exec_trace:
        if entry.kind != "schedule":
            continue
        detail = entry.detail
        cancel = detail.get("cancel")
        if cancel is not None:
            for key, item in list(found.items()):
                if cancel == "all" or item.name in cancel:
                    del found[key]
            continue
        ident = str(detail["id"])
        if ident in delivered:
            continue
        event = Event(intent=detail["intent"], entities=detail.get("entities") or {}, id=ident)
        found[ident] = Pending(event, datetime.fromisoformat(detail["due"]), detail.get("name"))
    return sorted(found.values(), key=lambda item: item.due)


def next_wake(state: DialogueState) -> datetime | None:
    """When the conversation waiting at SG must wake for its next reminder (SG's deadline)."""
    waiting = pending(state)
    return waiting[0].due if waiting else None


def current_event(state: DialogueState) -> Event | None:
    """The event this turn handles: the one the user's message carried, or, when the turn
    started without a user message (a reminder's timer fired), the earliest pending one."""
    if not state.messages or state.messages[-1].role == "assistant":
        waiting = pending(state)
        return waiting[0].event if waiting else None
    return state.messages[-1].event


def event_understanding(domain: Domain, event: Event) -> Understanding:
    """IR's result for ``event``: its intent (``SMALL_TALK`` for a small-talk one, whose name
    NP answers with) and its entities; a name that is a slot's fills that slot."""
    entities: list[Entity] = []
    for name, given in event.entities.items():
        if given is None:  # an entity without a value was not given
            continue
        slot = domain.slots.get(name)
        if name not in domain.entities and slot is not None and slot.entity is not None:
            value = _canonical(domain, slot.entity, given)
            entities.append(Entity(entity=slot.entity, value=value, text=str(given), slot=name))
        else:
            value = _canonical(domain, name, given)
            entities.append(Entity(entity=name, value=value, text=str(given)))
    spec = domain.intents.get(event.intent)
    kind = spec.kind if spec is not None else "task"
    intent_type = "SMALL_TALK" if kind == "small_talk" else event.intent
    return Understanding(intent_type, entities, 1.0, match=event.intent)


def _canonical(domain: Domain, entity: str, value: JsonScalar) -> JsonScalar:
    """A choice named by its canonical value or any synonym (case, width, spaces and ``_``
    folded) as its canonical value, as typed text gets it; anything else as given (SE
    refuses a value that is none of the choices)."""
    spec = domain.entities.get(entity)
    if spec is None or spec.kind != "choice" or not isinstance(value, str):
        return value
    wanted = _folded(value)
    for key, names in spec.values.items():
        if wanted in {_folded(key), *(_folded(n) for ns in names.values() for n in ns)}:
            return key
    return value


def _folded(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("_", " ").split())
