"""The audit trail and the per-session I/O logs of the quality workflow (seed 003 §8).

``AuditLog`` appends one JSON line per action to ``audit/<YYYYMM>/audit.log`` (``timestamp,
session_id, issue_id, action, performed_by, tool_used, qc_code, metadata``) and ``archive``
moves every entry older than ``keep_days`` (90, §6.2) into ``audit/archive/<YYYYMM>.log.gz``.
``ChecksLog`` keeps each session's LLM inputs and outputs under ``checks/<session_id>/`` with a
``manifest.json`` that lists them and the session's policy history. Files are private (0600):
they hold manuscript excerpts. Writing one costs the same however many the session has: the
file list is the folder's, read when the manifest is.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..foundation._atomic import write_atomically
from ._retention import KEEP_DAYS
from .errors import QualityInputError, StatePersistenceError
from .ids import SESSION_ID

__all__ = ["KEEP_DAYS", "AuditEntry", "AuditLog", "ChecksLog", "check_keep_days"]

_MONTH = re.compile(r"^\d{6}$")
#: Appends share it, an archive takes it alone: no entry is appended to a month file while
#: the archive rewrites it, in this process or another.
_LOCK_FILE = ".lock"


class AuditEntry(BaseModel):
    """One audited action."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timestamp: datetime
    session_id: str
    issue_id: str | None = None
    action: str
    performed_by: str
    tool_used: str | None = None
    qc_code: str | None = None
    metadata: dict[str, Any] = {}


def check_keep_days(keep_days: object) -> int:
    """``keep_days`` as a whole number of days (0 or more), or a ``QualityInputError``."""
    if isinstance(keep_days, bool) or not isinstance(keep_days, int) or keep_days < 0:
        raise QualityInputError(
            f"keep_days must be a whole number of days, 0 or more (the seed keeps {KEEP_DAYS}); "
            f"got {str(keep_days)[:20]!r}."
        )
    return keep_days


