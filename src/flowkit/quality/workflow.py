"""The quality flow (seed 003): begin session -> load manuscript -> check -> (plan fixes per
issue -> apply -> re-check -> verify per issue -> record verdicts)* -> finish.

``begin_session`` -> ``load_manuscript`` (gate ``manual_upload`` on QC-017) -> ``check`` ->
``plan_fixes`` (a ``Map``: one LLM plan per open issue) -> ``apply_fixes`` -> ``recheck`` ->
``verify`` (a ``Map``: place and judge each open issue) -> ``record_verdicts`` -> gate
``manual_alignment`` (QC-013) -> ``apply_alignment``, or ``plan_fixes`` again while the
``IterationPolicy`` allows, else ``finish``. The thread id is the session id.

The nodes close over a ``QualityServices`` (store, reader, clock, fetch chain, tools, logs);
``build_flow()`` without one gives the same graph for drawing, whose nodes refuse to run.
"""

from __future__ import annotations

from .._flow import Flow
from .._gate import Gate
from .._parallel import Map
from .._route_table import END
from ..nodes.quality._common import unconfigured
from ..nodes.quality.check import make_check, make_recheck
from ..nodes.quality.fixes import make_apply_fixes, make_plan_fix
from ..nodes.quality.manuscript import after_upload, make_load_manuscript
from ..nodes.quality.session import make_begin_session, make_finish
from ..nodes.quality.verify import (
    make_apply_alignment,
    make_record_verdicts,
    make_verify,
    take_alignment,
)
from ..routing import quality as routes
from .services import QualityServices
from .state import AlignmentInput, QualityState, UploadInput

__all__ = ["build_flow", "graph_flow"]


def _open(state: QualityState) -> list[str]:
    return list(state.open_issue_ids)


def _key(issue_id: str) -> str:
    return issue_id[-8:]


def build_flow(services: QualityServices | None = None, *, concurrency: int = 4) -> Flow:
    """The quality flow running with ``services`` (``None``: for graphs only)."""
    if services is None:
        nodes = {
            name: unconfigured
            for name in (
                routes.BEGIN_SESSION, routes.LOAD_MANUSCRIPT, routes.CHECK, routes.APPLY_FIXES,
                routes.RECHECK, routes.RECORD_VERDICTS, routes.APPLY_ALIGNMENT, routes.FINISH,
            )
        }  # fmt: skip
        plan, verify = unconfigured, unconfigured
    else:
        nodes = {
            routes.BEGIN_SESSION: make_begin_session(services),
            routes.LOAD_MANUSCRIPT: make_load_manuscript(services),
            routes.CHECK: make_check(services),
            routes.APPLY_FIXES: make_apply_fixes(services),
            routes.RECHECK: make_recheck(services),
            routes.RECORD_VERDICTS: make_record_verdicts(services),
            routes.APPLY_ALIGNMENT: make_apply_alignment(services),
            routes.FINISH: make_finish(services),
        }
        plan, verify = make_plan_fix(services), make_verify(services)
    return Flow(
        name="quality",
        description="Manuscript check -> fix -> re-check loop with issue lifecycle (seed 003)",
        state=QualityState,
        start=routes.BEGIN_SESSION,
        nodes={
            **nodes,
            routes.PLAN_FIXES: Map(
                plan, over=_open, key=_key, concurrency=concurrency, writes=frozenset({"plans"})
            ),
            routes.VERIFY: Map(
                verify,
                over=_open,
                key=_key,
                concurrency=concurrency,
                writes=frozenset({"verdicts"}),
            ),
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


def graph_flow() -> Flow:
    """The flow for ``flowkit graph quality`` (nodes do not run: use ``flowkit quality``)."""
    return build_flow()
