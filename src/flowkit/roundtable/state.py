"""The roundtable state: seed 004 §3's keys, minus the I/O handles (the WebSocket, the
character manager and the log files are the flow's run-time services).

The conversation log is an ``append`` field of utterances; ``conversation_log_text`` renders
it as the origin's log lines (``[HH:MM:SS] speaker: text``). ``spoken_set`` holds display
names, as in the seed, in the order they spoke. ``error`` is the latest failure of a turn as
a ``NodeError`` (node, type, message): a failed LLM call, or any node that raised;
``round_failures`` keeps, for the round, each character whose turn brought no reply, and why.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..definition._reducers import append
from ..records._node_error import NodeError
from .speaker import Member, Reason

__all__ = ["PERSON", "LogEntry", "PersonInput", "RoundtableState", "TurnFailure"]

#: The speaker name of the person's lines in the conversation log (the origin's).
PERSON = "USER"
#: Longest message the person may send in one turn.
MAX_INPUT_CHARS = 4000


class LogEntry(BaseModel):
    """One utterance: when (``HH:MM:SS``), who (display name, or ``USER``), what was said."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time: str
    speaker: str
    text: str

    def line(self) -> str:
        """The conversation log line: ``[HH:MM:SS] speaker: text``."""
        return f"[{self.time}] {self.speaker}: {self.text}"


class TurnFailure(BaseModel):
    """A character whose turn brought no reply: who, and the failure (its LLM call, say)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    internal_id: str
    character: str = Field(description="the display name")
    error: NodeError

    def line(self) -> str:
        """``Lumina could not answer: LLMUnavailableError: ...`` (one line)."""
        message = " ".join(self.error.message.split())
        return f"{self.character} could not answer: {self.error.type}: {message}"


class PersonInput(BaseModel):
    """What the person says at the table (the ``person`` gate's input)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_INPUT_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the message is blank; say something to the table")
        return value


class RoundtableState(BaseModel):
    """Where a roundtable session stands (one flowkit thread is one session)."""

    # Seed 004 §3 ------------------------------------------------------------------------------
    user_input: str | None = None
    current_display_name: str = ""
    current_internal_id: str = ""
    registry: list[Member] = []
    spoken_set: list[str] = Field([], description="display names that spoke this round")
    turn_index: int = Field(0, description="characters' turns so far in the session")
    max_turns: int = Field(8, description="most characters' turns in one round")
    persona_prompt: str = ""
    conversation_log: Annotated[list[LogEntry], append] = []
    request_id: str = ""
    last_response_text: str | None = None
    display_text: str | None = None
    next_internal_id: str | None = None
    next_display_name: str | None = None
    decision_reason: Reason | None = None
    error: NodeError | None = None
    # flowkit's additions --------------------------------------------------------------------
    session_id: str = Field("", description="the thread id: the memory records' session")
    config_name: str = ""
    auto_loops: int = Field(0, description="characters' turns per person message; 0 = off")
    round_index: int = Field(0, description="person messages so far (memory thread ids)")
    round_turns: int = Field(0, description="characters' turns in this round so far")
    round_started_at: str = Field("", description="UTC ISO time the round began")
    round_log_start: int = Field(0, description="index of the round's first log entry")
    prompt: str = Field("", description="the system prompt of the current turn")
    nomination: str | None = Field(None, description="the nomination as written, if any")
    refusal: Literal["missing", "user", "unknown", "self", "spoken"] | None = None
    continue_round: bool = False
    memory_context: str = Field("", description="recent summaries of earlier sessions")
    last_summary: str | None = None
    round_failures: list[TurnFailure] = Field(
        [], description="characters whose turn this round brought no reply, and why"
    )

    @property
    def conversation_log_text(self) -> str:
        """The log as the origin's lines, one per utterance."""
        return "\n".join(entry.line() for entry in self.conversation_log)

    def member(self, internal_id: str | None) -> Member | None:
        return next((m for m in self.registry if m.internal_id == internal_id), None)

    def round_log(self) -> list[LogEntry]:
        """The utterances of the current round (from the person's message on)."""
        return list(self.conversation_log[self.round_log_start :])
