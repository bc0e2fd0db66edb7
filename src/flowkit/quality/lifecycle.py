"""The issue lifecycle and the iteration policy, as pure functions over small models.

:func:`verdict` resolves ``routing.quality.issue_lifecycle`` for one re-checked issue;
:func:`check_transition` refuses a state change the lifecycle does not allow; :func:`enforce`
says whether another fix round may start under an ``IterationPolicy`` (seed UNIT-005).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..routing.quality import ISSUE_TRANSITIONS, issue_lifecycle
from .errors import QualityInputError
from .models import IssueState, IterationPolicy

__all__ = [
    "DECISIONS",
    "Decision",
    "Progress",
    "Verification",
    "check_transition",
    "enforce",
    "verdict",
]


class Verification(BaseModel):
    """What the re-check found about one issue: the facts the lifecycle table reads."""

    model_config = ConfigDict(frozen=True)

    recurrence_score: float = Field(default=0.0, ge=0.0, le=1.0)
    checksum_changed: bool = False
    category_matches: bool = False
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    alignment_required: bool = False
    deferred: bool = False


def verdict(verification: Verification) -> IssueState:
    """The state the issue moves to after its re-check."""
    state: IssueState = issue_lifecycle.resolve(verification)  # type: ignore[assignment]
    return state


def check_transition(issue_id: str, old: str, new: str) -> None:
    """Raise ``QualityInputError`` unless the lifecycle allows ``old -> new``."""
    if new not in ISSUE_TRANSITIONS.get(old, frozenset()):
        allowed = ", ".join(sorted(ISSUE_TRANSITIONS.get(old, ()))) or "nothing (it is final)"
        raise QualityInputError(
            f"Issue {issue_id} is {old}; it cannot become {new} (allowed: {allowed})."
        )


Decision = Literal["continue", "passed", "count_exhausted", "time_exhausted", "no_improvement"]
DECISIONS: Final[tuple[Decision, ...]] = (
    "continue",
    "passed",
    "count_exhausted",
    "time_exhausted",
    "no_improvement",
)


class Progress(BaseModel):
    """Where a session stands after a fix round."""

    model_config = ConfigDict(frozen=True)

    rounds_done: int = Field(ge=0)
    open_before: int = Field(ge=0, description="open issues when the round started")
    open_now: int = Field(ge=0)
    elapsed_sec: float = Field(ge=0.0)


def enforce(policy: IterationPolicy, progress: Progress) -> Decision:
    """Whether another round starts, else why not; the first limit reached wins.

    Nothing open with ``until_pass`` is ``passed``; then ``count`` rounds done; then the time
    budget spent; then a round that closed less than ``min_improvement`` of what was open.
    """
    if progress.open_now == 0 and policy.until_pass:
        return "passed"
    if progress.rounds_done >= policy.count:
        return "count_exhausted"
    if policy.time_budget_sec is not None and progress.elapsed_sec >= policy.time_budget_sec:
        return "time_exhausted"
    if policy.min_improvement > 0 and progress.rounds_done > 0:
        closed = progress.open_before - progress.open_now
        improvement = closed / progress.open_before if progress.open_before else 0.0
        if improvement < policy.min_improvement:
            return "no_improvement"
    return "continue"
