"""``verify`` (per open issue, on the parallel map: place its range in the new manuscript and
judge it), ``record_verdicts`` (store the round in one unit, raise new and recurring issues,
decide by the ``IterationPolicy``), the ``manual_alignment`` gate and ``apply_alignment``
(a person places a range the strategies could not: QC-013)."""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, node
from ...quality.errors import QualityInputError
from ...quality.ids import new_issue_id
from ...quality.judge import Judgement, judge, locate_findings
from ...quality.lifecycle import Progress, check_transition, enforce
from ...quality.models import AdjustmentAttempt, Issue, TextRange, sha256_text
from ...quality.remap import Placement
from ...quality.services import QualityServices
from ...quality.state import AlignmentInput, QualityState, VerdictItem
from ._common import deps_of, record_fetches, recorded, step_record
from .check import issues_from

__all__ = ["apply_alignment", "record_verdicts", "take_alignment", "verify"]

_STATUS = {"Resolved": "passed", "Recurrence": "recurrence", "Partial": "partial"}


def _item(round_: int, issue: Issue, verdict: Judgement, worked: bool) -> VerdictItem:
    placement = verdict.placement
    return VerdictItem(
        round=round_,
        issue_id=issue.issue_id,
        worked=worked,
        state=verdict.state,
        new_range=placement.range,
        new_checksum=verdict.new_checksum,
        method=placement.method,
        confidence=placement.confidence,
        attempts=placement.attempts,
        recurrence_score=verdict.recurrence_score,
        checksum_changed=verdict.checksum_changed,
        alignment_required=placement.range is None,
        matched_findings=verdict.matched,
    )


def verify(state: QualityState, issue_id: str, ctx: Context[QualityServices]) -> dict[str, Any]:
    """The per-issue function of the ``verify`` map: ``fn(state, issue_id)``."""
    services = deps_of(ctx)
    issue = services.store.issue(issue_id, principal=services.principal)
    sid = state.session_id
    remapper = services.remapper(issue.manuscript_hash, state.manuscript_hash, session_id=sid)
    worked = _fixed_this_round(services, state, issue)
    placement = remapper.place(issue.text_range, issue.range_checksum)
    verdict = judge(
        issue,
        placement,
        old_text=remapper.old,
        new_text=remapper.new,
        findings=state.findings,
        located=locate_findings(remapper.new, state.findings),
        embedder=services.embedder,
        worked=worked,
    )
    return {"verdicts": [_item(state.round, issue, verdict, worked)]}


def _fixed_this_round(services: QualityServices, state: QualityState, issue: Issue) -> bool:
    """Whether a fix of ``issue`` was applied this round and waits for its verdict: the issue
    is InProgress, or a resume since turned it Partial (§5.2) with the fix applied and its
    resolution still pending (the session stopped between ``apply_fixes`` and the verdicts)."""
    if issue.state == "InProgress":
        return True
    planned = any(
        p.round == state.round and p.issue_id == issue.issue_id and p.status == "planned"
        for p in state.plans
    )
    if issue.state != "Partial" or not planned:
        return False
    mine = [
        r
        for r in services.store.resolutions(state.session_id, principal=services.principal)
        if r.issue_id == issue.issue_id
    ]
    latest = max(mine, key=lambda r: r.resolution_attempt, default=None)
    return latest is not None and latest.verification_status == "pending"


def _updated(issue: Issue, item: VerdictItem, manuscript_hash: str) -> Issue:
    changes: dict[str, Any] = {
        "adjustment_attempts": (*issue.adjustment_attempts, *item.attempts),
        "adjustment_method": item.method if item.method else issue.adjustment_method,
        "confidence_score": item.confidence if item.method else issue.confidence_score,
    }
    if item.new_range is not None:
        changes.update(
            text_range=item.new_range,
            manuscript_hash=manuscript_hash,
            range_checksum=item.new_checksum,
        )
    if item.state != issue.state:
        check_transition(issue.issue_id, issue.state, item.state)
        changes["state"] = item.state
    return issue.model_copy(update=changes)


def _decide(services: QualityServices, state: QualityState, open_now: int) -> str:
    session = services.store.get_session(state.session_id, principal=services.principal)
    elapsed = (services.clock.now() - session.created_at).total_seconds()
    progress = Progress(
        rounds_done=state.round,
        open_before=state.open_before,
        open_now=open_now,
        elapsed_sec=max(0.0, elapsed),
    )
    return enforce(session.iteration_policy, progress)


