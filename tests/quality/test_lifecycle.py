"""The issue lifecycle route table, the transitions it allows, and IterationPolicy.enforce
(UNIT-QUALITY-120-005), row by row."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.quality.errors import QualityInputError
from flowkit.quality.lifecycle import Progress, Verification, check_transition, enforce, verdict
from flowkit.quality.models import IterationPolicy
from flowkit.routing.quality import ISSUE_TRANSITIONS, issue_lifecycle
from flowkit.testing import RouteCase, assert_routes

V = Verification


def test_issue_lifecycle_table() -> None:
    assert_routes(
        issue_lifecycle,
        [
            RouteCase(V(recurrence_score=0.1, checksum_changed=True), "Resolved", "fixed"),
            RouteCase(V(recurrence_score=0.29, checksum_changed=True), "Resolved", "just below"),
            RouteCase(V(recurrence_score=0.3, checksum_changed=True), "Partial", "0.3 is not <"),
            RouteCase(V(recurrence_score=0.1, checksum_changed=False), "Partial", "text same"),
            RouteCase(V(recurrence_score=0.5, checksum_changed=True), "Partial", "in between"),
            RouteCase(V(recurrence_score=0.69, checksum_changed=True), "Partial", "below 0.7"),
            RouteCase(V(recurrence_score=0.7, checksum_changed=True), "Recurrence", "0.7 is >="),
            RouteCase(V(recurrence_score=0.95, checksum_changed=False), "Recurrence", "high"),
            RouteCase(
                V(recurrence_score=0.2, checksum_changed=False, category_matches=True),
                "Recurrence",
                "checksum and category both match",
            ),
            RouteCase(
                V(recurrence_score=0.2, checksum_changed=True, category_matches=True),
                "Resolved",
                "category alone does not make a recurrence",
            ),
            RouteCase(
                V(recurrence_score=0.1, checksum_changed=True, confidence=0.59),
                "Partial",
                "confidence < 0.6 goes back to Partial",
            ),
            RouteCase(
                V(recurrence_score=0.1, checksum_changed=True, confidence=0.6),
                "Resolved",
                "0.6 is enough",
            ),
            RouteCase(V(recurrence_score=0.9, alignment_required=True), "Partial", "QC-013 first"),
            RouteCase(V(recurrence_score=0.9, deferred=True), "Deferred", "user deferred"),
            RouteCase(V(deferred=True, alignment_required=True), "Deferred", "deferral wins"),
        ],
    )


@given(
    score=st.floats(0, 1),
    changed=st.booleans(),
    same_category=st.booleans(),
    confidence=st.none() | st.floats(0, 1),
)
def test_verdict_is_always_a_post_check_state(
    score: float, changed: bool, same_category: bool, confidence: float | None
) -> None:
    state = verdict(
        V(
            recurrence_score=score,
            checksum_changed=changed,
            category_matches=same_category,
            confidence=confidence,
        )
    )
    assert state in ISSUE_TRANSITIONS["InProgress"]
    if confidence is not None and confidence < 0.6:
        assert state == "Partial"
    elif score >= 0.7:
        assert state == "Recurrence"


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("New", "InProgress", True),
        ("New", "Partial", True),
        ("New", "Deferred", True),
        ("New", "Resolved", False),
        ("InProgress", "Resolved", True),
        ("InProgress", "Recurrence", True),
        ("InProgress", "New", False),
        ("Partial", "InProgress", True),
        ("Resolved", "InProgress", False),
        ("Recurrence", "Partial", False),
        ("Deferred", "New", False),
    ],
)
def test_transitions(old: str, new: str, ok: bool) -> None:
    if ok:
        check_transition("ISSUE-1", old, new)
    else:
        with pytest.raises(QualityInputError, match=f"cannot become {new}"):
            check_transition("ISSUE-1", old, new)


def P(rounds: int, before: int, now: int, elapsed: float = 0.0) -> Progress:
    return Progress(rounds_done=rounds, open_before=before, open_now=now, elapsed_sec=elapsed)


@pytest.mark.parametrize(
    ("policy", "progress", "decision"),
    [
        (IterationPolicy(count=2), P(1, 3, 1), "continue"),
        (IterationPolicy(count=2), P(2, 3, 1), "count_exhausted"),
        (IterationPolicy(count=5), P(1, 3, 0), "passed"),
        (IterationPolicy(count=1), P(1, 3, 0), "passed"),
        (IterationPolicy(count=5, until_pass=False), P(1, 3, 0), "continue"),
        (IterationPolicy(count=5, until_pass=False), P(5, 3, 0), "count_exhausted"),
        (IterationPolicy(count=5, time_budget_sec=60), P(1, 3, 2, 59.9), "continue"),
        (IterationPolicy(count=5, time_budget_sec=60), P(1, 3, 2, 60.0), "time_exhausted"),
        (IterationPolicy(count=1, time_budget_sec=60), P(1, 3, 2, 99), "count_exhausted"),
        (IterationPolicy(count=5, min_improvement=0.5), P(1, 4, 2), "continue"),
        (IterationPolicy(count=5, min_improvement=0.5), P(1, 4, 3), "no_improvement"),
        (IterationPolicy(count=5, min_improvement=0.5), P(1, 0, 1), "no_improvement"),
    ],
)
def test_UNIT_QUALITY_120_005_iteration_policy_enforce(
    policy: IterationPolicy, progress: Progress, decision: str
) -> None:
    assert enforce(policy, progress) == decision


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("count=2,until_pass", IterationPolicy(count=2, until_pass=True)),
        ("count=3, no_until_pass", IterationPolicy(count=3, until_pass=False)),
        ("time_budget_s=600", IterationPolicy(time_budget_sec=600)),
        ("min-improvement=0.25,count=4", IterationPolicy(count=4, min_improvement=0.25)),
        ("", IterationPolicy()),
    ],
)
def test_policy_parse(text: str, expected: IterationPolicy) -> None:
    assert IterationPolicy.parse(text) == expected


@pytest.mark.parametrize("text", ["count=0", "count=x", "speed=3", "until_pass=maybe", "count"])
def test_policy_parse_refuses_bad_items(text: str) -> None:
    with pytest.raises(QualityInputError):
        IterationPolicy.parse(text)
