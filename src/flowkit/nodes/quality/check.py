"""``check`` and ``recheck``: the LLM reads the whole manuscript against the check templates
and reports problems with the exact text they are in (UC-120-001, UC-120-002 step 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...definition._node import Context, node
from ...foundation._plain import counted
from ...quality.ids import new_issue_id
from ...quality.judge import locate, locate_findings
from ...quality.models import Issue, sha256_text
from ...quality.prompts import check_prompt
from ...quality.services import QualityServices
from ...quality.state import CheckReport, Finding, QualityState
from ._common import ask, deps_of, record_fetches, recorded, step_record

__all__ = ["check", "issues_from", "recheck"]


def issues_from(
    services: QualityServices,
    state: QualityState,
    text: str,
    findings: Sequence[Finding],
    *,
    skip: frozenset[int] = frozenset(),
) -> tuple[list[Issue], list[str]]:
    """New issues for the findings whose quote is in ``text`` (one per category and range, at
    most ``services.max_issues``: the most severe first); also returns a note per finding that
    could not be placed, and one on findings past the limit."""
    steps = {t.category: t.step_id for t in services.templates}
    issues: list[Issue] = []
    notes: list[str] = []
    seen: dict[tuple[str, int, int], int] = {}  # category and range -> its issue's index
    for index, (finding, placed) in enumerate(
        zip(findings, locate_findings(text, findings), strict=True)
    ):
        if index in skip:
            continue
        # A quote said more often than the manuscript has it repeats a finding: its first place.
        found = placed or locate(text, finding.quote)
        if found is None:
            notes.append(f"a {finding.category} finding quotes text not in the manuscript; skipped")
            continue
        key = (finding.category, found.start_char, found.end_char)
        if key in seen:  # the same problem reported again: the issue keeps the worst severity
            earlier = issues[seen[key]]
            if _SEVERITY_RANK[finding.severity] < _SEVERITY_RANK[earlier.severity]:
                issues[seen[key]] = earlier.model_copy(update={"severity": finding.severity})
            continue
        seen[key] = len(issues)
        issues.append(
            Issue(
                issue_id=new_issue_id(services.clock.now()),
                session_id=state.session_id,
                step_id=steps.get(finding.category, 0),
                manuscript_hash=sha256_text(text),
                text_range=found,
                range_checksum=sha256_text(text[found.start_char : found.end_char]),
                category=finding.category,
                severity=finding.severity,
                description=finding.description,
                suggested_fixes=(finding.suggested_fix,) if finding.suggested_fix else (),
            )
        )
    limit = services.max_issues
    if len(issues) > limit:
        notes.append(
            f"{len(issues) - limit} more findings than the {limit} issues a check records were "
            "left out (the least severe); raise max_issues (--max-issues) to record them"
        )
        issues = _most_severe(issues, limit)
    return issues, notes


_SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


def _most_severe(issues: list[Issue], limit: int) -> list[Issue]:
    """The ``limit`` most severe of ``issues`` (earlier first among equals), in their order."""
    ranked = sorted(range(len(issues)), key=lambda i: _SEVERITY_RANK[issues[i].severity])
    kept = set(ranked[:limit])
    return [issue for i, issue in enumerate(issues) if i in kept]


@node(
    reads=["session_id", "manuscript_hash", "steps_done"],
    writes=["open_issue_ids", "metrics", "steps_done", "messages", "open_before", "decision"],
)
def check(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    if recorded(services, state, "check"):  # committed before a crash: do not find them twice
        found = services.store.issues(state.session_id, principal=services.principal)
        open_ids = [i.issue_id for i in found if i.open]
        return {
            "open_issue_ids": open_ids,
            "open_before": len(open_ids),
            "steps_done": state.steps_done + 1,
            "decision": "" if open_ids else "passed",
            "messages": [f"check had found {len(found)} issues before the interruption"],
        }
    text = services.text(state.manuscript_hash, session_id=state.session_id)
    report, in_hash, out_hash = ask(
        services,
        ctx,
        state,
        "check",
        check_prompt(text, state.manuscript_hash, services.templates),
        CheckReport,
    )
    issues, notes = issues_from(services, state, text, report.issues)
    store = services.store
    record_fetches(services)
    for issue in issues:
        store.record_issue(issue)
    store.record_step_execution(
        step_record(
            state,
            "check",
            input_hash=in_hash,
            output_hash=out_hash,
            issues_detected=len(issues),
            manuscript_hash_refs=(state.manuscript_hash,),
        )
    )
    store.commit()
    for issue in issues:
        services.audit.record(
            "issue_detected",
            session_id=state.session_id,
            issue_id=issue.issue_id,
            performed_by=services.principal.user_id,
            metadata={"category": issue.category, "severity": issue.severity},
        )
    services.checks.update_manifest(
        state.session_id,
        metrics=report.metrics,
        steps=[{"step": state.steps_done, "name": "check", "issues": len(issues)}],
    )
    return {
        "open_issue_ids": [i.issue_id for i in issues],
        "open_before": len(issues),
        "metrics": report.metrics,
        "steps_done": state.steps_done + 1,
        "decision": "" if issues else "passed",
        "messages": [f"check found {len(issues)} issues", *notes],
    }


@node(
    reads=["session_id", "manuscript_hash", "steps_done", "round"],
    writes=["findings", "metrics", "steps_done", "messages"],
)
def recheck(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    text = services.text(state.manuscript_hash, session_id=state.session_id)
    report, in_hash, out_hash = ask(
        services, ctx, state, f"recheck_{state.round}",
        check_prompt(text, state.manuscript_hash, services.templates), CheckReport,
    )  # fmt: skip
    record_fetches(services)
    services.store.record_step_execution(
        step_record(
            state,
            "recheck",
            input_hash=in_hash,
            output_hash=out_hash,
            issues_detected=len(report.issues),
            manuscript_hash_refs=(state.manuscript_hash,),
        )
    )
    services.store.commit()
    return {
        "findings": list(report.issues),
        "metrics": report.metrics,
        "steps_done": state.steps_done + 1,
        "messages": [
            f"round {state.round}: re-check reported {counted(len(report.issues), 'problem')}"
        ],
    }
