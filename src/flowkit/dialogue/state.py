"""The dialogue state: seed 001 §2 keys, with §3's reducers (messages, exec_trace and
tool_calls append; everything else is overwritten).

Names follow the §4.1 matrix where §2 differs: ``next_action`` (§2 ``nexts``), ``goal_state``
(§2 ``goal_phase``), ``messages`` (§2 ``ChatHistory``), ``user_text`` (§2
``last_user_message``). Keys no node of the matrix writes are read-only views derived from
the others: ``last_user_message``, ``last_ai_message``, ``filled_slots``, ``action_history``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ..definition._reducers import append
from .errors import DialogueError, as_dialogue_error

__all__ = [
    "ChatMessage",
    "DialogueState",
    "Entity",
    "Event",
    "GoalState",
    "JsonScalar",
    "NextAction",
    "Refusal",
    "ResponsePlan",
    "ToolCall",
    "TraceEntry",
]

JsonScalar = str | int | float | bool | None
Mode = Literal["SLOT_FILLING", "STEP_BY_STEP"]
#: What the policies decided (seed 001 §2.3 ``nexts``: clarify / respond / execute_step).
NextAction = Literal["respond", "clarify", "execute_step", "fallback", "end"]
GoalStatus = Literal["idle", "active", "completed", "cancelled", "failed"]
#: ``confirm``: the user said yes to the goal's confirmation question (its action runs);
#: ``deny``: a bare no (asked what to change); ``unclear``: neither (the question is repeated);
#: ``stop``: the user interrupted the goal (asked whether to continue).
Command = Literal[
    "start", "continue", "next", "back", "repeat", "cancel", "confirm", "deny", "unclear", "stop"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Event(_Frozen):
    """An intent that comes from outside the user's typing: an external event (injected
    through ``Dialogue.trigger``, the API) or a reminder an action scheduled. ``id`` names a
    scheduled one; ``entities`` are entity (or slot) name -> value, as given."""

    intent: str
    entities: dict[str, JsonScalar] = {}
    id: str | None = None


class ChatMessage(_Frozen):
    """One utterance. Assistant messages remember the plan they came from and the slot they
    asked for (``expects``), which is how IR knows what a bare "3 pm" answers. ``event``: on
    a user message, the external event it carried (instead of text); on an assistant
    message, the scheduled event (a reminder) it answered, which is then delivered."""

    role: Literal["user", "assistant"]
    content: str
    lang: str = "en"
    turn_id: int | None = None
    response_id: str | None = None
    expects: str | None = None
    ts: float | None = None
    event: Event | None = None


class Entity(_Frozen):
    """A value IR found: which entity, its normalised value, and the words it came from.

    ``slot`` is set when the recogniser knows the slot it fills (an LLM command, or the reply
    to a question); ``role`` when a cue word gave the value a role ("from Berlin": origin),
    which picks between slots of one entity; ``correction`` when the user corrects an earlier
    value ("no, 3 pm").
    """

    entity: str
    value: JsonScalar
    text: str = ""
    slot: str | None = None
    role: str | None = None
    correction: bool = False


class Refusal(_Frozen):
    """An action handler's ``ActionRefused``: the reply to give and the slot to ask again."""

    response: str
    slot: str | None = None
    params: dict[str, JsonScalar] = {}


class GoalState(_Frozen):
    """Where the current goal stands (seed 001 §8's open question, decided here).

    ``command`` is what GST understood this turn and GE carries out; ``fresh`` marks a goal
    started this turn (its slots start empty); ``result`` is a small summary of the action's
    result for the reply (the full result is ``tool_result`` or ``tool_result_ref``);
    ``refusal`` is set while the goal waits for the user to change what the action refused.
    ``confirm`` copies the goal's ``confirm:`` when it starts, so the route tables (which read
    only the state) can send a filled goal to its confirmation question instead of its action.
    ``paused`` is set while the goal waits for the answer to "Do you want to continue?" after
    the user said "stop": yes resumes it where it was, no drops it.
    """

    goal: str | None = None
    status: GoalStatus = "idle"
    current_step: int | None = None
    total_steps: int = 0
    command: Command | None = None
    fresh: bool = False
    result: dict[str, JsonScalar] = {}
    history: list[str] = []
    refusal: Refusal | None = None
    confirm: bool = False
    paused: bool = False

    @property
    def active(self) -> bool:
        return self.status == "active"


class ResponsePlan(_Frozen):
    """What to say, decided by a policy (NP, SFP or GP) and rendered by a response node.

    ``id`` names a response template; ``params`` fill it; ``slot`` is the slot a clarifying
    question asks for; ``resume`` asks RN to repeat the pending question after a digression.
    """

    id: str
    by: Literal["NP", "SFP", "GP", "EP"]
    lang: str
    style: Literal["template", "llm"] = "template"
    slot: str | None = None
    params: dict[str, JsonScalar] = {}
    corrected: list[str] = []
    resume: bool = False
    outcome: Literal["success", "failure"] = "success"
    error_type: str | None = None


class TraceEntry(_Frozen):
    """A light execution record (§2.4 ``exec_trace``): slot checks, actions, steps. Holds slot
    names and codes, never slot values; a ``schedule`` entry (an action scheduled an event or
    cancelled some, see ``flowkit.dialogue.events``) holds the event as the handler gave it."""

    node: str
    kind: Literal["slots", "action", "step", "schedule"]
    detail: dict[str, Any] = {}


class ToolCall(_Frozen):
    """One action call (§2.4 ``tool_calls``); personal slot values are masked in ``args``."""

    name: str
    args: dict[str, JsonScalar] = {}
    status: Literal["ok", "error", "refused"] = "ok"
    latency_ms: float = 0.0
    result_ref: str | None = None
    error_type: str | None = None


class DialogueState(BaseModel):
    """Everything a conversation knows; persisted after every step."""

    dialog_state: str = "SG"
    domain: str = ""
    thread_id: str = ""
    turn_id: int = 0
    messages: Annotated[list[ChatMessage], append] = []
    user_text: str = ""
    intent_type: str | None = None
    entities: list[Entity] = []
    dialogue_mode: Mode | None = None
    goal_state: GoalState = GoalState()
    slots: dict[str, JsonScalar] = {}
    missing_slots: list[str] = []
    next_action: NextAction | None = None
    response_plan: ResponsePlan | None = None
    clarifying_question: str | None = None
    exec_trace: Annotated[list[TraceEntry], append] = []
    tool_calls: Annotated[list[ToolCall], append] = []
    tool_result: dict[str, Any] | None = None
    tool_result_ref: str | None = None
    #: §2.4: the latest failure of this turn (SG clears it), with its class (``errors.py``).
    error: Annotated[DialogueError | None, BeforeValidator(as_dialogue_error)] = None
    final_answer: str | None = None

    @property
    def last_user_message(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def last_ai_message(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "assistant"), "")

    @property
    def filled_slots(self) -> list[str]:
        return list(self.slots)

    @property
    def action_history(self) -> list[TraceEntry]:
        """The actions run so far, oldest first (the ``action`` entries of ``exec_trace``)."""
        return [entry for entry in self.exec_trace if entry.kind == "action"]

    def lang(self) -> str:
        """The language of the user's latest message."""
        return next((m.lang for m in reversed(self.messages) if m.role == "user"), "en")
