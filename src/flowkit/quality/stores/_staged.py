"""What every ``WorkflowStateStore`` backend shares: the unit being staged, the versions this
handle saw and the episode locks it holds, on top of ``ReadableStore``'s reads and access rule
(``_reads``). A backend supplies raw reads, one atomic ``_apply`` of a unit (checking the
version) and a cross-process episode lock.

A write that meets a session whose stored state cannot be read (the backend raises
``CorruptStateError``) rolls its unit back and lets go of that session's episode lock before the
error reaches the caller (seed 003 §6.3), so the episode is not blocked until the process
exits and nothing staged is written by a later ``commit``."""

from __future__ import annotations

import contextlib
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from ...foundation._logging import get_logger
from ..errors import (
    CorruptStateError,
    IssueNotFoundError,
    QualityInputError,
    SessionBusyError,
    SessionNotFoundError,
    StaleStateError,
    StatePersistenceError,
)
from ..ids import check_episode, session_id_for
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
from ._reads import ReadableStore, check_manuscript_hash, check_principal, check_session_id

__all__ = ["StagedStore", "Unit", "stale"]


@dataclass
class Unit:
    """The changes staged since the last commit or rollback; they touch one session."""

    session_id: str | None = None
    #: The version the session had when the unit first touched it (``None``: a new session).
    expected: int | None = None
    session: Session | None = None
    issues: dict[str, Issue] = field(default_factory=dict)
    resolutions: dict[tuple[str, int], IssueResolution] = field(default_factory=dict)
    steps: dict[tuple[int, int], StepExecution] = field(default_factory=dict)
    fetch: list[ManuscriptFetchLog] = field(default_factory=list)
    #: Episode locks taken by this unit (released if it rolls back).
    locked: list[int] = field(default_factory=list)
    #: Whether committing releases the session's lock (end or release).
    releases: bool = False

    def empty(self) -> bool:
        return self.session_id is None


