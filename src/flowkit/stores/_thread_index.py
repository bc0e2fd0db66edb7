"""The JSON-file store's thread index: listings without reading journals, kept with each
commit and put right from the journals whenever it may be wrong.

Everything lives under ``<root>/index/``: ``threads.sqlite3`` (``_index_db``: one row per
thread), ``writers/`` (``_index_writers``: who is writing, so a writer that died between a
journal write and its row update is noticed), ``lock`` (listings hold it shared; a repair
holds it exclusively, so no listing reads a half-repaired index) and ``stale``, a marker
that says the whole index must be rebuilt before it is trusted.

A commit updates its thread's row after the journal's fsync, while it still holds the
journal's lock (so rows follow journal order), in its own SQLite transaction (a WAL write, no
fsync). The rows of a thread that runs, ends or fails (status ``pending``, ``done``, ``failed``)
are the exception: they wait in memory, up to ``DEFER_ROWS`` of them or ``DEFER_S`` seconds,
and go in one transaction with the next row that is written (a thread that waits for a person
is written at once), with a listing in this process, or when the store closes; a late row
never overwrites a newer one. A deferred row keeps its writer slot, and a listing reads the
journals of the threads in a live writer's slots (``_ready``), so a listing in another
process shows them as they are; a writer that dies with rows unwritten has those threads
read again. A new thread's own row is written at once (a late one could bring back the row
of a thread another process deleted meanwhile): with the run's end deferred, a thread
started and run to its end costs one row transaction, not two.

The index is only a cache of the journals, so it never fails a commit: a row update that
fails is logged (``thread_index_update_failed``) and leaves the ``stale`` marker. Before
it answers, a listing looks for what may make the index wrong and repairs it first (see
``_ready``): the marker, a file that is missing, damaged or of another format (moved aside,
recreated, rebuilt), a dead writer (the threads it was committing re-read, or everything
after a reboot). A folder where the index cannot be kept at all (read-only) is listed from
the journals. Journal files changed by hand (restored, edited, copied in) are not noticed:
``JsonFileStore.reindex`` (``flowkit store reindex``) rebuilds the index for them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError
from ..foundation._logging import get_logger
from ..foundation._progress import OnProgress
from ._files import sync_dir
from ._index_db import IndexDB, Row, is_damage
from ._index_repair import has_threads, journal_summaries, rebuild, summaries, verify
from ._index_writers import DeadWriter, WriterFile, dead_writers
from ._listing import ThreadPage, ThreadQuery, ThreadSummary, page_from, page_of

__all__ = ["INDEX", "JsonThreadIndex"]

INDEX = "index"
#: Seconds a row update waits for another process's write (a rebuild's batch) before it
#: gives up (and marks the index stale).
BUSY_S = 10.0
#: Seconds between a writer's checks that the index file is still the one it writes to
#: (someone may have deleted it, or a listing replaced a damaged one).
CHECK_S = 1.0
#: A running thread's step rows wait in memory at most this long (seconds) ...
DEFER_S = 0.2
#: ... and at most this many of them: then they are written, in one transaction.
DEFER_ROWS = 64
_ERRORS = (OSError, sqlite3.Error, StoreError)
_T = TypeVar("_T")


class _Held:
    """What a ``JsonThreadIndex`` holds open, apart from it so a finalizer can close it."""

    def __init__(self) -> None:
        self.writer: WriterFile | None = None
        self.db: IndexDB | None = None  # commits' connection
        self.reader: IndexDB | None = None  # listings' and repairs' connection
        self.broken = False  # a failure could not be marked: keep the writer file on close
        self.wrote = False  # rows were written here (commits, repairs): synced on close
        self.deferred: dict[str, Row] = {}  # running threads' rows not written yet
        self.since = 0.0  # when the oldest of them was deferred (monotonic)

    def write(self, now: tuple[str, Row] | None = None) -> None:
        """The deferred rows, and ``now``, written (one transaction); their slots freed. A
        failure propagates, the rows dropped (the caller marks the index stale)."""
        deferred, self.deferred = self.deferred, {}
        try:
            if self.db is not None and (deferred or now is not None):
                self.wrote = True
                self.db.late_steps(deferred.items(), now)
        finally:
            if self.writer is not None:
                for thread_id in deferred:
                    self.writer.done(thread_id)

    def close(self, sync: bool) -> None:
        if self.deferred:
            try:
                if self.db is None:
                    raise StoreError("no index connection")
                self.write()
            except _ERRORS:  # left unwritten: the writer file stays, read as a dead one's
                self.broken = True
        opened = [db for db in (self.db, self.reader) if db is not None]
        if sync and opened and self.wrote:
            # Rows are not synced per commit: once this writer is gone, a power loss must
            # not take rows it wrote, since nothing would then say the index is behind.
            with contextlib.suppress(*_ERRORS):
                opened[0].sync()
        for db in opened:
            with contextlib.suppress(*_ERRORS):
                db.close()
        self.db = self.reader = None
        self.wrote = False
        if self.writer is not None:
            self.writer.leave() if self.broken else self.writer.close()
            self.writer = None

    def forked(self) -> None:
        """In a forked child: let go of the parent's files without touching them."""
        self.deferred = {}  # the parent's to write
        _ORPHANS.extend(db for db in (self.db, self.reader) if db is not None)
        if self.writer is not None:
            self.writer.leave()
        self.writer, self.db, self.reader = None, None, None


