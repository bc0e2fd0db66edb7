"""The quality flow (seed 003): begin session -> load manuscript -> check -> (plan fixes per
issue -> apply -> re-check -> verify per issue -> record verdicts)* -> finish.

``begin_session`` -> ``load_manuscript`` (gate ``manual_upload`` on QC-017) -> ``check`` ->
``plan_fixes`` (a ``Map``: one LLM plan per open issue) -> ``apply_fixes`` -> ``recheck`` ->
``verify`` (a ``Map``: place and judge each open issue) -> ``record_verdicts`` -> gate
``manual_alignment`` (QC-013) -> ``apply_alignment``, or ``plan_fixes`` again while the
``IterationPolicy`` allows, else ``finish``. The thread id is the session id.

The nodes get their collaborators (state store, reader, clock, fetch chain, tools, logs) as
the run's deps: ``Runner(flow, deps=QualityServices(...))``; ``QualityChecker`` does that.
"""

from __future__ import annotations

from ..definition._flow import Flow
from ..definition._gate import Gate
from ..definition._parallel import Map
from ..definition._route_table import END
from ..nodes.quality.check import check, recheck
from ..nodes.quality.fixes import apply_fixes, plan_fix
from ..nodes.quality.manuscript import after_upload, load_manuscript
from ..nodes.quality.session import begin_session, finish
from ..nodes.quality.verify import apply_alignment, record_verdicts, take_alignment, verify
from ..routing import quality as routes
from .state import AlignmentInput, QualityState, UploadInput

__all__ = ["build_flow", "flow"]


def _open(state: QualityState) -> list[str]:
    return list(state.open_issue_ids)


def _key(issue_id: str) -> str:
    return issue_id[-8:]


def build_flow(*, concurrency: int = 4) -> Flow:
    """The quality flow; ``concurrency`` bounds the per-issue LLM calls running at once."""
    return Flow(
        name="quality",
        description="Manuscript check -> fix -> re-check loop with issue lifecycle",
        state=QualityState,
        start=routes.BEGIN_SESSION,
        nodes={
            routes.BEGIN_SESSION: begin_session,
            routes.LOAD_MANUSCRIPT: load_manuscript,
            routes.CHECK: check,
            routes.PLAN_FIXES: Map(
                plan_fix,
                over=_open,
                key=_key,
                concurrency=concurrency,
                writes=frozenset({"plans"}),
            ),
            routes.APPLY_FIXES: apply_fixes,
            routes.RECHECK: recheck,
            routes.VERIFY: Map(
                verify,
                over=_open,
                key=_key,
                concurrency=concurrency,
                writes=frozenset({"verdicts"}),
            ),
            routes.RECORD_VERDICTS: record_verdicts,
            routes.APPLY_ALIGNMENT: apply_alignment,
            routes.FINISH: finish,
        },
        gates={
            routes.MANUAL_UPLOAD: Gate(
                UploadInput,
                apply=after_upload,
                writes=["upload_pending"],
                description="upload the manuscript (QC-017): flowkit quality upload",
            ),
            routes.MANUAL_ALIGNMENT: Gate(
                AlignmentInput,
                apply=take_alignment,
                writes=["alignment_answers"],
                description="place an issue's range by hand (QC-013): flowkit quality resolve",
            ),
        },
        routes={
            routes.BEGIN_SESSION: routes.LOAD_MANUSCRIPT,
            routes.LOAD_MANUSCRIPT: routes.route_after_load,
            routes.MANUAL_UPLOAD: routes.LOAD_MANUSCRIPT,
            routes.CHECK: routes.route_after_check,
            routes.PLAN_FIXES: routes.APPLY_FIXES,
            routes.APPLY_FIXES: routes.RECHECK,
            routes.RECHECK: routes.VERIFY,
            routes.VERIFY: routes.RECORD_VERDICTS,
            routes.RECORD_VERDICTS: routes.route_after_verdicts,
            routes.MANUAL_ALIGNMENT: routes.APPLY_ALIGNMENT,
            routes.APPLY_ALIGNMENT: routes.route_after_verdicts,
            routes.FINISH: END,
        },
    )


flow = build_flow()
