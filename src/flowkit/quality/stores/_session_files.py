"""A session's two files in the JSON-file store: a compacted document and a journal of the
commits made since it was written, read as document + changes.

``sessions/<id>.json`` is the session and all its records at one ``state_version``, replaced
whole (temporary file, fsync, rename). ``sessions/<id>.jsonl`` holds one line per commit after
it: the session record and the records the unit wrote, sealed with a CRC-32 (the engine
journal's ``seal``) and fsync'd, so a commit costs what it changed, not the whole session.
When the journal outgrows the document, a commit writes a new document instead and empties
the journal. Lines the document already holds (a compaction cut short before the journal was
emptied) are skipped by their version; every other line must carry the next version.

A crash during a commit leaves at most a torn last line: it is skipped (the commit did not
happen) and cut off, with a ``quality_store_torn_tail`` warning, by the next commit. Any other
unreadable line is damage (``CorruptStateError``), never silently dropped. A document of the
previous layout (format 1, no journal) is read as is and rewritten in this layout by the
session's next commit.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from ...foundation._atomic import write_atomically
from ...foundation._logging import get_logger
from ...stores._jsonl import seal, unseal, write_all
from ...stores._tears import holds_record, torn_write
from ..errors import CorruptStateError, StatePersistenceError
from ._corrupt import corrupt_state
from ._session_data import LAYOUT_VERSION, Change, Document, SessionData

__all__ = ["SessionFiles", "persist_error"]

#: The journal is folded into a new document once it is larger than the document and this.
COMPACT_AT_BYTES: Final = 256 * 1024
#: Sessions whose state a handle keeps in memory (the most recently read).
CACHED_SESSIONS: Final = 16

_T = TypeVar("_T")
_FIX = (
    "restore the files {name}.json and {name}.jsonl from a backup, or remove both to drop "
    "the session."
)


@dataclass
class _Loaded:
    """What a handle read of one session, and where in its files it stopped."""

    data: SessionData
    document_key: tuple[int, int, int, int]
    document_size: int
    layout: int
    journal_inode: int | None = None
    end: int = 0  # byte offset after the last good journal line
    lines: int = 0
    applied: bool = False  # a journal line was applied (later ones may no longer be skipped)
    unterminated: bool = False  # the last line is whole but lacks its newline


class SessionFiles:
    """The sessions folder of one store handle: loads (cached, refreshed by what changed on
    disk) and commits. Callers hold the session's commit lock around ``commit``."""

    def __init__(self, folder: Path, *, fsync: bool) -> None:
        self.folder = folder
        self.fsync = fsync
        self._cache: OrderedDict[str, _Loaded] = OrderedDict()
        self._lock = threading.RLock()
        self._log = get_logger()
        #: Called with a session id and the ids of issues read or written in it (the store's
        #: index of which session holds an issue listens).
        self.on_issues: Callable[[str, Iterable[str]], None] = lambda _, __: None

    def document_path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.json"

    def journal_path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.jsonl"

    # -- reading -------------------------------------------------------------------------------

    def read(self, session_id: str, view: Callable[[SessionData], _T]) -> _T | None:
        """``view`` of the session's committed state (taken under the lock, so a copy it makes
        is consistent), or ``None`` when there is no such session."""
        with self._lock:
            loaded = self._load(session_id)
            return None if loaded is None else view(loaded.data)

    def _load(self, session_id: str) -> _Loaded | None:
        """The session as its files hold it now; reads only what changed since the last call.

        A compaction by another process between reading the document and the journal shows
        as a new document after the read: the read starts over then (and what looked like
        damage in the journal was its new lines read from the old offset).
        """
        for _ in range(5):
            key = self._document_key(session_id)
            if key is None:
                self._cache.pop(session_id, None)
                return None
            loaded = self._cache.get(session_id)
            if loaded is None or loaded.document_key != key:
                self._cache.pop(session_id, None)
                loaded = self._read_document(session_id)
                if loaded is None:
                    continue  # replaced or removed while being opened
            try:
                read = self._read_journal(session_id, loaded)
            except _DamageError as damage:
                self._cache.pop(session_id, None)
                if self._document_key(session_id) != loaded.document_key:
                    continue
                raise self._damage(session_id, damage.where, damage.cause) from damage.cause
            if read is None or (read and self._document_key(session_id) != loaded.document_key):
                self._cache.pop(session_id, None)
                continue
            self._cache[session_id] = loaded
            self._cache.move_to_end(session_id)
            while len(self._cache) > CACHED_SESSIONS:
                self._cache.popitem(last=False)
            return loaded
        raise StatePersistenceError(
            f"The files of session {session_id} kept changing while being read; retry."
        )

    def _document_key(self, session_id: str) -> tuple[int, int, int, int] | None:
        path = self.document_path(session_id)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise persist_error("read", path, exc) from exc
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _read_document(self, session_id: str) -> _Loaded | None:
        path = self.document_path(session_id)
        try:
            with open(path, "rb") as handle:
                st = os.fstat(handle.fileno())
                raw = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise persist_error("read", path, exc) from exc
        try:
            document = Document.model_validate_json(raw)
            if document.session.session_id != session_id:
                raise ValueError(f"it holds session {document.session.session_id}")
        except ValueError as exc:  # also not UTF-8, too deep, or a record of the wrong shape
            raise self._damage(session_id, str(path), exc) from exc
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        self.on_issues(session_id, document.issues)
        return _Loaded(SessionData.of(document), key, len(raw), document.format_version)

    def _read_journal(self, session_id: str, loaded: _Loaded) -> bool | None:
        """Apply to ``loaded`` the journal lines written after ``loaded.end``; whether any
        bytes were read, or ``None`` when the journal was replaced (read it all again).
        Raises ``_DamageError``; nothing is applied unless every new line is good."""
        path = self.journal_path(session_id)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if loaded.end:
                return None
            loaded.journal_inode = None
            return False
        except OSError as exc:
            raise persist_error("read", path, exc) from exc
        if loaded.journal_inode not in (None, st.st_ino) or st.st_size < loaded.end:
            return None
        loaded.journal_inode = st.st_ino
        if st.st_size == loaded.end:
            return False  # nothing new (the common case: one stat)
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_ino != st.st_ino:
                    return None
                handle.seek(loaded.end)
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise persist_error("read", path, exc) from exc
        changes, used, lines, unterminated = self._scan(session_id, data, loaded)
        version = loaded.data.session.state_version
        applied = loaded.applied
        kept = []
        for number, change in changes:
            found = change.session.state_version
            if found <= version and not applied:
                continue  # already in the document: a compaction stopped before emptying us
            if found != version + 1 or change.session.created_at != loaded.data.session.created_at:
                problem = ValueError(
                    f"line {number} holds version {found} of the session where "
                    f"{version + 1} was expected"
                )
                raise _DamageError(f"{path}:{number}", problem)
            version, applied = found, True
            kept.append(change)
        for change in kept:
            loaded.data.apply(change)
            self.on_issues(session_id, (i.issue_id for i in change.issues))
        loaded.end += used
        loaded.lines += lines
        loaded.applied = applied
        if used:
            loaded.unterminated = unterminated
        return True

    def _scan(
        self, session_id: str, data: bytes, loaded: _Loaded
    ) -> tuple[list[tuple[int, Change]], int, int, bool]:
        """The journal lines in ``data`` (read from ``loaded.end``): (line number, change)
        pairs, the bytes they take, how many lines, and whether the last lacks its newline.
        A torn last line ends the scan (not counted); any other bad line is damage."""
        changes: list[tuple[int, Change]] = []
        pos, number = 0, loaded.lines
        if loaded.unterminated and data.startswith(b"\n"):
            pos = 1  # the newline the last read was missing
        unterminated = False
        while pos < len(data):
            if data[pos] == 0 and not data[pos:].strip(b"\0"):
                break  # zeros a power loss left: no line
            end = data.find(b"\n", pos)
            raw = data[pos:].rstrip(b"\0") if end == -1 else data[pos:end]
            number += 1
            try:
                changes.append((number, _decode(raw)))
            except ValueError as exc:
                last = end == -1 or not data[end + 1 :].strip(b"\0")
                torn = last and not holds_record(raw)
                if torn and torn_write(raw, ended=end != -1, at=loaded.end + pos):
                    number -= 1
                    break
                raise _DamageError(f"{self.journal_path(session_id)}:{number}", exc) from exc
            if end == -1:  # whole and intact, only its newline missing: it was written
                unterminated = True
                pos += len(raw)
                break
            pos = end + 1
        return changes, pos, number - loaded.lines, unterminated

    def _damage(self, session_id: str, where: str, cause: BaseException) -> CorruptStateError:
        return corrupt_state(
            session_id, store="json", where=where, fix=_FIX.format(name=session_id), cause=cause
        )

    # -- writing -------------------------------------------------------------------------------

    def commit(self, session_id: str, change: Change, *, new: bool) -> None:
        """Write ``change`` (the caller checked its version under the commit lock): appended
        to the journal, or folded with everything before into a new document."""
        with self._lock:
            loaded = None if new else self._load(session_id)
            if loaded is None:
                self._start(session_id, change)
                return
            if loaded.layout != LAYOUT_VERSION or loaded.end > max(
                COMPACT_AT_BYTES, loaded.document_size
            ):
                self._compact(session_id, loaded, change)
                return
            self._append(session_id, loaded, change)

    def _start(self, session_id: str, change: Change) -> None:
        """A new session: its document, and no journal (one left from a removed session of
        the same id would otherwise be read as this one's)."""
        journal = self.journal_path(session_id)
        try:
            journal.unlink(missing_ok=True)
        except OSError as exc:
            raise persist_error("remove", journal, exc) from exc
        data = SessionData(session=change.session)
        data.apply(change)
        self._write_document(session_id, data)

    def _compact(self, session_id: str, loaded: _Loaded, change: Change) -> None:
        data = loaded.data  # no longer cached from here on: changing it is safe
        data.apply(change)
        self._write_document(session_id, data)
        # Durable now (the rename and its folder were fsync'd): the journal's lines are all
        # in the document. Emptying it can wait for a crash: its lines would be skipped.
        path = self.journal_path(session_id)
        try:
            with contextlib.suppress(FileNotFoundError), open(path, "r+b") as handle:
                self._report_torn_tail(session_id, loaded, os.fstat(handle.fileno()).st_size)
                handle.truncate(0)
        except OSError as exc:
            raise persist_error("write", path, exc) from exc

    def _report_torn_tail(self, session_id: str, loaded: _Loaded, size: int) -> None:
        """Say so when the journal goes on past its last good line: the caller holds the
        commit lock, so no commit is under way, and a crash left those bytes."""
        if size > loaded.end:
            self._log.warning(
                "quality_store_torn_tail",
                session_id=session_id,
                line=loaded.lines + 1,
                bytes=size - loaded.end,
            )

    def _write_document(self, session_id: str, data: SessionData) -> None:
        path = self.document_path(session_id)
        self._cache.pop(session_id, None)
        try:
            write_atomically(path, data.document(), fsync=self.fsync, private=True)
        except OSError as exc:
            raise persist_error("write", path, exc) from exc
        self.on_issues(session_id, data.issues)

    def _append(self, session_id: str, loaded: _Loaded, change: Change) -> None:
        path = self.journal_path(session_id)
        line = seal(change.model_dump_json().encode()) + b"\n"
        if loaded.unterminated:
            line = b"\n" + line
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise persist_error("open", path, exc) from exc
        try:
            st = os.fstat(fd)
            if st.st_size > loaded.end:
                self._report_torn_tail(session_id, loaded, st.st_size)
                os.ftruncate(fd, loaded.end)
            write_all(fd, line, loaded.end)
            if self.fsync:
                os.fdatasync(fd)
                if loaded.journal_inode is None:  # a new file: its name must last too
                    _fsync_folder(self.folder)
        except OSError as exc:
            # A failed commit leaves nothing readable: cut off what was written of it (if
            # that fails too, a part of a line is a torn tail; a whole one was written).
            self._cache.pop(session_id, None)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, loaded.end)
            raise persist_error("write", path, exc) from exc
        finally:
            os.close(fd)
        loaded.data.apply(change)  # the cached state: the line is on disk now
        self.on_issues(session_id, (i.issue_id for i in change.issues))
        loaded.journal_inode = st.st_ino
        loaded.end += len(line)
        loaded.lines += 1
        loaded.applied, loaded.unterminated = True, False


def _decode(raw: bytes) -> Change:
    body, intact = unseal(raw)
    if intact is None:
        raise ValueError("the line has no checksum")
    if not intact:
        raise ValueError("its checksum does not match its content")
    return Change.model_validate_json(body)


class _DamageError(Exception):
    """A journal line that cannot be read, at ``where``, before it is known to be damage."""

    def __init__(self, where: str, cause: BaseException) -> None:
        super().__init__(where)
        self.where, self.cause = where, cause


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a folder
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def persist_error(action: str, path: Path, exc: OSError) -> StatePersistenceError:
    return StatePersistenceError(
        f"Cannot {action} {path}: {exc.strerror or exc}. Nothing of the unit was written; fix "
        "the permissions or free disk space, then retry."
    )