#: Connections a forked child inherited: never closed there (SQLite must not be used across
#: a fork, and closing could disturb the parent's files).
_ORPHANS: list[IndexDB] = []
_LIVE: weakref.WeakSet[_Held] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for held in list(_LIVE):
        held.forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


class JsonThreadIndex:
    """The thread index of the store at ``root`` (``fsync`` as the store's)."""

    def __init__(self, root: Path, *, fsync: bool) -> None:
        self.root = root
        self.folder = root / INDEX
        self.fsync = fsync
        self._db_path = self.folder / "threads.sqlite3"
        self._stale = self.folder / "stale"
        self._held = _Held()
        _LIVE.add(self._held)
        self._finalizer = weakref.finalize(self, self._held.close, fsync)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._checked = 0.0  # when the write connection was last checked (or tried)
        self._damaged: str | None = None  # why the index file must be made anew

    def close(self) -> None:
        """Close the index's files; it reopens them when used again."""
        self.flush()  # the deferred rows, checked to have reached the index file at the path
        with self._read_lock, self._write_lock:
            self._held.close(self.fsync)

    # -- commits -------------------------------------------------------------------------------

    def committing(self, thread_id: str) -> None:
        """Before ``thread_id``'s journal is written: note it in this writer's file."""
        with self._write_lock:
            try:
                held = self._held
                if held.db is None or time.monotonic() - self._checked > CHECK_S:
                    self._check_writes()
                if held.writer is not None and held.db is not None:
                    held.writer.committing(thread_id)
            except _ERRORS as exc:
                self._failed(exc, thread_id)

    def created(self, summary: ThreadSummary) -> None:
        """After a new thread's journal was written (its lock still held): its whole row."""
        self._update(summary.thread_id, lambda db: db.replace([summary]))

    def committed(
        self, thread_id: str, flow: str, status: str, node: str, version: int, updated: float
    ) -> None:
        """After a journal write (its lock still held): where the thread stands now (the
        row's ``created`` is kept). The row of a thread that does not wait for a person may
        wait itself (see the module)."""
        row: Row = (flow, status, node, version, updated)
        with self._write_lock:
            held = self._held
            if status != "waiting" and held.db is not None:
                now = time.monotonic()
                if not held.deferred:
                    held.since = now
                held.deferred[thread_id] = row
                if len(held.deferred) < DEFER_ROWS and now - held.since < DEFER_S:
                    return  # its writer slot stays taken until the row is written
                now_row = None
            else:
                held.deferred.pop(thread_id, None)
                now_row = (thread_id, row)
            self._write(thread_id, now_row)

    def _write(self, thread_id: str, now: tuple[str, Row] | None) -> None:
        """The deferred rows and ``now`` written (the write lock held); ``now``'s slot freed."""
        held = self._held
        try:
            if held.db is not None:
                held.write(now)
                self._check_written()
            else:  # unusable for now (logged when found): the next listing rebuilds
                with contextlib.suppress(*_ERRORS):
                    self._mark_stale()
        except _ERRORS as exc:
            self._failed(exc, thread_id)
        if now is not None and held.writer is not None:
            held.writer.done(now[0])

    def flush(self) -> None:
        """Write the deferred rows now (a listing in this process reads them next)."""
        with self._write_lock:
            if self._held.deferred:
                self._write(next(iter(self._held.deferred)), None)

    def deleted(self, thread_id: str) -> None:
        """After the thread's folder is gone: its row too."""
        self._update(thread_id, lambda db: db.drop(thread_id))

    def _update(self, thread_id: str, change: Callable[[IndexDB], None]) -> None:
        """The row update that ends a commit ``committing`` began (a new or deleted thread:
        a deferred row of the same id is of its former life, dropped)."""
        with self._write_lock:
            held = self._held
            held.deferred.pop(thread_id, None)  # its slot is this commit's, freed below
            try:
                if held.db is not None:
                    held.wrote = True
                    change(held.db)
                    self._check_written()
                else:  # unusable for now (logged when found): the next listing rebuilds, as
                    with contextlib.suppress(*_ERRORS):  # a rebuild since may have taken
                        self._mark_stale()  # the marker
            except _ERRORS as exc:
                self._failed(exc, thread_id)
            if held.writer is not None:
                held.writer.done(thread_id)

    def _check_written(self) -> None:
        """After rows went into the index file: if that file is no longer the one at the path
        (a listing in another process found it damaged and replaced it, or it was deleted,
        since this writer's last check), the rows went with it: the index is marked stale
        (the next listing rebuilds it from the journals, which hold them) and the next commit
        opens the file now there. One ``stat`` per row transaction, not per step."""
        held = self._held
        assert held.db is not None
        try:
            current = os.stat(self._db_path).st_ino == held.db.ino
        except FileNotFoundError:
            current = False
        if current:
            return
        with contextlib.suppress(*_ERRORS):
            held.db.close()
        held.db = None
        self._checked = 0.0  # reopen at the next commit, not a second later
        self._mark_stale()

    def _check_writes(self) -> None:
        """Open the write connection (registering as a writer), or reopen it when the index
        file or this writer's file went away since (rows written meanwhile may be lost, or a
        death would go unnoticed: marked stale). At most once a second after a failure."""
        held = self._held
        now = time.monotonic()
        if held.db is None and self._checked and now - self._checked < CHECK_S:
            return  # failed lately: try again later, not at every commit
        self._checked = now
        lost = False
        if held.db is not None:
            try:
                replaced = os.stat(self._db_path).st_ino != held.db.ino
            except FileNotFoundError:
                replaced = True
            if not replaced and held.writer is not None and held.writer.path.exists():
                return
            held.db.close()
            held.db = None
            lost = True
        if held.writer is None or not held.writer.path.exists():
            if held.writer is not None:
                held.writer.leave()
                held.writer = None
            held.writer = WriterFile(self.folder / "writers", fsync=self.fsync)
        if lost:
            self._mark_stale()
        held.db = self._connect()

    def _failed(self, exc: BaseException, thread_id: str) -> None:
        """A failed index update: logged, and the index marked for a rebuild."""
        get_logger().warning(
            "thread_index_update_failed",
            thread_id=thread_id,
            error_type=type(exc).__name__,
            reason=_reason(exc),
        )
        held = self._held
        if is_damage(exc) and held.db is not None:  # reopened (the new file) at the next check
            with contextlib.suppress(*_ERRORS):
                held.db.close()
            held.db = None
        try:
            self._mark_stale()
        except _ERRORS:
            held.broken = True
            with contextlib.suppress(*_ERRORS):
                if held.writer is not None:
                    held.writer.everything()  # its file, left behind, says "rebuild all"

    # -- listings ------------------------------------------------------------------------------

    def page(self, query: ThreadQuery) -> ThreadPage:
        found = self._query(lambda db, live: db.page(query, exclude=live))
        if found is None:
            return page_of(journal_summaries(self.root), query)
        rows, live = found
        if not live:
            return page_from(rows, query)
        return page_of([*rows, *summaries(self.root, live)], query)

    def count(self, query: ThreadQuery) -> int:
        found = self._query(lambda db, live: db.count(query, exclude=live))
        if found is None:
            return sum(1 for s in journal_summaries(self.root) if query.selects(s))
        counted, live = found
        return counted + sum(1 for s in summaries(self.root, live) if query.selects(s))

    def reindex(self, on_progress: OnProgress | None = None) -> int:
        """Rebuild the whole index from the journals; how many threads it holds now."""
        try:
            with self._read_lock, self._flock(fcntl.LOCK_EX):
                dead = dead_writers(self.folder / "writers", mine=_path(self._held.writer))
                return self._repair(dead, full=True, on_progress=on_progress)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot rebuild the thread index in {self.folder}: {_reason(exc)}. Fix the "
                "folder's permissions or free disk space; listings read the journals meanwhile.",
                path=str(self.folder),
            ) from exc

    def _query(self, ask: Callable[[IndexDB, set[str]], _T]) -> tuple[_T, set[str]] | None:
        """``ask(db, live)`` on an index made right first, and ``live``: the threads other
        writers still alive may not have written rows for yet (read from their journals by
        the caller, left out of ``ask``'s answer); ``None`` where no index can be kept."""
        self.flush()
        with self._read_lock:
            for _ in range(2):
                try:
                    with self._flock(fcntl.LOCK_EX) as lock:
                        live: set[str] = set()
                        db = self._ready(live)
                        fcntl.flock(lock, fcntl.LOCK_SH)  # repairs wait for this read
                        return ask(db, live), live
                except _ERRORS as exc:
                    if not is_damage(exc):
                        get_logger().warning(
                            "thread_index_unusable", error_type=type(exc).__name__,
                            reason=_reason(exc),
                        )  # fmt: skip
                        return None
                    self._damaged = _reason(exc)  # moved aside, rebuilt on the second try
            return None

    def _ready(self, live: set[str]) -> IndexDB:
        """The listing connection, once nothing can make the index wrong (the exclusive
        ``lock`` held): repaired first if it is marked stale, missing, damaged, or a writer
        died, mid-commit maybe. The threads other live writers name go into ``live``."""
        held = self._held
        if held.reader is not None and not self._damaged:
            try:
                replaced = os.stat(self._db_path).st_ino != held.reader.ino
            except FileNotFoundError:
                replaced = True
            if replaced:
                held.reader.close()
                held.reader = None
        dead = dead_writers(self.folder / "writers", mine=_path(held.writer), live=live)
        if dead or held.reader is None or self._damaged or self._stale.exists():
            self._repair(dead, full=False)
        assert held.reader is not None
        return held.reader

    def _repair(
        self, dead: list[DeadWriter], *, full: bool, on_progress: OnProgress | None = None
    ) -> int:
        """Make the index right (the exclusive ``lock`` held): recreate it if damaged, then
        rebuild it all or re-read the rows the ``dead`` writers may have left stale; their
        files go once that is done. How many threads were indexed (0: none rebuilt)."""
        held = self._held
        try:
            if any(d.rebooted for d in dead):
                # The machine went down, maybe mid-write: damage SQLite may not see.
                self._damaged = "written when the machine went down"
            if held.reader is None or self._damaged:
                held.reader = self._open_reader()
            if not (full or self._stale.exists() or any(d.threads is None for d in dead)):
                stale = [t for d in dead for t in d.threads or ()]
                if stale:
                    held.wrote = True
                    verify(held.reader, self.root, stale)
                    self._sync(held.reader)  # before the files that asked for it go
                return 0
            held.wrote = True
            # A writer file of its own, saying "rebuild all", while the rebuild runs: should
            # this process die midway, the next listing starts over.
            rebuilder = WriterFile(self.folder / "writers", fsync=self.fsync)
            try:
                rebuilder.everything()
                self._stale.unlink(missing_ok=True)  # failures from now on mark it again
                count = rebuild(held.reader, self.root, on_progress)
                self._sync(held.reader)
            except BaseException:
                rebuilder.leave()  # left behind unlocked: a dead writer, "rebuild all"
                raise
            rebuilder.close()
            return count
        except BaseException:
            for writer in dead:
                writer.release()  # still there: the next listing tries again
            raise
        finally:
            for writer in dead:
                writer.remove()

    def _sync(self, db: IndexDB) -> None:
        """Rows written by a repair made durable (as the store's journals are)."""
        if self.fsync:
            db.sync()

    def _open_reader(self) -> IndexDB:
        """The listing connection; a damaged index (or one of another format) is moved aside
        and a new one made (to be rebuilt)."""
        held = self._held
        if held.reader is not None:
            held.reader.close()
            held.reader = None
        reason = self._damaged
        if reason is None:
            try:
                return self._connect()
            except _ERRORS as exc:
                if not is_damage(exc):
                    raise
                reason = _reason(exc)
        get_logger().warning("thread_index_replaced", path=str(self._db_path), reason=reason)
        with self._write_lock:  # this process's commits reopen the new file
            if held.db is not None:
                held.db.close()
                held.db = None
        with contextlib.suppress(FileNotFoundError):
            os.replace(self._db_path, self._db_path.with_name("threads.sqlite3.damaged"))
        for suffix in ("-wal", "-shm"):
            Path(f"{self._db_path}{suffix}").unlink(missing_ok=True)
        self._damaged = None
        self._mark_stale()  # rebuilt before it is read
        return self._connect()

    # -- files ---------------------------------------------------------------------------------

    def _connect(self) -> IndexDB:
        """A connection to the index; a new one is made, and marked stale when the store has
        threads already (written before the index existed: they must be indexed first)."""
        self.folder.mkdir(mode=0o700, exist_ok=True)
        db = IndexDB(self._db_path, timeout=BUSY_S)
        try:
            db.create_if_new(self._mark_if_filled)
        except BaseException:
            db.close()
            raise
        return db

    def _mark_if_filled(self) -> None:
        if has_threads(self.root):
            self._mark_stale()

    def _mark_stale(self) -> None:
        """Leave the marker that has the next listing rebuild the whole index."""
        os.close(os.open(self._stale, os.O_WRONLY | os.O_CREAT, 0o600))
        sync_dir(self.fsync, self.folder)

    @contextlib.contextmanager
    def _flock(self, how: int) -> Iterator[int]:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, how)
            yield fd
        finally:
            os.close(fd)


def _path(writer: WriterFile | None) -> Path | None:
    return None if writer is None else writer.path


def _reason(exc: BaseException) -> str:
    """A short, secret-free reason: SQLite's error name or the OS error's."""
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return str(name)
    if isinstance(exc, OSError) and exc.errno is not None:
        return os.strerror(exc.errno)
    return type(exc).__name__
