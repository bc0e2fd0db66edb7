"""Intent Recognition (IR): the user's text -> ``intent_type`` and ``entities``.

The domain's recogniser answers (offline by default; the LLM one when configured, which falls
back to offline on any LLM failure). The slot the assistant just asked for comes from the last
assistant message, so a bare "3 pm" or 「佐藤です」 is understood as an answer to it.

After a confirmation question (a goal with ``confirm: true``) the reply is read offline as
yes (``affirm``) or no (``deny``); a reply carrying slot values is a change (``inform``, and
the goal is confirmed again with them), also after "what would you like to change?";
anything else understood as nothing is ``unclear`` (the question is asked again). Questions
and small talk are answered as usual; their reply repeats the confirmation question and
carries its marker (``expects == CONFIRM``), so the next message is still read as yes or no.

The reply to a question for a slot with ``from_intent`` is checked against it: a bare yes or
no (``affirm``/``deny``) or an intent it lists fills the slot with the value it maps to.

What a yes means depends on the question asked: a yes/no slot question fills the slot, a
confirmation confirms, "Do you want to continue?" (``expects == CONTINUE``, after a bare
"stop" during a form, reported as ``stop``) resumes the paused goal. A correction at a
confirmation ("Wait, it's Jane Foo") changes a free-text slot rather than being read as a no,
and after a no the new value said alone is taken. A value for a slot not yet filled is never
a correction, even after a "no".

An external event or a due reminder (``flowkit.dialogue.events``) is not recognised: its
intent and entities are the turn's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...definition._node import Context, Node, node
from ...dialogue._models import AFFIRM, DENY, INFORM, UNCLEAR
from ...dialogue.confirm import (
    CHANGE,
    CHANGE_RESPONSES,
    CONFIRM,
    CONFIRM_RESPONSES,
    bare_yes_no,
    yes_no,
)
from ...dialogue.events import current_event, event_understanding
from ...dialogue.forms import CONTINUE, STOP, is_stop
from ...dialogue.nlu import TurnContext, Understanding, from_intent, text_change
from ...dialogue.responses import asked_anything_else
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, Entity, JsonScalar

__all__ = ["make_ir"]


def make_ir(services: Services) -> Node:
    @node(
        reads=["user_text", "messages", "slots", "exec_trace", "goal_state"],
        writes=["intent_type", "entities"],
    )
    def intent_recognition(state: DialogueState, ctx: Context) -> dict[str, Any]:
        event = current_event(state)
        if event is not None:  # an external event or a reminder: understood as it comes
            done = event_understanding(services.domain, event)
            ctx.log.debug("dialogue_ir", intent_type=done.intent_type, source="event")
            return {"intent_type": done.intent_type, "entities": done.entities}
        asked = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        expects = asked.expects if asked is not None else None
        response = asked.response_id if asked is not None else None
        text = state.user_text
        context = TurnContext(
            expects=None if expects in (CONFIRM, CHANGE, CONTINUE) else expects,
            lang=state.lang(),
            today=services.today(ctx),
            history=tuple(state.messages[-7:-1]),
            slots=dict(state.slots),
        )
        if ctx.llm is not None:  # only an LLM's prompt needs them masked
            context = replace(context, said=_said_in_private(services, state, context))
        in_form = expects is not None or response in (*CHANGE_RESPONSES, "present_step")
        if expects == CONTINUE:
            understood = _yes_or_no(services, text, context, ctx)
        elif in_form and is_stop(text):
            understood = Understanding(STOP, [], 1.0)
        elif expects in (CONFIRM, CHANGE) or response in CHANGE_RESPONSES:
            # A confirmation question, also one repeated after a question in between, or the
            # question what to change after a no.
            declined = expects != CONFIRM and response not in CONFIRM_RESPONSES
            understood = _confirmation(services, text, context, ctx, declined=declined)
        elif asked_anything_else(services.domain, response) and bare_yes_no(text) is not None:
            # "Anything else?" after a finished task: a bare yes asks what, a bare no closes;
            # "yes, I want a coffee" is understood as usual (the coffee is the answer).
            understood = Understanding(AFFIRM if bare_yes_no(text) == "yes" else DENY, [], 1.0)
        else:
            understood = services.recognizer.understand(text, context, ctx.llm)
            if context.expects in services.domain.slots:
                mapped = from_intent(services.domain, context.expects, text, understood)
                understood = mapped or understood
        # A slot whose value was just refused was said: the new value is a change.
        said: dict[str, JsonScalar] = dict(state.slots)
        if response == "slot_invalid" and expects is not None:
            said[expects] = None
        understood = _first_fills(services, understood, said)
        under_way = state.goal_state.goal if state.goal_state.active else None
        understood = _changes_marked(services, understood, state.slots, under_way)
        ctx.log.debug(
            "dialogue_ir",
            intent_type=understood.intent_type,
            confidence=round(understood.confidence, 3),
            source=understood.source,
            entities=[e.entity for e in understood.entities],
        )
        return {"intent_type": understood.intent_type, "entities": understood.entities}

    return intent_recognition


def _said_in_private(
    services: Services, state: DialogueState, context: TurnContext
) -> tuple[str, ...]:
    """The values (and their words) the user gave in answer to a personal slot's question
    earlier in the conversation, an earlier goal's included: the slots now hold only the
    current goal's, but the history an LLM's prompt carries may still show those."""
    domain, found, asked = services.domain, set[str](), None
    private = {n for n, s in domain.slots.items() if s.pii and not s.send_to_llm}
    for message in state.messages[:-1]:
        if message.role == "assistant":
            asked = message.expects
        elif asked in private:
            answer = replace(context, expects=asked, history=(), slots={})
            for entity in services.offline.understand(message.content, answer).entities:
                found.update(str(x) for x in (entity.value, entity.text) if x)
    return tuple(sorted(found, key=len, reverse=True))  # longest first: "Aya Mori" before "Aya"


def _yes_or_no(services: Services, text: str, context: TurnContext, ctx: Context) -> Understanding:
    """The reply to "Do you want to continue?": yes (with any values said along), no, or
    what the recogniser makes of it (a question, cancel, another task; else ``unclear``)."""
    answer = yes_no(text)
    if answer == "yes":
        return Understanding(AFFIRM, services.offline.understand(text, context).entities, 1.0)
    if answer == "no":
        return Understanding(DENY, [], 1.0)
    understood = services.recognizer.understand(text, context, ctx.llm)
    if understood.intent_type in ("OOS", INFORM):
        return Understanding(UNCLEAR, [], understood.confidence, understood.source)
    return _said_yes_or_no(understood) or understood


def _said_yes_or_no(understood: Understanding) -> Understanding | None:
    """The domain's own ``affirm`` or ``deny`` intent ("indeed", "not really"), recognised
    where a yes or a no is the answer: that answer (with no values said along)."""
    said = understood.match or understood.intent_type
    if said not in (AFFIRM, DENY) or understood.entities:
        return None
    return Understanding(said, [], understood.confidence, understood.source)


def _confirmation(
    services: Services, text: str, context: TurnContext, ctx: Context, *, declined: bool
) -> Understanding:
    """The reply to a confirmation question: yes, no, a change of values, or unclear.

    After "what would you like to change?" (``declined``) a yes still confirms and a no asks
    again what to change. A change of a free-text slot (a name) has no entity to find it by:
    "Wait, it's Jane Foo" (a correction, not a no) or, after a no, the new value said alone.
    """
    answer = yes_no(text)
    if answer is not None:
        # Offline only: a yes or a no never needs the model; values said with it ("no, 3 pm")
        # are a change, confirmed again.
        found = services.offline.understand(text, context)
        if found.entities:
            return Understanding(INFORM, found.entities, 1.0)
        changed = text_change(services.domain, services.offline, text, context, strict=True)
        if answer == "no" and changed is not None:
            return Understanding(INFORM, [changed], 1.0)
        return Understanding(AFFIRM if answer == "yes" else DENY, [], 1.0)
    understood = services.recognizer.understand(text, context, ctx.llm)
    if understood.intent_type in ("OOS", INFORM):
        if understood.entities:
            return Understanding(
                INFORM, understood.entities, understood.confidence, understood.source
            )
        changed = text_change(services.domain, services.offline, text, context, strict=not declined)
        if changed is not None:
            return Understanding(INFORM, [changed], 1.0, understood.source)
        return Understanding(UNCLEAR, [], understood.confidence, understood.source)
    return _said_yes_or_no(understood) or understood


def _first_fills(
    services: Services, understood: Understanding, slots: dict[str, JsonScalar]
) -> Understanding:
    """A value for a slot not filled yet (nor just refused) is a first answer, never a
    correction, even when it opens with "no" ("no thanks" to "any preferences?" is not
    "Changed preferences to ...")."""
    domain = services.domain

    def filled(entity: Entity) -> bool:
        if entity.slot is not None:
            return entity.slot in slots
        return any(s.entity == entity.entity and n in slots for n, s in domain.slots.items())

    entities = [
        e if not e.correction or filled(e) else e.model_copy(update={"correction": False})
        for e in understood.entities
    ]
    if entities == understood.entities:
        return understood
    return replace(understood, entities=entities)


def _changes_marked(
    services: Services, understood: Understanding, slots: dict[str, JsonScalar], goal: str | None
) -> Understanding:
    """A value said, with no correcting word, where every slot of the goal under way that
    could take it holds another ("3" to "Who is borrowing it?" once the quantity is 2)
    changes one: marked as a correction, so it is acknowledged ("Changed quantity to 3.")."""
    domain = services.domain
    if understood.intent_type != INFORM or goal not in domain.goals:
        return understood
    wanted = domain.goals[goal].slots

    def changes(entity: Entity) -> bool:
        if entity.correction:
            return False
        if entity.slot is not None:
            takers = [entity.slot] if entity.slot in wanted else []
        else:
            takers = [s for s in wanted if domain.slots[s].entity == entity.entity]
            if entity.role is not None:
                takers = [s for s in takers if domain.slots[s].role == entity.role] or takers
        return bool(takers) and all(s in slots and slots[s] != entity.value for s in takers)

    if not any(changes(e) for e in understood.entities):
        return understood
    entities = [
        e.model_copy(update={"correction": True}) if changes(e) else e for e in understood.entities
    ]
    return replace(understood, entities=entities)