class StagedStore(ReadableStore):
    """Staging, versions and locks over access-checked reads; see ``WorkflowStateStore``."""

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self._unit = Unit()
        self._known: dict[str, int] = {}  # sessions whose lock this handle holds -> version
        self._held: dict[str, int] = {}  # session id -> episode, locks this handle holds
        self._mutex = threading.RLock()
        self._log = get_logger()

    # -- what a backend provides besides its reads ----------------------------------------------

    @abstractmethod
    def _apply(self, unit: Unit, session: Session) -> None:
        """Write ``session`` and the unit atomically, raising ``StaleStateError`` unless the
        stored version is ``unit.expected`` (or, for a new session, none is stored)."""

    @abstractmethod
    def _try_lock(self, episode_number: int) -> bool: ...

    @abstractmethod
    def _unlock(self, episode_number: int) -> None: ...

    # -- sessions ------------------------------------------------------------------------------

    def begin_session(
        self,
        episode_number: int,
        iteration_policy: IterationPolicy,
        *,
        principal: Principal,
        manuscript_hash: str | None = None,
    ) -> SessionContext:
        check_episode(episode_number)
        check_principal(principal)
        check_manuscript_hash(manuscript_hash)
        if not isinstance(iteration_policy, IterationPolicy):
            raise QualityInputError("iteration_policy must be an IterationPolicy.")
        with self._writing():
            self._fresh_unit("begin_session")
            if not self._try_lock(episode_number):
                raise SessionBusyError(
                    f"Episode {episode_number} is being checked by another session right now; "
                    "wait for it to finish (`flowkit quality status` shows it).",
                    episode_number=episode_number,
                )
            try:
                return self._begun(episode_number, iteration_policy, principal, manuscript_hash)
            except BaseException:  # no unit holds the lock yet: let it go here
                self._unlock(episode_number)
                raise

    def _begun(
        self,
        episode_number: int,
        iteration_policy: IterationPolicy,
        principal: Principal,
        manuscript_hash: str | None,
    ) -> SessionContext:
        """The new session's unit, the episode locked by the caller (who lets go on failure)."""
        ids = self._session_ids(episode_number)
        sessions = list(map(self._read_session, ids))
        active = [s for s in sessions if s and s.current_status == "active"]
        if active:
            newest = max(active, key=lambda s: s.created_at)
            raise SessionBusyError(
                f"Episode {episode_number} has an active session {newest.session_id}; "
                "resume it (running the same check again does) or end it first.",
                episode_number=episode_number,
            )
        now = self.clock()
        session = Session(
            session_id=session_id_for(episode_number, now, frozenset(ids)),
            episode_number=episode_number,
            initiator=principal.user_id,
            iteration_policy=iteration_policy,
            created_at=now,
            manuscript_hash=manuscript_hash,
            policy_history=(iteration_policy,),
        )
        self._unit = Unit(session_id=session.session_id, session=session, locked=[episode_number])
        return SessionContext(session=session)

    def resume_session(self, session_id: str, *, principal: Principal) -> SessionContext:
        with self._writing():
            current = self.get_session(session_id, principal=principal)
            if current.current_status != "active":
                raise QualityInputError(
                    f"Session {session_id} is {current.current_status}; start a new session."
                )
            self._fresh_unit("resume_session")
            if session_id not in self._held and not self._try_lock(current.episode_number):
                raise SessionBusyError(
                    f"Session {session_id} is being run by another process right now; wait "
                    "for it to finish.",
                    episode_number=current.episode_number,
                )
            session = current.model_copy(update={"lock_status": "held"})
            self._unit = Unit(
                session_id=session_id,
                expected=current.state_version,
                session=session,
                locked=[] if session_id in self._held else [current.episode_number],
            )
            return SessionContext(
                session=session.model_copy(update={"state_version": current.state_version + 1}),
                resumed=True,
            )

    def update_session(
        self,
        session_id: str,
        *,
        manuscript_hash: str | None = None,
        iteration_policy: IterationPolicy | None = None,
    ) -> None:
        check_manuscript_hash(manuscript_hash)
        if iteration_policy is not None and not isinstance(iteration_policy, IterationPolicy):
            raise QualityInputError("iteration_policy must be an IterationPolicy, or None.")
        with self._writing():
            session = self._staged_session(session_id)
            changes: dict[str, object] = {}
            if manuscript_hash is not None:
                changes["manuscript_hash"] = manuscript_hash
            if iteration_policy is not None and iteration_policy != session.iteration_policy:
                changes["iteration_policy"] = iteration_policy
                changes["policy_history"] = (*session.policy_history, iteration_policy)
            updated = Session.model_validate({**session.model_dump(), **changes})
            self._unit.session = updated

    def end_session(self, session_id: str, status: Literal["completed", "failed"]) -> None:
        if status not in ("completed", "failed"):
            raise QualityInputError(f"A session ends completed or failed, not {status!r}.")
        with self._writing():
            session = self._staged_session(session_id)
            self._unit.session = session.model_copy(
                update={"current_status": status, "lock_status": "released"}
            )
            self._unit.releases = True

    def release_session(self, session_id: str) -> None:
        with self._writing():
            session = self._staged_session(session_id)
            self._unit.session = session.model_copy(update={"lock_status": "released"})
            self._unit.releases = True

    # -- records -------------------------------------------------------------------------------

    def record_step_execution(self, payload: StepExecution) -> None:
        _check_type(payload, StepExecution, "record_step_execution")
        with self._writing():
            self._touch(payload.session_id)
            self._unit.steps[(payload.step_id, payload.attempt)] = payload

    def record_issue(self, issue: Issue) -> None:
        _check_type(issue, Issue, "record_issue")
        with self._writing():
            self._touch(issue.session_id)
            self._unit.issues[issue.issue_id] = issue

    def record_issue_resolution(self, resolution: IssueResolution) -> None:
        _check_type(resolution, IssueResolution, "record_issue_resolution")
        with self._writing():
            staged = self._unit.issues.get(resolution.issue_id)
            session_id = staged.session_id if staged else self._issue_session(resolution.issue_id)
            if session_id is None:
                raise IssueNotFoundError(
                    f"No issue {resolution.issue_id}; record the issue before its resolution.",
                    issue_id=resolution.issue_id,
                )
            self._touch(session_id)
            self._unit.resolutions[(resolution.issue_id, resolution.resolution_attempt)] = (
                resolution
            )

    def append_fetch_log(self, log: ManuscriptFetchLog) -> None:
        _check_type(log, ManuscriptFetchLog, "append_fetch_log")
        with self._writing():
            self._touch(log.session_id)
            self._unit.fetch.append(log)

    # -- units ---------------------------------------------------------------------------------

    def commit(self) -> None:
        with self._writing():
            unit = self._unit
            if unit.empty():
                return
            assert unit.session_id is not None
            version = 0 if unit.expected is None else unit.expected + 1
            try:
                base = unit.session or self._read_session(unit.session_id)
                if base is None:  # deleted under us
                    raise SessionNotFoundError(
                        f"Session {unit.session_id} no longer exists.", session_id=unit.session_id
                    )
                self._apply(unit, base.model_copy(update={"state_version": version}))
            except BaseException:
                self.rollback()
                raise
            self._unit = Unit()
            for episode in unit.locked:
                self._held[unit.session_id] = episode
            if unit.releases:
                self._known.pop(unit.session_id, None)
                released = self._held.pop(unit.session_id, None)
                if released is not None:
                    self._unlock(released)
            elif unit.session_id in self._held:
                self._known[unit.session_id] = version

    def rollback(self) -> None:
        with self._mutex:
            unit, self._unit = self._unit, Unit()
            for episode in unit.locked:
                self._unlock(episode)

    def close(self) -> None:
        with self._mutex:
            self.rollback()
            for session_id in list(self._held):
                try:
                    self.release_session(session_id)
                    self.commit()
                except Exception as exc:  # the lock goes anyway; the record says held
                    self._log.warning("quality_release_failed", error=type(exc).__name__)
                    episode = self._held.pop(session_id, None)
                    if episode is not None:
                        self._unlock(episode)
            self._known.clear()

    def __enter__(self) -> StagedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the handle for a write; one that meets damaged state rolls the unit back and
        lets go of the damaged session's lock (§6.3), then raises."""
        with self._mutex:
            try:
                yield
            except CorruptStateError as exc:
                self._drop_damaged(exc.session_id)
                raise

    def _drop_damaged(self, session_id: str) -> None:
        unit, self._unit = self._unit, Unit()
        episodes = list(unit.locked)
        self._known.pop(session_id, None)
        held = self._held.pop(session_id, None)
        if held is not None:
            episodes.append(held)
        for episode in episodes:
            try:
                self._unlock(episode)
            except StatePersistenceError as exc:  # a lost connection takes its locks with it
                self._log.warning("quality_unlock_failed", error=type(exc).__name__)

    def _fresh_unit(self, what: str) -> None:
        if not self._unit.empty():
            raise QualityInputError(
                f"{what} starts a unit of its own; commit or roll back the current one first."
            )

    def _touch(self, session_id: str) -> None:
        """Bind the unit to ``session_id`` (reading its version if this handle has none)."""
        check_session_id(session_id)
        unit = self._unit
        if unit.session_id == session_id:
            return
        if unit.session_id is not None:
            raise QualityInputError(
                f"This unit already writes session {unit.session_id}; commit it before "
                f"writing session {session_id} (a unit is atomic within one session)."
            )
        version = self._known.get(session_id)
        if version is None:
            current = self._read_session(session_id)
            if current is None:
                raise SessionNotFoundError(
                    f"No session {session_id}; begin it first.", session_id=session_id
                )
            version = current.state_version
        unit.session_id, unit.expected = session_id, version

    def _staged_session(self, session_id: str) -> Session:
        self._touch(session_id)
        if self._unit.session is None:
            current = self._read_session(session_id)
            if current is None:
                raise SessionNotFoundError(f"No session {session_id}.", session_id=session_id)
            self._unit.session = current
        return self._unit.session


def stale(session_id: str, expected: int | None, actual: int | None) -> StaleStateError:
    """The error of a commit whose session moved on (or appeared, or vanished) under it."""
    return StaleStateError(
        f"Session {session_id} was changed by another writer (version {actual}, this writer "
        f"had {expected}); nothing of this unit was written. Resume the session to continue.",
        session_id=session_id,
        expected=-1 if expected is None else expected,
        actual=-1 if actual is None else actual,
    )


def _check_type(value: object, kind: type, what: str) -> None:
    if not isinstance(value, kind):
        raise QualityInputError(f"{what} takes a {kind.__name__}, not {type(value).__name__}.")
