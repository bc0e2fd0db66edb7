"""What a session's files in the JSON-file store hold: the compacted ``Document`` (the session
and all its records), the journal's ``Change`` lines (one per commit), and ``SessionData``, the
state they make when the changes are applied to the document in order.

Both are versioned by ``format_version``: layout 1 was a document alone, rewritten whole by
every commit; layout 2 (this one) adds the journal. A layout-1 document reads as a layout-2
one with an empty journal (``_session_files`` rewrites it at the session's next commit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from ..models import Issue, IssueResolution, ManuscriptFetchLog, Session, StepExecution

__all__ = ["LAYOUT_VERSION", "Change", "Document", "SessionData"]

#: Version of the document and journal layout (1: one document rewritten by every commit).
LAYOUT_VERSION: Final = 2


class Change(BaseModel):
    """One commit, a journal line: the session as it became and the records the unit wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format_version: Literal[2] = 2
    kind: Literal["commit"] = "commit"
    session: Session
    issues: tuple[Issue, ...] = ()
    resolutions: tuple[IssueResolution, ...] = ()
    steps: tuple[StepExecution, ...] = ()
    fetch_log: tuple[ManuscriptFetchLog, ...] = ()


class Document(BaseModel):
    """The compacted document (layout 1 or 2; same fields, 1 had no journal beside it)."""

    format_version: Literal[1, 2]
    session: Session
    issues: dict[str, Issue] = {}
    resolutions: list[IssueResolution] = []
    steps: list[StepExecution] = []
    fetch_log: list[ManuscriptFetchLog] = []


@dataclass
class SessionData:
    """A session and its records, validated once; records keep the order they first came in,
    and a later version of a record (same key) replaces it in place."""

    session: Session
    issues: dict[str, Issue] = field(default_factory=dict)
    resolutions: dict[tuple[str, int], IssueResolution] = field(default_factory=dict)
    steps: dict[tuple[int, int], StepExecution] = field(default_factory=dict)
    fetch_log: list[ManuscriptFetchLog] = field(default_factory=list)

    @classmethod
    def of(cls, document: Document) -> SessionData:
        return cls(
            session=document.session,
            issues=dict(document.issues),
            resolutions={(r.issue_id, r.resolution_attempt): r for r in document.resolutions},
            steps={(s.step_id, s.attempt): s for s in document.steps},
            fetch_log=list(document.fetch_log),
        )

    def apply(self, change: Change) -> None:
        self.session = change.session
        self.issues.update((i.issue_id, i) for i in change.issues)
        self.resolutions.update(((r.issue_id, r.resolution_attempt), r) for r in change.resolutions)
        self.steps.update(((s.step_id, s.attempt), s) for s in change.steps)
        self.fetch_log.extend(change.fetch_log)

    def document(self) -> bytes:
        """The compacted document of this state (its records are validated already)."""
        document = Document.model_construct(
            format_version=LAYOUT_VERSION,
            session=self.session,
            issues=self.issues,
            resolutions=list(self.resolutions.values()),
            steps=list(self.steps.values()),
            fetch_log=self.fetch_log,
        )
        return document.model_dump_json().encode()
