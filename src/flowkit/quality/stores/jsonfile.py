"""``JsonWorkflowStateStore``: the workflow state store on plain files.

Each session is a document (``sessions/<session_id>.json``, the session and all its records)
plus a journal of the commits since (``<session_id>.jsonl``, one checksummed, fsync'd line per
commit), folded into a new document now and then (``_session_files``): a commit costs what it
changed, and a reader or a crash sees the whole unit or none of it. A handle keeps the sessions
it read in memory and reads only what changed on disk since. Episode locks are ``flock`` locks on
``locks/EP<n>.lock``, held as long as the handle holds the session: the kernel drops them when
the process dies, so a killed run never leaves an episode locked. Commits of one session are
serialised across processes by a short lock on ``locks/<session_id>.commit``, under which the
stored ``state_version`` is checked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

from ..errors import CorruptStateError
from ..ids import episode_of
from ..models import Issue, IssueResolution, ManuscriptFetchLog, Session, StepExecution
from ._session_data import Change
from ._session_files import SessionFiles, persist_error
from ._staged import StagedStore, Unit, stale

__all__ = ["JsonWorkflowStateStore"]


class JsonWorkflowStateStore(StagedStore):
    """A ``WorkflowStateStore`` in the folder ``root`` (created when missing)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self.root = Path(root)
        self.fsync = fsync
        self._sessions = self.root / "sessions"
        self._locks = self.root / "locks"
        try:
            self._sessions.mkdir(parents=True, exist_ok=True)
            self._locks.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise persist_error("create", self.root, exc) from exc
        self._lock_fds: dict[int, int] = {}
        self._issue_index: dict[str, str] = {}
        self._files = SessionFiles(self._sessions, fsync=fsync)
        self._files.on_issues = self._index

    def __repr__(self) -> str:
        return f"JsonWorkflowStateStore({str(self.root)!r})"

    # -- sessions --------------------------------------------------------------------------------

    def _index(self, session_id: str, issue_ids: Iterable[str]) -> None:
        for issue_id in issue_ids:
            self._issue_index[issue_id] = session_id

    def _read_session(self, session_id: str) -> Session | None:
        return self._files.read(session_id, lambda d: d.session)

    def _session_ids(self, episode_number: int | None) -> list[str]:
        try:
            names = [p.stem for p in self._sessions.glob("QC_EP*.json")]
        except OSError as exc:
            raise persist_error("list", self._sessions, exc) from exc
        # Only session ids: a copy beside them (``QC_EP001_..._backup.json``) is no session.
        found = ((n, episode_of(n)) for n in names)
        return sorted(n for n, ep in found if ep is not None and episode_number in (None, ep))

    def _read_issues(self, session_id: str) -> list[Issue]:
        return self._files.read(session_id, lambda d: list(d.issues.values())) or []

    def _read_issue(self, issue_id: str) -> tuple[Issue, Session] | None:
        session_id = self._issue_session(issue_id)
        if session_id is None:
            return None
        found = self._files.read(session_id, lambda d: (d.issues.get(issue_id), d.session))
        return (found[0], found[1]) if found and found[0] else None

    def _read_resolutions(self, session_id: str) -> list[IssueResolution]:
        return self._files.read(session_id, lambda d: list(d.resolutions.values())) or []

    def _read_steps(self, session_id: str) -> list[StepExecution]:
        return self._files.read(session_id, lambda d: list(d.steps.values())) or []

    def _read_fetch(self, session_id: str) -> list[ManuscriptFetchLog]:
        return self._files.read(session_id, lambda d: list(d.fetch_log)) or []

    def _issue_session(self, issue_id: str) -> str | None:
        """The session holding ``issue_id`` (reading sessions fills the index). A damaged
        session stops the search only if the issue is in no other: it may be in that one."""
        if issue_id not in self._issue_index:
            damage: CorruptStateError | None = None
            for session_id in self._session_ids(None):
                try:
                    self._read_session(session_id)
                except CorruptStateError as exc:
                    damage = damage or exc
                if issue_id in self._issue_index:
                    break
            if issue_id not in self._issue_index and damage is not None:
                raise damage
        return self._issue_index.get(issue_id)

    def _apply(self, unit: Unit, session: Session) -> None:
        assert unit.session_id is not None
        with self._commit_lock(unit.session_id):
            stored = self._files.read(unit.session_id, lambda d: d.session.state_version)
            if stored != unit.expected:
                raise stale(unit.session_id, unit.expected, stored)
            change = Change(
                session=session,
                issues=tuple(unit.issues.values()),
                resolutions=tuple(unit.resolutions.values()),
                steps=tuple(unit.steps.values()),
                fetch_log=tuple(unit.fetch),
            )
            self._files.commit(unit.session_id, change, new=stored is None)

    @contextlib.contextmanager
    def _commit_lock(self, session_id: str) -> Iterator[None]:
        path = self._locks / f"{session_id}.commit"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise persist_error("open", path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # commits are short: wait for the other writer
            yield
        finally:
            os.close(fd)  # closing drops the lock

    # -- episode locks -------------------------------------------------------------------------

    def _try_lock(self, episode_number: int) -> bool:
        if episode_number in self._lock_fds:
            return False  # this handle holds it for another session: still busy
        path = self._locks / f"EP{episode_number:04d}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise persist_error("open", path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            raise persist_error("lock", path, exc) from exc
        self._lock_fds[episode_number] = fd
        # Who holds it, for people looking at the folder; never read back for decisions.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f'{{"pid": {os.getpid()}}}\n'.encode(), 0)
        return True

    def _unlock(self, episode_number: int) -> None:
        fd = self._lock_fds.pop(episode_number, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)
