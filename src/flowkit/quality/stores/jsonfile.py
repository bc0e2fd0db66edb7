"""``JsonWorkflowStateStore``: the workflow state store on plain files.

One JSON document per session (``sessions/<session_id>.json``) holds the session and all its
records; a commit rewrites it through a temporary file renamed over it (``_atomic``), so a
reader or a crash sees the whole unit or none of it. Episode locks are ``flock`` locks on
``locks/EP<n>.lock``, held as long as the handle holds the session: the kernel drops them when
the process dies, so a killed run never leaves an episode locked. Commits of one session are
serialised across processes by a short lock on ``locks/<session_id>.commit``, under which the
stored ``state_version`` is checked.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...foundation._atomic import write_atomically
from ...foundation._untrusted import parse_json
from ..errors import StatePersistenceError
from ..ids import episode_of
from ..models import (
    FORMAT_VERSION,
    Issue,
    IssueResolution,
    ManuscriptFetchLog,
    Session,
    StepExecution,
)
from ._corrupt import corrupt_state
from ._staged import StagedStore, Unit, stale

__all__ = ["JsonWorkflowStateStore"]


class _Document(BaseModel):
    """What a session document must hold to be read (its records are read from it later)."""

    session: Session
    issues: dict[str, Issue] = {}
    resolutions: list[IssueResolution] = []
    steps: list[StepExecution] = []
    fetch_log: list[ManuscriptFetchLog] = []


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
            raise _persist_error("create", self.root, exc) from exc
        self._lock_fds: dict[int, int] = {}
        self._issue_index: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"JsonWorkflowStateStore({str(self.root)!r})"

    # -- documents -----------------------------------------------------------------------------

    def _path(self, session_id: str) -> Path:
        return self._sessions / f"{session_id}.json"

    def _doc(self, session_id: str) -> dict[str, Any] | None:
        path = self._path(session_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _persist_error("read", path, exc) from exc
        try:
            doc = parse_json(raw, what="session document", path=str(path), max_bytes=None)
            if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
                raise ValueError("not a session document of this version")
            _Document.model_validate(doc)  # every record readable, or none is trusted
        except ValueError as exc:  # also not UTF-8, too deep, or a record of the wrong shape
            raise corrupt_state(
                session_id,
                store="json",
                where=str(path),
                fix="restore the file from a backup or remove it to drop the session.",
                cause=exc,
            ) from exc
        for issue_id in doc.get("issues", {}):
            self._issue_index[issue_id] = session_id
        return doc

    def _read_session(self, session_id: str) -> Session | None:
        doc = self._doc(session_id)
        return Session.model_validate(doc["session"]) if doc else None

    def _session_ids(self, episode_number: int | None) -> list[str]:
        try:
            names = [p.stem for p in self._sessions.glob("QC_EP*.json")]
        except OSError as exc:
            raise _persist_error("list", self._sessions, exc) from exc
        return sorted(n for n in names if episode_number is None or episode_of(n) == episode_number)

    def _read_issues(self, session_id: str) -> list[Issue]:
        doc = self._doc(session_id) or {}
        return [Issue.model_validate(v) for v in doc.get("issues", {}).values()]

    def _read_resolutions(self, session_id: str) -> list[IssueResolution]:
        doc = self._doc(session_id) or {}
        return [IssueResolution.model_validate(v) for v in doc.get("resolutions", [])]

    def _read_steps(self, session_id: str) -> list[StepExecution]:
        doc = self._doc(session_id) or {}
        return [StepExecution.model_validate(v) for v in doc.get("steps", [])]

    def _read_fetch(self, session_id: str) -> list[ManuscriptFetchLog]:
        doc = self._doc(session_id) or {}
        return [ManuscriptFetchLog.model_validate(v) for v in doc.get("fetch_log", [])]

    def _issue_session(self, issue_id: str) -> str | None:
        if issue_id not in self._issue_index:
            for session_id in self._session_ids(None):
                self._doc(session_id)  # fills the index
        return self._issue_index.get(issue_id)

    def _apply(self, unit: Unit, session: Session) -> None:
        assert unit.session_id is not None
        with self._commit_lock(unit.session_id):
            doc = self._doc(unit.session_id)
            stored = Session.model_validate(doc["session"]).state_version if doc else None
            if stored != unit.expected:
                raise stale(unit.session_id, unit.expected, stored)
            doc = doc or {"format_version": FORMAT_VERSION, "issues": {}}
            doc["session"] = session.model_dump(mode="json")
            doc.setdefault("issues", {}).update(
                {k: v.model_dump(mode="json") for k, v in unit.issues.items()}
            )
            doc["resolutions"] = _merge(
                doc.get("resolutions", []),
                {(r.issue_id, r.resolution_attempt): r for r in unit.resolutions.values()},
                lambda d: (d["issue_id"], d["resolution_attempt"]),
            )
            doc["steps"] = _merge(
                doc.get("steps", []),
                {(s.step_id, s.attempt): s for s in unit.steps.values()},
                lambda d: (d["step_id"], d["attempt"]),
            )
            doc["fetch_log"] = [
                *doc.get("fetch_log", []),
                *(f.model_dump(mode="json") for f in unit.fetch),
            ]
            path = self._path(unit.session_id)
            data = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            try:
                write_atomically(path, data, fsync=self.fsync, private=True)
            except OSError as exc:
                raise _persist_error("write", path, exc) from exc
        for issue_id in unit.issues:
            self._issue_index[issue_id] = unit.session_id

    @contextlib.contextmanager
    def _commit_lock(self, session_id: str) -> Iterator[None]:
        path = self._locks / f"{session_id}.commit"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _persist_error("open", path, exc) from exc
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
            raise _persist_error("open", path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            raise _persist_error("lock", path, exc) from exc
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


def _merge(
    stored: list[dict[str, Any]], new: dict[Any, Any], key: Callable[[dict[str, Any]], Any]
) -> list[dict[str, Any]]:
    """``stored`` with the records of ``new`` replacing those of the same key, order kept."""
    out: list[dict[str, Any]] = []
    pending = {k: v.model_dump(mode="json") for k, v in new.items()}
    for item in stored:
        out.append(pending.pop(key(item), item))
    out.extend(pending.values())
    return out


def _persist_error(action: str, path: Path, exc: OSError) -> StatePersistenceError:
    return StatePersistenceError(
        f"Cannot {action} {path}: {exc.strerror or exc}. Nothing of the unit was written; fix "
        "the permissions or free disk space, then retry."
    )
