"""``load_manuscript`` and the ``manual_upload`` gate: get the manuscript by hash (§3.4)."""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, node
from ...quality.errors import ManualUploadPending
from ...quality.services import QualityServices
from ...quality.state import QualityState, UploadInput
from ._common import deps_of, record_fetches, step_record

__all__ = ["after_upload", "load_manuscript"]


@node(
    reads=["session_id", "manuscript_hash", "steps_done"],
    writes=["upload_pending", "steps_done", "messages"],
)
def load_manuscript(state: QualityState, ctx: Context[QualityServices]) -> dict[str, Any]:
    services = deps_of(ctx)
    try:
        text = services.text(state.manuscript_hash, session_id=state.session_id)
    except ManualUploadPending as exc:
        record_fetches(services)
        services.store.commit()
        services.audit.record(
            "manual_upload_requested",
            session_id=state.session_id,
            performed_by=services.principal.user_id,
            qc_code=exc.qc_code,
        )
        return {"upload_pending": True, "messages": [f"QC-017: {exc}"]}
    except BaseException:
        record_fetches(services)
        services.store.commit()  # the failed attempts are kept
        raise
    record_fetches(services)
    services.store.record_step_execution(
        step_record(
            state,
            "load_manuscript",
            output_hash=state.manuscript_hash,
            manuscript_hash_refs=(state.manuscript_hash,),
        )
    )
    services.store.commit()
    return {
        "upload_pending": False,
        "steps_done": state.steps_done + 1,
        "messages": [f"manuscript {state.manuscript_hash[:12]} loaded ({len(text)} chars)"],
    }


def after_upload(state: QualityState, value: UploadInput) -> dict[str, Any]:
    """The upload gate's answer: try the fetch chain again."""
    return {"upload_pending": False}
