"""The read side every ``WorkflowStateStore`` backend shares: committed data seen through the
access rule (a session's history is readable by its initiator and by administrators).

Apart from ``StagedStore`` because reads never touch the staged unit, its versions or its
locks: a backend supplies the raw reads below, this class checks ids and the reader.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ...foundation._logging import get_logger
from ..errors import (
    AccessDeniedError,
    CorruptStateError,
    IssueNotFoundError,
    QualityInputError,
    SessionNotFoundError,
)
from ..ids import ISSUE_ID, SESSION_ID, check_episode
from ..models import (
    HEX64,
    Issue,
    IssueResolution,
    ManuscriptFetchLog,
    Principal,
    Session,
    StepExecution,
)

__all__ = ["ReadableStore", "check_manuscript_hash", "check_principal", "check_session_id"]


class ReadableStore(ABC):
    """Reads of committed data, each checked against its reader; see ``WorkflowStateStore``."""

    # -- what a backend provides ---------------------------------------------------------------

    @abstractmethod
    def _read_session(self, session_id: str) -> Session | None: ...

    @abstractmethod
    def _session_ids(self, episode_number: int | None) -> list[str]: ...

    @abstractmethod
    def _read_issues(self, session_id: str) -> list[Issue]: ...

    @abstractmethod
    def _read_issue(self, issue_id: str) -> tuple[Issue, Session] | None:
        """One issue by id and the session holding it, read on their own (a plan or a verdict
        per issue reads one)."""

    @abstractmethod
    def _read_resolutions(self, session_id: str) -> list[IssueResolution]: ...

    @abstractmethod
    def _read_steps(self, session_id: str) -> list[StepExecution]: ...

    @abstractmethod
    def _read_fetch(self, session_id: str) -> list[ManuscriptFetchLog]: ...

    @abstractmethod
    def _issue_session(self, issue_id: str) -> str | None: ...

    # -- reads checked against their reader ----------------------------------------------------

    def get_session(self, session_id: str, *, principal: Principal) -> Session:
        check_principal(principal)
        session = self._read_session(check_session_id(session_id))
        if session is None:
            raise SessionNotFoundError(
                f"No session {session_id}; `flowkit quality history` lists the sessions.",
                session_id=session_id,
            )
        _check_access(session, principal)
        return session

    def sessions(self, episode_number: int | None = None, *, principal: Principal) -> list[Session]:
        check_principal(principal)
        if episode_number is not None:
            check_episode(episode_number)
        found: list[Session] = []
        for session_id in self._session_ids(episode_number):
            try:
                session = self._read_session(session_id)
            except CorruptStateError as exc:
                if episode_number is not None:
                    raise  # the episode's own damage, as its next check would meet it
                # Listing every episode: one damaged session does not hide the others.
                get_logger().warning(
                    "quality_session_unreadable", session_id=session_id, qc_code=exc.qc_code
                )
                continue
            if session is not None:
                found.append(session)
        readable = [s for s in found if principal.admin or s.initiator == principal.user_id]
        return sorted(readable, key=lambda s: (s.created_at, s.session_id), reverse=True)

    def latest_session(self, episode_number: int, *, principal: Principal) -> Session | None:
        found = self.sessions(episode_number, principal=principal)
        return found[0] if found else None

    def issues(self, session_id: str, *, principal: Principal) -> list[Issue]:
        self.get_session(session_id, principal=principal)
        return self._read_issues(session_id)

    def issue(self, issue_id: str, *, principal: Principal) -> Issue:
        check_principal(principal)
        if not isinstance(issue_id, str) or not ISSUE_ID.match(issue_id):
            raise QualityInputError(f"{issue_id!r} is not an issue id (ISSUE-<ms>-<hex>).")
        found = self._read_issue(issue_id)
        if found is None:
            raise IssueNotFoundError(f"No issue {issue_id}.", issue_id=issue_id)
        _check_access(found[1], principal)
        return found[0]

    def resolutions(self, session_id: str, *, principal: Principal) -> list[IssueResolution]:
        self.get_session(session_id, principal=principal)
        return self._read_resolutions(session_id)

    def step_executions(self, session_id: str, *, principal: Principal) -> list[StepExecution]:
        self.get_session(session_id, principal=principal)
        return self._read_steps(session_id)

    def fetch_log(self, session_id: str, *, principal: Principal) -> list[ManuscriptFetchLog]:
        self.get_session(session_id, principal=principal)
        return self._read_fetch(session_id)


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not SESSION_ID.match(session_id):
        raise QualityInputError(
            f"{str(session_id)[:80]!r} is not a session id (QC_EP<episode>_<YYYYMMDD>_<HHMM>)."
        )
    return session_id


def check_manuscript_hash(manuscript_hash: object) -> None:
    """``None`` or a hex SHA-256; the message never repeats the value (it may be text)."""
    if manuscript_hash is not None and (
        not isinstance(manuscript_hash, str) or not HEX64.match(manuscript_hash)
    ):
        raise QualityInputError(
            "manuscript_hash is the SHA-256 of the manuscript's text, 64 characters 0-9a-f "
            "(flowkit.quality.models.sha256_text), or None."
        )


def check_principal(principal: object) -> None:
    if not isinstance(principal, Principal):
        raise AccessDeniedError(
            "Every read and every new session names its reader: pass principal=Principal(...)."
        )


def _check_access(session: Session, principal: Principal) -> None:
    if not principal.admin and session.initiator != principal.user_id:
        raise AccessDeniedError(
            f"Session {session.session_id} belongs to its initiator; only they and "
            "administrators may read it.",
            session_id=session.session_id,
        )
