"""``WorkflowStateStore`` (seed 003 §4.1): sessions, steps, issues, resolutions and fetch logs
of quality sessions, written in atomic units.

Writes are staged: ``begin_session`` / ``record_*`` / ``append_fetch_log`` add to the current
unit; ``commit`` makes the whole unit visible at once (or nothing, raising); ``rollback`` drops
it and releases the episode lock a rolled-back ``begin_session`` / ``resume_session`` took. A
unit touches one session. Every commit checks the session's ``state_version`` against the one
this handle last saw and raises ``StaleStateError`` when another writer moved it (§6.3).

Reads see committed data only and take the reader explicitly (§6.2): a session's history is
readable by its initiator and by administrators; anyone else gets ``AccessDeniedError``.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from ..models import (
    Issue,
    IssueResolution,
    IterationPolicy,
    ManuscriptFetchLog,
    Principal,
    Session,
    SessionContext,
    StepExecution,
)

__all__ = ["WorkflowStateStore"]


@runtime_checkable
class WorkflowStateStore(Protocol):
    """Persists session/step/issue state of quality sessions (seed 003 §4.1)."""

    # -- writes (staged until commit) ----------------------------------------------------------

    def begin_session(
        self,
        episode_number: int,
        iteration_policy: IterationPolicy,
        *,
        principal: Principal,
        manuscript_hash: str | None = None,
    ) -> SessionContext:
        """Create a session and take the episode lock; ``SessionBusyError`` when another
        session holds it or the episode has an active session (resume that one instead)."""
        ...

    def resume_session(self, session_id: str, *, principal: Principal) -> SessionContext:
        """Take the lock of an active session again (after a restart); busy when held."""
        ...

    def update_session(
        self,
        session_id: str,
        *,
        manuscript_hash: str | None = None,
        iteration_policy: IterationPolicy | None = None,
    ) -> None:
        """Change the session's current manuscript or policy (a policy joins its history)."""
        ...

    def end_session(self, session_id: str, status: Literal["completed", "failed"]) -> None:
        """Mark the session finished; its lock is released when the unit commits."""
        ...

    def release_session(self, session_id: str) -> None:
        """Let go of the session's lock, leaving it active (it waits for a person)."""
        ...

    def record_step_execution(self, payload: StepExecution) -> None:
        """Persist a step's inputs/outputs by hash (session+step+attempt: later wins)."""
        ...

    def record_issue(self, issue: Issue) -> None:
        """Store a new issue, or the new version of one (by ``issue_id``)."""
        ...

    def record_issue_resolution(self, resolution: IssueResolution) -> None:
        """Attach a resolution attempt and its verification (by issue and attempt)."""
        ...

    def append_fetch_log(self, log: ManuscriptFetchLog) -> None:
        """Track a manuscript fetch attempt."""
        ...

    def commit(self) -> None:
        """Make the unit visible atomically; on any failure nothing of it is."""
        ...

    def rollback(self) -> None:
        """Drop the unit and release the locks it took."""
        ...

    def close(self) -> None:
        """Roll back, release every lock this handle holds (sessions stay active)."""
        ...

    # -- reads (committed data; the reader must be allowed) -------------------------------

    def get_session(self, session_id: str, *, principal: Principal) -> Session: ...

    def sessions(self, episode_number: int | None = None, *, principal: Principal) -> list[Session]:
        """The sessions the principal may read, newest first."""
        ...

    def latest_session(self, episode_number: int, *, principal: Principal) -> Session | None:
        """The episode's newest session the principal may read, if any."""
        ...

    def issues(self, session_id: str, *, principal: Principal) -> list[Issue]: ...

    def issue(self, issue_id: str, *, principal: Principal) -> Issue: ...

    def resolutions(self, session_id: str, *, principal: Principal) -> list[IssueResolution]: ...

    def step_executions(self, session_id: str, *, principal: Principal) -> list[StepExecution]: ...

    def fetch_log(self, session_id: str, *, principal: Principal) -> list[ManuscriptFetchLog]: ...
