"""The attempt marker: a versioned note, kept beside a thread's journal, that a node started.

It is its own module so that ``import flowkit`` does not pay for a model that only runs
with ``Runner(..., track_attempts=True)``; see ``flowkit.stores.AttemptMarks``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._records import FORMAT_VERSION

__all__ = ["AttemptMarker"]


class AttemptMarker(BaseModel):
    """A node started from checkpoint ``version`` (written before it runs, when enabled).

    Stores keep only the latest marker per thread, outside the journal. It is stale once the
    journal moves past ``version``; a current one on a thread nobody runs means the process
    died inside ``node`` (see ``flowkit.runtime.recovery``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = FORMAT_VERSION
    kind: Literal["attempt"] = "attempt"
    version: int
    node: str
    attempt: int = 1
    run_id: str | None = None
    ts: float
    #: How many earlier runs died inside this node at this checkpoint (each found by the next
    #: run as a current marker of another run): counted against ``max_recovery_attempts``.
    crashes: int = 0
