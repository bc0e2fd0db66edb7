"""``plan_fixes`` (one LLM call per open issue, on the engine's parallel map) and
``apply_fixes`` (apply the plans, keep the new manuscript and the diff by hash, record a
resolution per fixed issue) — UC-120-002 steps 1 and 2."""

from __future__ import annotations

import difflib
from typing import Any

from ...definition._node import Context, node
from ...foundation._plain import counted
from ...quality.errors import ToolUnavailableError
from ...quality.fetch import excerpt
from ...quality.lifecycle import check_transition
from ...quality.models import Issue, IssueResolution
from ...quality.prompts import plan_prompt
from ...quality.services import QualityServices
from ...quality.state import FixProposal, PlannedFix, QualityState
from ...quality.tools import Edit, apply_edits
from ._common import ask, deps_of, record_fetches, recorded, step_record

__all__ = ["apply_fixes", "plan_fix"]


def plan_fix(state: QualityState, issue_id: str, ctx: Context[QualityServices]) -> dict[str, Any]:
    """The per-issue function of the ``plan_fixes`` map: ``fn(state, issue_id, ctx)``."""
    services = deps_of(ctx)
    round_ = state.round + 1
    issue = services.store.issue(issue_id, principal=services.principal)
    try:
        offered = services.toolbox.available(issue.category)
    except ToolUnavailableError as exc:
        plan = PlannedFix(round=round_, issue_id=issue_id, status="unavailable",
                          description=str(exc), qc_code=exc.qc_code)  # fmt: skip
        return {"plans": [plan]}
    text = services.text(issue.manuscript_hash, session_id=state.session_id)  # verified
    piece = excerpt(text, issue.text_range, manuscript_hash=issue.manuscript_hash)
    messages = plan_prompt(issue, piece, services.toolbox, offered)
    proposal, _, _ = ask(
        services, ctx, state, f"plan_{round_}_{issue_id[-8:]}", messages, FixProposal
    )
    if proposal.defer:
        plan = PlannedFix(
            round=round_,
            issue_id=issue_id,
            status="skipped",
            description=proposal.description,
            available_tools=offered,
        )
        return {"plans": [plan]}
    try:
        tool = services.toolbox.choose(issue.category, proposal.tool)
    except ToolUnavailableError as exc:
        plan = PlannedFix(round=round_, issue_id=issue_id, status="unavailable",
                          tool=proposal.tool, description=str(exc),
                          available_tools=offered, qc_code=exc.qc_code)  # fmt: skip
        return {"plans": [plan]}
    old = text[issue.text_range.start_char : issue.text_range.end_char]
    plan = PlannedFix(
        round=round_,
        issue_id=issue_id,
        status="planned",
        tool=tool.name,
        replacement=tool.apply(old, proposal.replacement),
        description=proposal.description,
        available_tools=offered,
    )
    return {"plans": [plan]}