class AuditLog:
    """Monthly JSON-lines audit files under ``root``; entries older than ``keep_days`` are
    moved to ``archive/`` by ``archive``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        clock: Callable[[], datetime] | None = None,
        keep_days: int = KEEP_DAYS,
    ) -> None:
        self.root = Path(root)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.keep_days = check_keep_days(keep_days)
        self._lock = threading.Lock()

    def record(
        self,
        action: str,
        *,
        session_id: str,
        performed_by: str,
        issue_id: str | None = None,
        tool_used: str | None = None,
        qc_code: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AuditEntry:
        entry = AuditEntry(
            timestamp=self.clock(),
            session_id=session_id,
            issue_id=issue_id,
            action=action,
            performed_by=performed_by,
            tool_used=tool_used,
            qc_code=qc_code,
            metadata=dict(metadata or {}),
        )
        path = self.root / entry.timestamp.astimezone(UTC).strftime("%Y%m") / "audit.log"
        line = entry.model_dump_json() + "\n"
        with self._lock:
            try:
                with self._locked(fcntl.LOCK_SH):
                    try:
                        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                    except FileNotFoundError:  # a new month (or one an archive emptied)
                        path.parent.mkdir(parents=True, exist_ok=True)
                        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                    try:
                        os.write(fd, line.encode("utf-8"))
                    finally:
                        os.close(fd)
            except OSError as exc:
                raise StatePersistenceError(
                    f"Cannot append to the audit log {path}: {exc.strerror}."
                ) from exc
        return entry

    def entries(self, month: str | None = None) -> list[AuditEntry]:
        """The entries of ``month`` (``YYYYMM``; default: every month still kept), in order."""
        if month is not None and not _MONTH.match(month):
            raise QualityInputError(f"{month!r} is not a month as YYYYMM.")
        folders = [self.root / month] if month else sorted(self._months())
        out: list[AuditEntry] = []
        for folder in folders:
            path = folder / "audit.log"
            if path.is_file():
                lines = path.read_text(encoding="utf-8").splitlines()
                out.extend(AuditEntry.model_validate_json(line) for line in lines if line)
        return out

    def archive(self, *, now: datetime | None = None, keep_days: int | None = None) -> list[Path]:
        """Move every entry older than ``keep_days`` (default: the log's setting) into
        ``archive/<YYYYMM>.log.gz``, one gzip file per month; returns the files written.

        An entry is moved once: a month archived again adds only what is new to its file, and
        a month left empty is removed. A line that cannot be read stays where it is.
        """
        days = self.keep_days if keep_days is None else check_keep_days(keep_days)
        cutoff = (now or self.clock()) - timedelta(days=days)
        done: list[Path] = []
        if not self.root.is_dir():
            return done
        with self._lock, self._locked(fcntl.LOCK_EX):
            for folder in sorted(self._months()):
                year, month = int(folder.name[:4]), int(folder.name[4:])
                if datetime(year, month, 1, tzinfo=UTC) >= cutoff:
                    continue  # the month began after the cutoff: all of it is kept
                target = self._archive_month(folder, cutoff)
                if target is not None:
                    done.append(target)
        return done

    def _archive_month(self, folder: Path, cutoff: datetime) -> Path | None:
        source = folder / "audit.log"
        try:
            lines = source.read_text(encoding="utf-8").splitlines() if source.is_file() else []
            old: list[str] = []
            kept: list[str] = []
            for line in filter(None, lines):
                (old if _older(line, cutoff) else kept).append(line)
            target = self.root / "archive" / f"{folder.name}.log.gz"
            if old:
                already = _archived_lines(target)
                seen = set(already)
                merged = already + [line for line in old if line not in seen]
                target.parent.mkdir(parents=True, exist_ok=True)
                data = "".join(f"{line}\n" for line in merged).encode("utf-8")
                write_atomically(target, gzip.compress(data), private=True)
            if kept and old:
                write_atomically(source, "".join(f"{line}\n" for line in kept), private=True)
            elif not kept:
                shutil.rmtree(folder)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise StatePersistenceError(f"Cannot archive the audit month {folder}: {exc}.") from exc
        return target if old else None

    @contextlib.contextmanager
    def _locked(self, how: int) -> Iterator[None]:
        try:
            fd = os.open(self.root / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)  # closing lets go of the lock

    def _months(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [p for p in self.root.iterdir() if p.is_dir() and _MONTH.match(p.name)]


def _older(line: str, cutoff: datetime) -> bool:
    try:
        return AuditEntry.model_validate_json(line).timestamp < cutoff
    except ValidationError:
        return False  # unreadable: kept in place for a person to look at


def _archived_lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [
        line for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines() if line
    ]


class ChecksLog:
    """``checks/<session_id>/``: numbered ``*_input.json`` / ``*_output.json`` files and a
    ``manifest.json`` listing them, the steps and the policy history.

    A file appears whole under its final name (written aside, fsync'd, then linked, which
    never replaces a file), so writes of parallel steps need no lock around their I/O; the
    folder is fsync'd with the next manifest (each step that updates it), one folder flush for
    the files of a whole parallel map. Numbers come from a counter per session, started from
    the folder; a name already taken (another handle wrote the session since) starts it from
    the folder again.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._next: dict[str, int] = {}
        self._made: set[str] = set()  # sessions whose folder this handle made or found

    def folder(self, session_id: str) -> Path:
        if not SESSION_ID.match(session_id):
            raise QualityInputError(f"{session_id[:80]!r} is not a session id.")
        return self.root / session_id

    def write(self, session_id: str, step: str, kind: str, payload: Mapping[str, Any]) -> Path:
        """Keep one input or output; returns the file written."""
        if kind not in ("input", "output") or not re.fullmatch(r"[a-z0-9_\-\[\]#]+", step):
            raise QualityInputError(f"Bad I/O log name {step!r}/{kind!r}.")
        step = re.sub(r"[\[\]#]", "_", step)
        folder = self.folder(session_id)
        text = json.dumps(payload, ensure_ascii=False, indent=2, default=str)
        try:
            if session_id not in self._made:
                folder.mkdir(parents=True, exist_ok=True)
                self._made.add(session_id)
            aside = _aside(folder, text.encode("utf-8"), fsync=self.fsync)
            try:
                path = self._publish(session_id, folder, aside, f"{step}_{kind}")
            finally:
                aside.unlink(missing_ok=True)
        except OSError as exc:
            raise StatePersistenceError(f"Cannot write the I/O log in {folder}: {exc}.") from exc
        return path

    def _publish(self, session_id: str, folder: Path, aside: Path, what: str) -> Path:
        """Link ``aside`` under the session's next free number; never replaces a file."""
        while True:
            with self._lock:
                number = self._next.get(session_id) or _last_number(folder) + 1
                self._next[session_id] = number + 1
            path = folder / f"{number:03d}_{what}.json"
            try:
                os.link(aside, path)
                return path
            except FileExistsError:
                with self._lock:  # someone else numbers this session too: count again
                    self._next.pop(session_id, None)

    def update_manifest(self, session_id: str, **fields: Any) -> None:
        """Set top-level fields of the manifest (``steps`` and ``policy_history`` append)."""
        with self._lock:
            manifest = self.manifest(session_id)
            for key, value in fields.items():
                if key in ("steps", "policy_history"):
                    manifest.setdefault(key, []).extend(value)
                else:
                    manifest[key] = value
            self._save(session_id, manifest)

    def manifest(self, session_id: str) -> dict[str, Any]:
        """The session's manifest; ``files`` lists the I/O files in the folder, in order."""
        folder = self.folder(session_id)
        path = folder / "manifest.json"
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            loaded = {"session_id": session_id, "files": [], "steps": []}
        except (OSError, ValueError) as exc:
            raise StatePersistenceError(f"Cannot read {path}: {exc}.") from exc
        if not isinstance(loaded, dict):
            loaded = {"session_id": session_id, "files": []}
        loaded["files"] = [name for _, name in sorted(_numbered(folder))]
        return loaded

    def _save(self, session_id: str, manifest: dict[str, Any]) -> None:
        folder = self.folder(session_id)
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(manifest, ensure_ascii=False, indent=2, default=str)
        write_atomically(folder / "manifest.json", text, fsync=self.fsync, private=True)


_NUMBERED = re.compile(r"^(\d{3,})_.+_(?:input|output)\.json$")


def _numbered(folder: Path) -> list[tuple[int, str]]:
    """The I/O files in ``folder`` with their numbers."""
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StatePersistenceError(f"Cannot list {folder}: {exc.strerror}.") from exc
    return [(int(m.group(1)), n) for n in names if (m := _NUMBERED.match(n))]


def _last_number(folder: Path) -> int:
    return max((number for number, _ in _numbered(folder)), default=0)


def _aside(folder: Path, data: bytes, *, fsync: bool) -> Path:
    """``data`` in a new private temporary file in ``folder`` (fsync'd when asked)."""
    fd, name = tempfile.mkstemp(prefix=".io.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    os.close(fd)
    return Path(name)
