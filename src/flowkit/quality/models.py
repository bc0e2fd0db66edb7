"""The records of a quality session (seed 003 §4.2), as frozen pydantic models.

A record never holds manuscript text: a manuscript is named by the SHA-256 of its UTF-8 text
(``manuscript_hash``), a range by the SHA-256 of the text in it (``range_checksum``). A change
is a new model (``model_copy(update=...)``), so an id once issued never changes.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..foundation._plain import describe_validation_error

__all__ = [
    "ADJUSTMENT_STRATEGIES",
    "FORMAT_VERSION",
    "ISSUE_STATES",
    "OPEN_STATES",
    "AdjustmentAttempt",
    "AdjustmentStrategy",
    "Issue",
    "IssueResolution",
    "IssueState",
    "IterationPolicy",
    "ManuscriptFetchLog",
    "Principal",
    "Session",
    "SessionContext",
    "Severity",
    "StepExecution",
    "TextRange",
    "sha256_text",
]

#: Version of every record's JSON form; bumped when a field changes meaning.
FORMAT_VERSION: Final = 1

IssueState = Literal["New", "InProgress", "Resolved", "Recurrence", "Partial", "Deferred"]
ISSUE_STATES: Final[tuple[IssueState, ...]] = (
    "New",
    "InProgress",
    "Resolved",
    "Recurrence",
    "Partial",
    "Deferred",
)
#: States of an issue that still needs work; a resumed session turns New/InProgress to Partial.
#: A Recurrence is closed: the issue that came back is a new one listing it as related.
OPEN_STATES: Final[frozenset[str]] = frozenset({"New", "InProgress", "Partial"})
Severity = Literal["low", "medium", "high", "critical"]
AdjustmentStrategy = Literal["exact_match", "diff3", "semantic_search", "manual_confirmation"]
#: Seed 003 §3.3 ``range_adjustment_strategy``, in the order they are tried.
ADJUSTMENT_STRATEGIES: Final[tuple[AdjustmentStrategy, ...]] = (
    "exact_match",
    "diff3",
    "semantic_search",
    "manual_confirmation",
)

#: A hex SHA-256, as the store names manuscripts and ranges.
HEX64 = re.compile(r"^[0-9a-f]{64}$")
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="hex SHA-256")]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


def sha256_text(text: str) -> str:
    """The hex SHA-256 of ``text`` encoded as UTF-8: how manuscripts and ranges are named."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Principal(BaseModel):
    """Who reads or writes: a user id, and whether they are an administrator (§6.2)."""

    model_config = _FROZEN

    user_id: str = Field(min_length=1, max_length=200)
    admin: bool = False


class IterationPolicy(BaseModel):
    """When the fix loop stops (§4.2): after ``count`` rounds, once every issue passed
    (``until_pass``), after ``time_budget_sec`` or when a round improved less than
    ``min_improvement`` (the share of open issues it closed). The first one exhausted wins."""

    model_config = _FROZEN

    count: int = Field(default=2, ge=1, le=100)
    until_pass: bool = True
    time_budget_sec: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    min_improvement: float = Field(default=0.0, ge=0.0, le=1.0)

    @classmethod
    def parse(cls, text: str) -> IterationPolicy:
        """``"count=2,until_pass"`` (the CLI's ``--policy``); ``no_until_pass`` turns it off.

        Raises:
            QualityInputError: an unknown key or a value out of range.
        """
        from .errors import QualityInputError

        values: dict[str, Any] = {}
        for raw in text.split(","):
            word = raw.strip()
            if not word:
                continue
            key, eq, value = word.partition("=")
            key = key.strip().replace("-", "_")
            if key == "time_budget_s":  # the origin writes it both ways
                key = "time_budget_sec"
            if not eq and key in ("until_pass", "no_until_pass"):
                values["until_pass"] = key == "until_pass"
            elif eq and key in ("count", "until_pass", "time_budget_sec", "min_improvement"):
                values[key] = value.strip()
            else:
                raise QualityInputError(
                    f"Policy item {word!r} is not one of count=N, until_pass, no_until_pass, "
                    "time_budget_sec=N, min_improvement=F; write e.g. `count=2,until_pass`."
                )
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            reason = describe_validation_error(exc)
            raise QualityInputError(f"Policy {text!r} is not valid: {reason}") from exc


class Session(BaseModel):
    """One quality session on one episode (§4.2 ``Session``)."""

    model_config = _FROZEN

    session_id: str = Field(pattern=r"^QC_EP\d{3,4}_\d{8}_\d{4}(_\d+)?$")
    episode_number: int = Field(ge=1, le=9999)
    initiator: str
    iteration_policy: IterationPolicy = IterationPolicy()
    lock_status: Literal["held", "released"] = "held"
    created_at: datetime
    current_status: Literal["active", "completed", "failed"] = "active"
    state_version: int = 0
    manuscript_hash: Sha256 | None = None
    #: Every policy the session ran under, oldest first (a CLI override appends one).
    policy_history: tuple[IterationPolicy, ...] = ()
    format_version: int = FORMAT_VERSION