@node(
    reads=["session_id", "manuscript_hash", "plans", "round", "open_issue_ids", "steps_done"],
    writes=[
        "manuscript_hash",
        "previous_hash",
        "round",
        "open_before",
        "steps_done",
        "messages",
    ],
)
def apply_fixes(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    round_ = state.round + 1
    store, who = services.store, services.principal
    plans = [p for p in state.plans if p.round == round_]
    text = services.text(state.manuscript_hash, session_id=state.session_id)
    issues = {i: store.issue(i, principal=who) for i in state.open_issue_ids}
    edits = [
        Edit(p.issue_id, issues[p.issue_id].text_range, p.replacement)
        for p in plans
        if p.status == "planned"
        and p.issue_id in issues
        and issues[p.issue_id].manuscript_hash == state.manuscript_hash
    ]
    new_text, applied, skipped = apply_edits(text, edits)
    new_hash = services.keep(new_text)
    diff_ref = None
    if applied:
        diff = "".join(difflib.unified_diff(
            text.splitlines(keepends=True), new_text.splitlines(keepends=True),
            fromfile=state.manuscript_hash[:12], tofile=new_hash[:12],
        ))  # fmt: skip
        diff_ref = f"artifact:{services.artifacts.put(diff)[:12]}"
    by_issue = {p.issue_id: p for p in plans}
    unavailable = [p for p in plans if p.status == "unavailable"]
    if not recorded(services, state, "apply_fixes"):  # else: committed before a crash
        _record_round(
            services, state, round_, issues, by_issue, applied, skipped, new_hash, diff_ref
        )
    return {
        "manuscript_hash": new_hash,
        "previous_hash": state.manuscript_hash,
        "round": round_,
        "open_before": len(state.open_issue_ids),
        "steps_done": state.steps_done + 1,
        "messages": [
            f"round {round_}: {counted(len(applied), 'fix', 'fixes')} applied, "
            f"{len(unavailable)} {'needs' if len(unavailable) == 1 else 'need'} a tool that is "
            f"not available (QC-012), {len(skipped)} skipped"
        ],
    }


def _record_round(
    services: QualityServices,
    state: QualityState,
    round_: int,
    issues: dict[str, Issue],
    by_issue: dict[str, PlannedFix],
    applied: list[Edit],
    skipped: list[Edit],
    new_hash: str,
    diff_ref: str | None,
) -> None:
    """One unit: the fixed issues InProgress, a resolution each, the session's new manuscript
    and the step; then the audit lines."""
    store, who = services.store, services.principal
    plans = list(by_issue.values())
    tools = sorted({t for p in plans for t in p.available_tools})
    unavailable = [p for p in plans if p.status == "unavailable"]
    now = services.clock.now()
    attempts: dict[str, int] = {}
    for r in store.resolutions(state.session_id, principal=who):
        attempts[r.issue_id] = max(attempts.get(r.issue_id, 0), r.resolution_attempt)
    record_fetches(services)
    for edit in applied:
        issue, plan = issues[edit.issue_id], by_issue[edit.issue_id]
        check_transition(issue.issue_id, issue.state, "InProgress")
        store.record_issue(issue.model_copy(update={"state": "InProgress"}))
        store.record_issue_resolution(
            IssueResolution(
                issue_id=issue.issue_id,
                resolution_attempt=attempts.get(issue.issue_id, 0) + 1,
                applied_fix_description=plan.description,
                applied_by=who.user_id,
                applied_at=now,
                tool_used=plan.tool,
                diff_ref=diff_ref,
            )
        )
    store.update_session(state.session_id, manuscript_hash=new_hash)
    store.record_step_execution(
        step_record(
            state,
            "apply_fixes",
            input_hash=state.manuscript_hash,
            output_hash=new_hash,
            available_tools=tuple(tools),
            tool_selection_status="unavailable"
            if unavailable and not applied
            else ("selected" if applied else "none"),
            fallback_reason="; ".join(p.description for p in unavailable)[:500] or None,
            manuscript_hash_refs=(state.manuscript_hash, new_hash),
        )
    )
    store.commit()
    for edit in applied:
        services.audit.record("fix_applied", session_id=state.session_id,
                              issue_id=edit.issue_id, performed_by=who.user_id,
                              tool_used=by_issue[edit.issue_id].tool,
                              metadata={"round": round_, "diff_ref": diff_ref})  # fmt: skip
    for plan in unavailable:
        services.audit.record("tool_unavailable", session_id=state.session_id,
                              issue_id=plan.issue_id, performed_by=who.user_id,
                              tool_used=plan.tool or None, qc_code=plan.qc_code)  # fmt: skip
    for edit in skipped:
        services.audit.record("fix_skipped", session_id=state.session_id,
                              issue_id=edit.issue_id, performed_by=who.user_id,
                              metadata={"reason": "overlaps another fix"})  # fmt: skip
