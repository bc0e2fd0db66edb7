"""The quality workflow (seed 003): check a manuscript with an LLM, fix, re-check, and decide
per issue whether it was resolved, came back or was only partly fixed, every step persisted.

``from flowkit.quality import build_flow`` gives the flow; the state store, the manuscript
fetch chain, range re-mapping and the QC codes are in their own modules here. See
docs/quality.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import QualityError, error_envelope, qc_code_for
    from .lifecycle import Verification, enforce, verdict
    from .models import (
        Issue,
        IssueResolution,
        IterationPolicy,
        ManuscriptFetchLog,
        Principal,
        Session,
        SessionContext,
        StepExecution,
        TextRange,
    )

__all__ = [
    "Issue",
    "IssueResolution",
    "IterationPolicy",
    "ManuscriptFetchLog",
    "Principal",
    "QualityError",
    "Session",
    "SessionContext",
    "StepExecution",
    "TextRange",
    "Verification",
    "enforce",
    "error_envelope",
    "qc_code_for",
    "session_access",
    "verdict",
]

_LAZY = {
    "Issue": ".models",
    "IssueResolution": ".models",
    "IterationPolicy": ".models",
    "ManuscriptFetchLog": ".models",
    "Principal": ".models",
    "QualityError": ".errors",
    "Session": ".models",
    "SessionContext": ".models",
    "StepExecution": ".models",
    "TextRange": ".models",
    "Verification": ".lifecycle",
    "enforce": ".lifecycle",
    "error_envelope": ".errors",
    "qc_code_for": ".errors",
    "session_access": ".access",
    "verdict": ".lifecycle",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowkit.quality' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
