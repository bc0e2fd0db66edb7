"""What the LangGraph API knows beside the store: threads created empty (no flow has run on
them yet), every thread's metadata, and the runs this server started.

flowkit's journal holds a thread once a flow starts on it; LangGraph clients create a thread
first and run a graph on it later, and tag threads and runs with metadata. Both live here,
in the server's memory (a restart forgets them; the threads' journals stay).

Bounded (docs/server.md): at most ``MAX_RUNS`` runs, ``MAX_THREADS`` thread entries and
``MAX_BYTES`` of metadata and run outputs (their JSON). Over a bound, the oldest finished
runs go first, then the thread entries least recently updated; a run still pending or
running, and the entry of its thread, are never dropped; so at most ``MAX_QUEUED`` runs of
one thread, and ``MAX_ACTIVE`` in all, may be pending or running at once (more: a 429).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_json

from ._joined import RunFrames

__all__ = [
    "MAX_ACTIVE",
    "MAX_BYTES",
    "MAX_QUEUED",
    "MAX_RUNS",
    "MAX_THREADS",
    "Registry",
    "RunInfo",
    "RunStatus",
    "ThreadInfo",
]

RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]

#: How many runs are kept at most (the oldest finished go first).
MAX_RUNS = 10_000
#: How many thread entries (threads created empty, metadata) are kept at most.
MAX_THREADS = 10_000
#: How much metadata and run output (as JSON) is kept at most.
MAX_BYTES = 64 * 1024 * 1024
#: How many runs of one thread may be pending or running at once (each queued one waits).
MAX_QUEUED = 32
#: How many runs may be pending or running at once, over every thread.
MAX_ACTIVE = 1_000


def _size(value: Any) -> int:
    """What ``value`` weighs against ``MAX_BYTES``: the length of its JSON."""
    return len(to_json(value, fallback=str)) if value else 0


@dataclass(eq=False)
class ThreadInfo:
    """A thread as LangGraph clients see it before and beside its journal."""

    thread_id: str
    created_at: float
    updated_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The flow that runs on it, once known (``graph_id`` at creation, or its first run).
    assistant_id: str | None = None
    #: What its metadata weighs (``_size``).
    size: int = field(default=0, repr=False)


@dataclass(eq=False)
class RunInfo:
    """One run started through the LangGraph API."""

    run_id: str
    thread_id: str
    assistant_id: str
    created_at: float
    updated_at: float
    metadata: dict[str, Any]
    multitask_strategy: str
    status: RunStatus = "pending"
    #: What ``join`` and ``wait`` answer once the run ended.
    output: Any = None
    future: Future[Any] | None = field(default=None, repr=False)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    #: The thread's runs still going when this one came: it is decided once they end.
    after: list[RunInfo] = field(default_factory=list, repr=False)
    #: Whether it answers a pause (``Command(resume=...)``).
    answers: bool = False
    #: For a run that answers a pause, queued behind another that does: the thread's version
    #: when it came. Moved on by its turn (the earlier answer was taken), it writes nothing
    #: (``conflict``): of two answers sent at once exactly one wins, and none answers a
    #: pause its sender did not see.
    pinned: int | None = None
    #: A background run's events, for ``join_stream`` (``None``: a run ``wait`` or ``stream``
    #: answers itself).
    frames: RunFrames | None = field(default=None, repr=False)
    #: What its metadata and output weigh (``_size``).
    size: int = field(default=0, repr=False)

    @property
    def active(self) -> bool:
        return self.status in ("pending", "running")


class Registry:
    """Threads and runs of the LangGraph API, shared by its routes (thread-safe), within the
    bounds given (by default ``MAX_RUNS``, ``MAX_THREADS`` and ``MAX_BYTES``)."""

    def __init__(
        self,
        *,
        max_runs: int = MAX_RUNS,
        max_threads: int = MAX_THREADS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._lock = threading.Lock()
        self._threads: OrderedDict[str, ThreadInfo] = OrderedDict()
        self._runs: OrderedDict[str, RunInfo] = OrderedDict()
        self._max_runs = max_runs
        self._max_threads = max_threads
        self._max_bytes = max_bytes
        #: What the entries kept weigh, together.
        self._bytes = 0
        self.started = time.time()

    # -- threads ------------------------------------------------------------------------------

    def thread(self, thread_id: str) -> ThreadInfo | None:
        with self._lock:
            return self._threads.get(thread_id)

    def add_thread(
        self, thread_id: str, metadata: dict[str, Any], assistant_id: str | None
    ) -> ThreadInfo:
        now = time.time()
        info = ThreadInfo(thread_id, now, now, dict(metadata), assistant_id, _size(metadata))
        with self._lock:
            old = self._threads.pop(thread_id, None)
            self._bytes += info.size - (old.size if old is not None else 0)
            self._threads[thread_id] = info
            self._trim()
        return info

    def merge_metadata(self, info: ThreadInfo, metadata: dict[str, Any]) -> None:
        """Merge ``metadata`` into the thread's, and mark it updated."""
        with self._lock:
            info.metadata.update(metadata)
            size = _size(info.metadata)
            if self._threads.get(info.thread_id) is info:
                self._bytes += size - info.size
                self._threads.move_to_end(info.thread_id)
            info.size = size
            info.updated_at = time.time()
            self._trim()

    def threads(self) -> list[ThreadInfo]:
        with self._lock:
            return list(self._threads.values())

    def touch(self, thread_id: str, assistant_id: str | None = None) -> None:
        with self._lock:
            info = self._threads.get(thread_id)
            if info is not None:
                info.updated_at = time.time()
                self._threads.move_to_end(thread_id)
                if assistant_id is not None:
                    info.assistant_id = assistant_id

    def drop_thread(self, thread_id: str) -> None:
        with self._lock:
            info = self._threads.pop(thread_id, None)
            if info is not None:
                self._bytes -= info.size
            for run_id in [r.run_id for r in self._runs.values() if r.thread_id == thread_id]:
                self._bytes -= self._runs.pop(run_id).size

    # -- runs ---------------------------------------------------------------------------------

    def add_run(self, run: RunInfo) -> None:
        with self._lock:
            run.size = _size(run.metadata)
            self._bytes += run.size
            self._runs[run.run_id] = run
            self._trim()

    def run(self, thread_id: str, run_id: str) -> RunInfo | None:
        with self._lock:
            found = self._runs.get(run_id)
        return found if found is not None and found.thread_id == thread_id else None

    def runs_of(self, thread_id: str) -> list[RunInfo]:
        """The thread's runs, newest first."""
        with self._lock:
            found = [run for run in self._runs.values() if run.thread_id == thread_id]
        return found[::-1]

    def active(self) -> int:
        """How many runs are pending or running, over every thread."""
        with self._lock:
            return sum(1 for run in self._runs.values() if run.active)

    def busy(self, thread_id: str) -> bool:
        """Whether a run of the thread is pending or running."""
        return any(run.active for run in self.runs_of(thread_id))

    def drop_run(self, run: RunInfo) -> None:
        with self._lock:
            if self._runs.pop(run.run_id, None) is not None:
                self._bytes -= run.size

    def move(self, run: RunInfo, status: RunStatus) -> bool:
        """Move a ``pending`` run to ``status`` (running, or interrupted: cancelled); whether
        it was still pending (one of a run starting and its cancelling wins)."""
        with self._lock:
            if run.status != "pending":
                return False
            run.status = status
            run.updated_at = time.time()
        if not run.active:
            run.done.set()
        return True

    def set_status(self, run: RunInfo, status: RunStatus, output: Any = None) -> None:
        with self._lock:
            run.status = status
            run.updated_at = time.time()
            if output is not None:
                run.output = output
                size = _size(run.metadata) + _size(output)
                if self._runs.get(run.run_id) is run:
                    self._bytes += size - run.size
                run.size = size
            self._trim()
        if not run.active:
            run.done.set()

    # -- bounds -------------------------------------------------------------------------------

    def _trim(self) -> None:
        """Within bounds again (the lock held): the oldest finished runs go, then the thread
        entries least recently updated; never a live run, its thread's entry, or the newest
        entry (the one just added or updated). Costs the entries it looks at, not all."""
        runs_over = len(self._runs) - self._max_runs
        bytes_over = self._bytes - self._max_bytes
        if runs_over > 0 or bytes_over > 0:
            gone = []
            for run in self._runs.values():
                if runs_over <= 0 and bytes_over <= 0:
                    break
                if not run.active and (runs_over > 0 or run.size):
                    gone.append(run)
                    runs_over -= 1
                    bytes_over -= run.size
            for run in gone:
                del self._runs[run.run_id]
                self._bytes -= run.size
        threads_over = len(self._threads) - self._max_threads
        if threads_over <= 0 and bytes_over <= 0:
            return
        live = {run.thread_id for run in self._runs.values() if run.active}
        newest = next(reversed(self._threads), None)
        dropped = []
        for info in self._threads.values():
            if threads_over <= 0 and bytes_over <= 0:
                break
            if info.thread_id not in live and info.thread_id != newest:
                dropped.append(info)
                threads_over -= 1
                bytes_over -= info.size
        for info in dropped:
            del self._threads[info.thread_id]
            self._bytes -= info.size
