"""The state of a quality thread, the LLM's answer schemas, and the gates' inputs.

The state holds ids, hashes and this round's working data; the issues themselves live in
the ``WorkflowStateStore``, and the manuscript only as its hash (§3.4).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..definition._reducers import append
from .models import AdjustmentAttempt, AdjustmentStrategy, IssueState, Severity, TextRange

__all__ = [
    "AlignmentInput",
    "CheckReport",
    "Finding",
    "FixProposal",
    "PlannedFix",
    "QualityState",
    "UploadInput",
    "VerdictItem",
]


class Finding(BaseModel):
    """One problem the LLM reports; ``quote`` is the exact manuscript text it is about."""

    category: str = Field(min_length=1, max_length=64)
    severity: Severity = "medium"
    description: str = Field(default="", max_length=2000)
    quote: str = Field(min_length=1, max_length=2000)
    suggested_fix: str = Field(default="", max_length=2000)


class CheckReport(BaseModel):
    """The LLM's answer to a check: the problems found and scores per check. Any number of
    findings is read; how many become issues is the ``max_issues`` setting."""

    issues: list[Finding] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)


class FixProposal(BaseModel):
    """The LLM's plan for one issue: which offered tool, and the text that replaces the range
    (empty with ``delete_text``); ``defer`` when it should be left to a person."""

    tool: str = Field(max_length=64)
    replacement: str = Field(default="", max_length=4000)
    description: str = Field(default="", max_length=2000)
    defer: bool = False


class PlannedFix(BaseModel):
    """What planning decided for one issue in one round."""

    model_config = ConfigDict(frozen=True)

    round: int
    issue_id: str
    status: Literal["planned", "unavailable", "skipped"]
    tool: str = ""
    replacement: str = ""
    description: str = ""
    available_tools: tuple[str, ...] = ()
    qc_code: str | None = None


class VerdictItem(BaseModel):
    """What the re-check made of one issue in one round (computed, not yet stored)."""

    model_config = ConfigDict(frozen=True)

    round: int
    issue_id: str
    worked: bool
    state: IssueState
    new_range: TextRange | None = None
    new_checksum: str | None = None
    method: AdjustmentStrategy | None = None
    confidence: float = 0.0
    attempts: tuple[AdjustmentAttempt, ...] = ()
    recurrence_score: float = 0.0
    checksum_changed: bool = False
    alignment_required: bool = False
    #: Indexes of this round's findings that this issue accounts for.
    matched_findings: tuple[int, ...] = ()


class QualityState(BaseModel):
    """Everything a quality thread carries between steps (no manuscript text)."""

    session_id: str = ""
    episode_number: int = 0
    #: Who started the session (its initiator): ``flowkit serve`` shows the thread to them and
    #: to admins only, and fills this in itself for a thread started over HTTP.
    started_by: str = ""
    #: The manuscript being checked now, and the one before this round's fixes.
    manuscript_hash: str = ""
    previous_hash: str = ""
    phase: Literal["check", "recheck"] = "check"
    round: int = 0
    steps_done: int = 0
    open_issue_ids: list[str] = []
    open_before: int = 0
    plans: Annotated[list[PlannedFix], append] = []
    findings: list[Finding] = []
    verdicts: Annotated[list[VerdictItem], append] = []
    alignment_pending: list[str] = []
    alignment_answers: Annotated[list[AlignmentInput], append] = []
    alignments_applied: int = 0
    upload_pending: bool = False
    decision: str = ""
    metrics: dict[str, float] = {}
    messages: Annotated[list[str], append] = []


class UploadInput(BaseModel):
    """The manual-upload gate: nothing to say; the file was put in place (``quality upload``)."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=500)


class AlignmentInput(BaseModel):
    """The manual-alignment gate (QC-013): a person places one issue's range, or defers it."""

    model_config = ConfigDict(extra="forbid")

    issue_id: str = Field(pattern=r"^ISSUE-\d{13}-[0-9a-f]{8}$")
    start_char: int | None = Field(default=None, ge=0)
    end_char: int | None = Field(default=None, ge=0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    defer_reason: str | None = Field(default=None, min_length=1, max_length=500)

    @model_validator(mode="after")
    def _one_answer(self) -> AlignmentInput:
        placed = self.start_char is not None and self.end_char is not None
        if placed == (self.defer_reason is not None):
            raise ValueError("give either start_char and end_char, or defer_reason")
        if placed and self.end_char < self.start_char:  # type: ignore[operator]
            raise ValueError("end_char is before start_char")
        return self


QualityState.model_rebuild()
