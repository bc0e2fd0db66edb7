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
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...dialogue._models import AFFIRM, DENY, INFORM, UNCLEAR
from ...dialogue.confirm import CHANGE_RESPONSES, CONFIRM, CONFIRM_RESPONSES, yes_no
from ...dialogue.nlu import TurnContext, Understanding, from_intent
from ...dialogue.services import Services
from ...dialogue.state import DialogueState

__all__ = ["make_ir"]


def make_ir(services: Services) -> Node:
    @node(reads=["user_text", "messages", "slots"], writes=["intent_type", "entities"])
    def intent_recognition(state: DialogueState, ctx: Context) -> dict[str, Any]:
        asked = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        expects = asked.expects if asked is not None else None
        context = TurnContext(
            expects=None if expects == CONFIRM else expects,
            lang=state.lang(),
            today=services.today(ctx),
            history=tuple(state.messages[-7:-1]),
            slots=dict(state.slots),
        )
        if asked is not None and (expects == CONFIRM or asked.response_id in CHANGE_RESPONSES):
            # A confirmation question, also one repeated after a question in between.
            yes_or_no = expects == CONFIRM or asked.response_id in CONFIRM_RESPONSES
            understood = _confirmation(services, state.user_text, context, ctx, yes_or_no)
        else:
            understood = services.recognizer.understand(state.user_text, context, ctx.llm)
            if context.expects in services.domain.slots:
                mapped = from_intent(services.domain, context.expects, state.user_text, understood)
                understood = mapped or understood
        ctx.log.debug(
            "dialogue_ir",
            intent_type=understood.intent_type,
            confidence=round(understood.confidence, 3),
            source=understood.source,
            entities=[e.entity for e in understood.entities],
        )
        return {"intent_type": understood.intent_type, "entities": understood.entities}

    return intent_recognition


def _confirmation(
    services: Services, text: str, context: TurnContext, ctx: Context, yes_or_no: bool
) -> Understanding:
    """The reply to a confirmation question: yes, no, a change of values, or unclear.

    After "what would you like to change?" (``yes_or_no`` false) a yes or a no answers
    nothing that was asked: like any reply without values it is ``unclear``, and the user is
    asked to confirm again.
    """
    answer = yes_no(text) if yes_or_no else None
    if answer is not None:
        # Offline only: a yes or a no never needs the model; values said with it ("no, 3 pm")
        # are a change, confirmed again.
        found = services.offline.understand(text, context)
        if found.entities:
            return Understanding(INFORM, found.entities, 1.0)
        return Understanding(AFFIRM if answer == "yes" else DENY, [], 1.0)
    understood = services.recognizer.understand(text, context, ctx.llm)
    if understood.intent_type in ("OOS", INFORM):
        kind = INFORM if understood.entities else UNCLEAR
        return Understanding(kind, understood.entities, understood.confidence, understood.source)
    return understood
