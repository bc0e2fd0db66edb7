"""Route tables of the quality workflow (seed 003), as data.

``issue_lifecycle`` decides what the re-check made of one issue (origin thresholds): Deferred
when the user postponed it; Partial when its range could not be placed (QC-013) or was placed
with confidence below 0.6; Recurrence when the recurrence score is at least 0.7, or when the
range's checksum is unchanged and the same category was found there again; Resolved when the
score is below 0.3 and the checksum changed; Partial in between.

The flow's tables route its nodes: after the manuscript fetch (on to the check, or to the
manual-upload gate on QC-017), after recording a round's verdicts (manual alignment gate when
an issue needs a person, another round while the ``IterationPolicy`` allows, else finish).
A node that fails (an LLM failure is QC-004) stops the thread at that node with the session
still active: running the same check again resumes it there.
"""

from __future__ import annotations

from typing import Any, Final

from ..definition._conditions import field, when
from ..definition._route_table import Route, RouteTable

__all__ = [
    "APPLY_ALIGNMENT",
    "APPLY_FIXES",
    "BEGIN_SESSION",
    "CHECK",
    "FINISH",
    "ISSUE_TRANSITIONS",
    "LOAD_MANUSCRIPT",
    "MANUAL_ALIGNMENT",
    "MANUAL_UPLOAD",
    "MIN_CONFIDENCE",
    "PLAN_FIXES",
    "RECHECK",
    "RECORD_VERDICTS",
    "RECURRENCE_AT",
    "RESOLVED_BELOW",
    "VERIFY",
    "issue_lifecycle",
    "route_after_check",
    "route_after_load",
    "route_after_verdicts",
]

#: A recurrence score below this, with the range's text changed, resolves the issue.
RESOLVED_BELOW: Final = 0.3
#: A recurrence score at or above this is a recurrence.
RECURRENCE_AT: Final = 0.7
#: A range placed with less confidence than this sends the issue back to Partial.
MIN_CONFIDENCE: Final = 0.6

# -- one issue: the verdict of a re-check ------------------------------------------------


def deferred(v: Any) -> bool:
    return bool(v.deferred)


def alignment_required(v: Any) -> bool:
    return bool(v.alignment_required)


def low_confidence(v: Any) -> bool:
    return v.confidence is not None and v.confidence < MIN_CONFIDENCE


def recurrence_score_high(v: Any) -> bool:
    return bool(v.recurrence_score >= RECURRENCE_AT)


def unchanged_same_category(v: Any) -> bool:
    return not v.checksum_changed and bool(v.category_matches)


def resolved(v: Any) -> bool:
    return bool(v.recurrence_score < RESOLVED_BELOW and v.checksum_changed)


#: Reads a ``flowkit.quality.lifecycle.Verification``; targets are issue states.
issue_lifecycle = RouteTable(
    "issue_lifecycle",
    [
        Route(when("deferred", deferred), "Deferred"),
        Route(when("alignment_required", alignment_required), "Partial"),
        Route(when("low_confidence", low_confidence), "Partial"),
        Route(when("recurrence_score_high", recurrence_score_high), "Recurrence"),
        Route(when("unchanged_same_category", unchanged_same_category), "Recurrence"),
        Route(when("resolved", resolved), "Resolved"),
    ],
    default="Partial",
)

#: Which state may follow which (New -> InProgress -> Resolved | Recurrence | Partial |
#: Deferred; a Partial issue is worked on again; a resumed session turns New and InProgress
#: into Partial). Resolved, Recurrence and Deferred are final for that issue id.
ISSUE_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "New": frozenset({"InProgress", "Partial", "Deferred"}),
    "InProgress": frozenset({"Resolved", "Recurrence", "Partial", "Deferred"}),
    "Partial": frozenset({"InProgress", "Resolved", "Recurrence", "Partial", "Deferred"}),
    "Resolved": frozenset(),
    "Recurrence": frozenset(),
    "Deferred": frozenset(),
}

# -- the flow --------------------------------------------------------------------------------

BEGIN_SESSION: Final = "begin_session"
LOAD_MANUSCRIPT: Final = "load_manuscript"
MANUAL_UPLOAD: Final = "manual_upload"
CHECK: Final = "check"
PLAN_FIXES: Final = "plan_fixes"
APPLY_FIXES: Final = "apply_fixes"
RECHECK: Final = "recheck"
VERIFY: Final = "verify"
RECORD_VERDICTS: Final = "record_verdicts"
MANUAL_ALIGNMENT: Final = "manual_alignment"
APPLY_ALIGNMENT: Final = "apply_alignment"
FINISH: Final = "finish"

#: After fetching the manuscript: QC-017 waits for an upload; else on to the first check.
route_after_load = RouteTable(
    "route_after_load", [Route(field("upload_pending"), MANUAL_UPLOAD)], default=CHECK
)

#: After the first check: nothing found ends the session passed.
route_after_check = RouteTable(
    "route_after_check", [Route(field("open_issue_ids"), PLAN_FIXES)], default=FINISH
)

#: After a round's verdicts (and after each manual alignment): a person places the ranges the
#: strategies could not (QC-013); else another round while the iteration policy allows
#: (``decision`` is what ``enforce`` said); else finish.
route_after_verdicts = RouteTable(
    "route_after_verdicts",
    [
        Route(field("alignment_pending"), MANUAL_ALIGNMENT),
        Route(field("decision").eq("continue") & field("open_issue_ids"), PLAN_FIXES),
    ],
    default=FINISH,
)