def _open_ids(services: QualityServices, state: QualityState, manuscript_hash: str) -> list[str]:
    issues = services.store.issues(state.session_id, principal=services.principal)
    return [i.issue_id for i in issues if i.open and i.manuscript_hash == manuscript_hash]


@node(
    reads=["session_id", "verdicts", "round", "findings", "manuscript_hash", "steps_done"],
    writes=["open_issue_ids", "alignment_pending", "decision", "steps_done", "messages"],
)
def record_verdicts(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    who, sid = services.principal, state.session_id
    items = [v for v in state.verdicts if v.round == state.round]
    text = services.text(state.manuscript_hash, session_id=sid)
    notes: list[str] = []
    fresh: list[Issue] = []
    unplaced: list[str] = []
    if recorded(services, state, "record_verdicts"):  # committed before a crash
        notes.append(f"round {state.round}: verdicts were recorded before the interruption")
    else:
        fresh, unplaced = _record_items(services, state, items, text)
    pending = [v.issue_id for v in items if v.alignment_required]
    open_ids = _open_ids(services, state, state.manuscript_hash)
    decision = _decide(services, state, len(open_ids) + len(pending))
    counts: dict[str, int] = {}
    for item in items:
        counts[item.state] = counts.get(item.state, 0) + 1
        services.audit.record(
            "issue_verified", session_id=sid, issue_id=item.issue_id, performed_by=who.user_id,
            qc_code="QC-013" if item.alignment_required else None,
            metadata={"state": item.state, "recurrence_score": item.recurrence_score,
                      "adjustment_method": item.method, "confidence": item.confidence},
        )  # fmt: skip
    services.checks.update_manifest(
        sid,
        steps=[{"step": state.steps_done, "name": "record_verdicts", "round": state.round,
                "states": counts, "new_issues": len(fresh), "decision": decision}],
    )  # fmt: skip
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing open"
    notes.append(f"round {state.round}: {summary}; {len(fresh)} new; next: {decision}")
    if pending:
        notes.append(f"QC-013: {len(pending)} ranges need a person to place them")
    return {
        "open_issue_ids": open_ids,
        "alignment_pending": pending,
        "decision": decision,
        "steps_done": state.steps_done + 1,
        "messages": notes + unplaced,
    }


def _record_items(
    services: QualityServices, state: QualityState, items: list[VerdictItem], text: str
) -> tuple[list[Issue], list[str]]:
    """One unit: each verdict, the verified resolutions, the issues that came back and the
    new findings; returns the new issues and notes on findings that could not be placed."""
    store, who, sid = services.store, services.principal, state.session_id
    resolutions = store.resolutions(sid, principal=who)
    latest = {r.issue_id: r for r in sorted(resolutions, key=lambda r: r.resolution_attempt)}
    explained = {i for item in items for i in item.matched_findings}
    located = locate_findings(text, state.findings)
    record_fetches(services)
    for item in items:
        issue = store.issue(item.issue_id, principal=who)
        store.record_issue(_updated(issue, item, state.manuscript_hash))
        resolution = latest.get(item.issue_id)
        if item.worked and resolution is not None and item.state in _STATUS:
            store.record_issue_resolution(
                resolution.model_copy(
                    update={
                        "verification_status": _STATUS[item.state],
                        "verification_snapshot_id": state.manuscript_hash,
                        "recurrence_score": item.recurrence_score,
                        "recurrence_flag": item.state == "Recurrence",
                    }
                )
            )
        if item.state == "Recurrence" and item.new_range is not None:
            # The issue that came back is where the re-check found it.
            first = item.matched_findings[0] if item.matched_findings else None
            finding = state.findings[first] if first is not None else None
            where = (located[first] if first is not None else None) or item.new_range
            store.record_issue(
                issue.model_copy(
                    update={
                        "issue_id": new_issue_id(services.clock.now()),
                        "state": "New",
                        "text_range": where,
                        "manuscript_hash": state.manuscript_hash,
                        "range_checksum": sha256_text(text[where.start_char : where.end_char]),
                        "related_issue_ids": (*issue.related_issue_ids, issue.issue_id),
                        "description": finding.description if finding else issue.description,
                        "adjustment_attempts": (),
                        "adjustment_method": None,
                        "confidence_score": None,
                    }
                )
            )
    fresh, unplaced = issues_from(services, state, text, state.findings, skip=frozenset(explained))
    for issue in fresh:
        store.record_issue(issue)
    store.record_step_execution(
        step_record(
            state,
            "record_verdicts",
            issues_detected=len(fresh),
            manuscript_hash_refs=(state.manuscript_hash,),
        )
    )
    store.commit()
    return fresh, unplaced


def take_alignment(state: QualityState, value: AlignmentInput) -> dict[str, Any]:
    """The manual-alignment gate: accept an answer for an issue that waits for one."""
    if value.issue_id not in state.alignment_pending:
        waiting = ", ".join(state.alignment_pending) or "none"
        raise QualityInputError(
            f"Issue {value.issue_id} does not wait for manual alignment (waiting: {waiting})."
        )
    return {"alignment_answers": [value]}


def _verify_resolution(
    services: QualityServices, state: QualityState, issue_id: str, verdict: Judgement
) -> None:
    """Stage the verification of the issue's latest resolution."""
    mine = [
        r
        for r in services.store.resolutions(state.session_id, principal=services.principal)
        if r.issue_id == issue_id
    ]
    if mine:
        latest = max(mine, key=lambda r: r.resolution_attempt)
        services.store.record_issue_resolution(
            latest.model_copy(
                update={
                    "verification_status": _STATUS[verdict.state],
                    "verification_snapshot_id": state.manuscript_hash,
                    "recurrence_score": verdict.recurrence_score,
                    "recurrence_flag": verdict.state == "Recurrence",
                }
            )
        )


@node(
    reads=["session_id", "alignment_answers", "alignments_applied", "alignment_pending",
           "verdicts",
           "manuscript_hash", "findings", "round", "steps_done", "open_before"],
    writes=["alignments_applied", "alignment_pending", "open_issue_ids", "decision",
            "steps_done", "messages"],
)  # fmt: skip
def apply_alignment(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    store, who, sid = services.store, services.principal, state.session_id
    answers = state.alignment_answers[state.alignments_applied :]
    text = services.text(state.manuscript_hash, session_id=sid)
    pending = list(state.alignment_pending)
    # Fixed this round: their verdict waited for the range (they are Partial meanwhile).
    worked = {v.issue_id for v in state.verdicts if v.round == state.round and v.worked}
    notes: list[str] = []
    for answer in answers:
        if answer.issue_id not in pending:
            continue
        issue = store.issue(answer.issue_id, principal=who)
        if answer.defer_reason is not None:
            check_transition(issue.issue_id, issue.state, "Deferred")
            store.record_issue(
                issue.model_copy(update={"state": "Deferred", "defer_reason": answer.defer_reason})
            )
            notes.append(f"{issue.issue_id} deferred: {answer.defer_reason}")
        else:
            assert answer.start_char is not None and answer.end_char is not None
            if answer.end_char > len(text):
                raise QualityInputError(
                    f"The range {answer.start_char}:{answer.end_char} is past the end of "
                    f"the manuscript ({len(text)} characters)."
                )
            placed = TextRange.of(text, answer.start_char, answer.end_char)
            attempt = AdjustmentAttempt(
                strategy="manual_confirmation", result="success", confidence=answer.confidence
            )
            placement = Placement(placed, "manual_confirmation", answer.confidence, (attempt,))
            old_text = services.text(issue.manuscript_hash, session_id=sid)
            verdict = judge(
                issue, placement, old_text=old_text, new_text=text, findings=state.findings,
                located=locate_findings(text, state.findings), embedder=services.embedder,
                worked=answer.issue_id in worked,
            )  # fmt: skip
            item = _item(state.round, issue, verdict, answer.issue_id in worked)
            store.record_issue(_updated(issue, item, state.manuscript_hash))
            if answer.issue_id in worked and verdict.state in _STATUS:
                _verify_resolution(services, state, answer.issue_id, verdict)
            notes.append(f"{issue.issue_id} placed by hand at {placed.start_char}:"
                         f"{placed.end_char} -> {item.state}")  # fmt: skip
        pending.remove(answer.issue_id)
    record_fetches(services)
    store.record_step_execution(step_record(state, "apply_alignment"))
    store.commit()
    for answer in answers:
        services.audit.record(
            "range_confirmed" if answer.defer_reason is None else "issue_deferred",
            session_id=sid, issue_id=answer.issue_id, performed_by=who.user_id,
            tool_used="manual_confirmation", qc_code="QC-013",
            metadata={"confidence": answer.confidence, "reason": answer.defer_reason},
        )  # fmt: skip
    open_ids = _open_ids(services, state, state.manuscript_hash)
    return {
        "alignments_applied": len(state.alignment_answers),
        "alignment_pending": pending,
        "open_issue_ids": open_ids,
        "decision": _decide(services, state, len(open_ids) + len(pending)),
        "steps_done": state.steps_done + 1,
        "messages": notes,
    }
