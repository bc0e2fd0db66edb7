"""``begin_session`` and ``finish``: the first and last steps of a quality session."""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, node
from ...quality.services import QualityServices
from ...quality.state import QualityState
from ._common import deps_of, step_record

__all__ = ["begin_session", "finish"]


@node(reads=["session_id", "manuscript_hash", "steps_done"], writes=["steps_done", "messages"])
def begin_session(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    store = services.store
    session = store.get_session(state.session_id, principal=services.principal)
    store.record_step_execution(
        step_record(state, "begin_session", manuscript_hash_refs=(state.manuscript_hash,))
    )
    store.commit()
    services.checks.update_manifest(
        state.session_id,
        episode_number=session.episode_number,
        initiator=session.initiator,
        created_at=session.created_at.isoformat(),
        status="active",
        policy_history=[p.model_dump() for p in session.policy_history],
        steps=[{"step": state.steps_done, "name": "begin_session"}],
    )
    services.audit.record(
        "session_started",
        session_id=state.session_id,
        performed_by=services.principal.user_id,
        metadata={"episode_number": session.episode_number},
    )
    return {
        "steps_done": state.steps_done + 1,
        "messages": [f"session {state.session_id} began on episode {session.episode_number}"],
    }


@node(
    reads=["session_id", "decision", "steps_done", "open_issue_ids", "metrics"],
    writes=["steps_done", "messages", "decision"],
)
def finish(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    store = services.store
    decision = state.decision
    if decision in ("", "continue"):
        decision = "passed" if not state.open_issue_ids else "stopped"
    store.record_step_execution(step_record(state, "finish"))
    store.end_session(state.session_id, "completed")
    store.commit()
    services.checks.update_manifest(
        state.session_id,
        status="completed",
        decision=decision,
        metrics=state.metrics,
        open_issues=list(state.open_issue_ids),
        steps=[{"step": state.steps_done, "name": "finish"}],
    )
    services.audit.record(
        "session_completed",
        session_id=state.session_id,
        performed_by=services.principal.user_id,
        metadata={"decision": decision, "open_issues": len(state.open_issue_ids)},
    )
    return {
        "steps_done": state.steps_done + 1,
        "decision": decision,
        "messages": [f"session completed ({decision}); {len(state.open_issue_ids)} open"],
    }