class SessionContext(BaseModel):
    """What ``begin_session`` hands back: the session and the version writes must match."""

    model_config = _FROZEN

    session: Session
    resumed: bool = False

    @property
    def session_id(self) -> str:
        return self.session.session_id


class TextRange(BaseModel):
    """Where an issue is: characters ``[start_char, end_char)``, lines 1-based inclusive."""

    model_config = _FROZEN

    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)
    start_line: int = Field(default=1, ge=1)
    end_line: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> TextRange:
        if self.end_char < self.start_char or self.end_line < self.start_line:
            raise ValueError("a range ends before it starts")
        return self

    @classmethod
    def of(cls, text: str, start: int, end: int) -> TextRange:
        """The range ``[start, end)`` of ``text`` with its line numbers."""
        start_line = text.count("\n", 0, start) + 1
        end_line = start_line + text.count("\n", start, max(start, end - 1))
        return cls(start_char=start, end_char=end, start_line=start_line, end_line=end_line)


class AdjustmentAttempt(BaseModel):
    """One try at finding an issue's range in a newer manuscript (§3.3)."""

    model_config = _FROZEN

    strategy: AdjustmentStrategy
    result: Literal["success", "failure", "required"]
    confidence: float = Field(ge=0.0, le=1.0)
    #: How far the range moved (characters, new start - old start) when it was found.
    adjustment_delta: int | None = None


class Issue(BaseModel):
    """One finding (§4.2 ``Issue``). ``issue_id`` never changes; a re-detection is a new
    issue whose ``related_issue_ids`` lists the one it came back from."""

    model_config = _FROZEN

    issue_id: str = Field(pattern=r"^ISSUE-\d{13}-[0-9a-f]{8}$")
    session_id: str
    step_id: int = Field(ge=0)
    manuscript_hash: Sha256
    text_range: TextRange
    range_checksum: Sha256
    category: str = Field(min_length=1, max_length=64)
    severity: Severity = "medium"
    state: IssueState = "New"
    description: str = Field(default="", max_length=4000)
    suggested_fixes: tuple[str, ...] = ()
    related_issue_ids: tuple[str, ...] = ()
    adjustment_method: AdjustmentStrategy | None = None
    confidence_score: float | None = Field(default=None, ge=0.0, le=1.0)
    adjustment_attempts: tuple[AdjustmentAttempt, ...] = ()
    defer_reason: str | None = None
    format_version: int = FORMAT_VERSION

    @field_validator("related_issue_ids")
    @classmethod
    def _ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if not re.fullmatch(r"ISSUE-\d{13}-[0-9a-f]{8}", item):
                raise ValueError(f"{item!r} is not an issue id")
        return value

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES


class IssueResolution(BaseModel):
    """One attempt to fix an issue and what the re-check said about it (§4.2)."""

    model_config = _FROZEN

    issue_id: str = Field(pattern=r"^ISSUE-\d{13}-[0-9a-f]{8}$")
    resolution_attempt: int = Field(ge=1)
    applied_fix_description: str = Field(default="", max_length=4000)
    applied_by: str = "llm"
    applied_at: datetime | None = None
    tool_used: str = ""
    #: Where the diff is kept (``artifact:<hash12>``); never the diff itself.
    diff_ref: str | None = None
    verification_status: Literal["pending", "passed", "recurrence", "partial", "deferred"] = (
        "pending"
    )
    verification_snapshot_id: Sha256 | None = None
    recurrence_score: float | None = Field(default=None, ge=0.0, le=1.0)
    recurrence_flag: bool = False
    format_version: int = FORMAT_VERSION


class ManuscriptFetchLog(BaseModel):
    """One attempt to fetch a manuscript by its hash (§3.4, §4.2)."""

    model_config = _FROZEN

    fetch_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    session_id: str
    manuscript_hash: Sha256
    tool_id: str
    result: Literal["success", "failure"]
    latency_ms: int = Field(ge=0)
    attempt_index: int = Field(ge=0)
    qc_code: str | None = None
    excerpt_hash: Sha256 | None = None
    excerpt_length: int | None = Field(default=None, ge=0)
    source_key: str | None = None
    #: The wait before this attempt (0, then 1000, 2000, 4000 ms).
    backoff_ms: int = Field(default=0, ge=0)
    format_version: int = FORMAT_VERSION


class StepExecution(BaseModel):
    """One step of a session and what went in and out, by hash (§4.1 ``record_step_execution``)."""

    model_config = _FROZEN

    session_id: str
    step_id: int = Field(ge=0)
    attempt: int = Field(default=1, ge=1)
    name: str
    input_hash: Sha256 | None = None
    output_hash: Sha256 | None = None
    issues_detected: int = Field(default=0, ge=0)
    duration_ms: int = Field(default=0, ge=0)
    fallback_reason: str | None = None
    available_tools: tuple[str, ...] = ()
    tool_selection_status: Literal["none", "selected", "unavailable"] = "none"
    manuscript_hash_refs: tuple[str, ...] = ()
    format_version: int = FORMAT_VERSION

    @field_validator("manuscript_hash_refs")
    @classmethod
    def _hashes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not HEX64.match(v) for v in value):
            raise ValueError("manuscript_hash_refs holds hex SHA-256 values only")
        return value
