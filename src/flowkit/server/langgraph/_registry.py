"""What the LangGraph API knows beside the store: threads created empty (no flow has run on
them yet), every thread's metadata, and the runs this server started.

flowkit's journal holds a thread once a flow starts on it; LangGraph clients create a thread
first and run a graph on it later, and tag threads and runs with metadata. Both live here,
in the server's memory (a restart forgets them; the threads' journals stay). Bounded: the
oldest finished runs go first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

from ._joined import RunFrames

__all__ = ["Registry", "RunInfo", "RunStatus", "ThreadInfo"]

RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]

#: How many runs and thread entries are kept at most.
_KEEP = 10_000


@dataclass(eq=False)
class ThreadInfo:
    """A thread as LangGraph clients see it before and beside its journal."""

    thread_id: str
    created_at: float
    updated_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The flow that runs on it, once known (``graph_id`` at creation, or its first run).
    assistant_id: str | None = None


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
    #: A background run's events, for ``join_stream`` (``None``: a run ``wait`` or ``stream``
    #: answers itself).
    frames: RunFrames | None = field(default=None, repr=False)

    @property
    def active(self) -> bool:
        return self.status in ("pending", "running")


class Registry:
    """Threads and runs of the LangGraph API, shared by its routes (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: OrderedDict[str, ThreadInfo] = OrderedDict()
        self._runs: OrderedDict[str, RunInfo] = OrderedDict()
        self.started = time.time()

    # -- threads ------------------------------------------------------------------------------

    def thread(self, thread_id: str) -> ThreadInfo | None:
        with self._lock:
            return self._threads.get(thread_id)

    def add_thread(
        self, thread_id: str, metadata: dict[str, Any], assistant_id: str | None
    ) -> ThreadInfo:
        now = time.time()
        info = ThreadInfo(thread_id, now, now, dict(metadata), assistant_id)
        with self._lock:
            self._threads[thread_id] = info
            while len(self._threads) > _KEEP:
                self._threads.popitem(last=False)
        return info

    def threads(self) -> list[ThreadInfo]:
        with self._lock:
            return list(self._threads.values())

    def touch(self, thread_id: str, assistant_id: str | None = None) -> None:
        with self._lock:
            info = self._threads.get(thread_id)
            if info is not None:
                info.updated_at = time.time()
                if assistant_id is not None:
                    info.assistant_id = assistant_id

    def drop_thread(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)
            for run_id in [r.run_id for r in self._runs.values() if r.thread_id == thread_id]:
                del self._runs[run_id]

    # -- runs ---------------------------------------------------------------------------------

    def add_run(self, run: RunInfo) -> None:
        with self._lock:
            self._runs[run.run_id] = run
            while len(self._runs) > _KEEP:
                oldest = next(iter(self._runs.values()))
                if oldest.active:
                    break
                self._runs.popitem(last=False)

    def run(self, thread_id: str, run_id: str) -> RunInfo | None:
        with self._lock:
            found = self._runs.get(run_id)
        return found if found is not None and found.thread_id == thread_id else None

    def runs_of(self, thread_id: str) -> list[RunInfo]:
        """The thread's runs, newest first."""
        with self._lock:
            found = [run for run in self._runs.values() if run.thread_id == thread_id]
        return found[::-1]

    def busy(self, thread_id: str) -> bool:
        """Whether a run of the thread is pending or running."""
        return any(run.active for run in self.runs_of(thread_id))

    def drop_run(self, run: RunInfo) -> None:
        with self._lock:
            self._runs.pop(run.run_id, None)

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
        if not run.active:
            run.done.set()
