"""What a Runner holds and what the execution core asks of it (``RunPort``): its settings,
its event subscribers, the results it hands back, the deps of each call, and the sync and
async drivers of a run. ``Runner`` (``_runner``) adds the public calls on top.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any, Generic

from pydantic import BaseModel
from typing_extensions import TypeVar

from ..definition._flow import UNSET, Flow
from ..execution._cursor import Cursor, Steps
from ..execution._invoke import advance_sync, perform_async
from ..execution._steps import announce
from ..execution._threads import Threads
from ..execution._timers import as_time
from ..foundation._logging import get_logger
from ..memory import InProcessMemory, Memory
from ..records._events import Event, Subscriber
from ..records._node_error import ERROR_TEXTS, ErrorText
from ..records._records import record_clock
from ..stores._protocol import AttemptMarks, Store, attempt_marks
from ..stores.memory import MemoryStore
from ._checkpoints import check_version
from ._node_llm import NodeLLM
from ._preparing import pauses_of, resume_steps, start_steps
from ._result import Pause, RunResult

__all__ = ["D", "RunnerBase", "S"]

#: What a call without its own deps enters (reusable: it holds nothing).
_NO_DEPS: AbstractContextManager[None] = nullcontext()

S = TypeVar("S", bound=BaseModel)
#: The type of the run-time dependencies nodes receive as ``ctx.deps``.
D = TypeVar("D", default=Any)


class RunnerBase(ABC, Generic[S, D]):
    """A runner's settings and its side of the execution core (see the module); the
    arguments are ``Runner``'s."""

    def __init__(
        self,
        flow: Flow,
        *,
        store: Store | None = UNSET,
        llm: Any = None,
        clock: Callable[[], datetime] | None = None,
        step_limit: int = 10_000,
        cache_size: int = 1024,
        track_attempts: bool = False,
        max_recovery_attempts: int | None = None,
        deps: D | None = None,
        memory: Memory | None = None,
        cache: Memory | None = None,
        error_text: ErrorText = "masked",
    ) -> None:
        if error_text not in ERROR_TEXTS:
            raise ValueError(
                f"Runner error_text is 'masked' (the default) or 'raw', not {error_text!r}."
            )
        self.flow = flow
        self.store: Store | None = MemoryStore() if store is UNSET else store
        self.llm = llm
        self.deps = deps
        self.memory = memory
        self.cache = cache
        #: Deps given to one call, by its run id (a call without its own uses ``deps``).
        self._call_deps: dict[str, Any] = {}
        self.clock = clock or (lambda: datetime.now(UTC))
        self.step_limit = step_limit
        self.error_text: ErrorText = error_text
        # Without a clock records keep the fast wall-clock stamp (``record_time``).
        self._threads = Threads(flow, self.store, record_clock(clock), cache_size)
        self._subscribers: list[Subscriber] = []
        self._log = get_logger()
        if max_recovery_attempts is not None and (
            isinstance(max_recovery_attempts, bool)
            or not isinstance(max_recovery_attempts, int)
            or max_recovery_attempts < 0
        ):
            raise ValueError(
                "Runner max_recovery_attempts is a whole number of at least 0, or None, not "
                f"{max_recovery_attempts!r:.40}."
            )
        tracked = track_attempts or max_recovery_attempts is not None
        self._marks: AttemptMarks | None = attempt_marks(self.store) if tracked else None
        #: Where a retried node notes its attempts (any store that keeps markers).
        self._attempt_store = self.store if isinstance(self.store, AttemptMarks) else None
        self._max_recoveries = max_recovery_attempts
        self._clock_given = clock
        #: Runners of the flows that ``Subflow`` calls of a batch run as child threads.
        self._children: dict[int, Any] = {}  # of Runner (``Runner._child_runner``)
        self._children_lock = threading.Lock()
        #: Runs the child threads of a batch's Subflow calls (whose nodes cannot sleep).
        self._batch_child = False

    # -- events ------------------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(event)`` for every event; returns a function that unsubscribes."""
        self._subscribers.append(subscriber)
        subscribed = True

        def unsubscribe() -> None:
            nonlocal subscribed
            if subscribed:  # a second call is a no-op, not a ValueError
                subscribed = False
                self._subscribers.remove(subscriber)

        return unsubscribe

    def _emit(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception as exc:  # a broken UI must not break the workflow
                self._log.warning(
                    "subscriber_failed",
                    thread_id=event.thread_id,
                    event_kind=event.kind,
                    error_type=type(exc).__name__,
                )

    def _announce(
        self,
        thread_id: str,
        run_id: str | None,
        node: str,
        after: Cursor,
        update: Mapping[str, Any],
    ) -> None:
        if self._subscribers:
            announce(self, thread_id, run_id, node, after, update)

    def _pause_list(self, cursor: Cursor) -> tuple[Pause, ...]:
        if cursor.status != "waiting":
            return ()
        return tuple(
            Pause(pause, payload) for pause, payload in pauses_of(self.flow, cursor).items()
        )

    def _result(self, thread_id: str, cursor: Cursor, run_id: str | None) -> RunResult[S]:
        # Most calls end where nothing is open: no pauses to list, no timer to read.
        pauses = self._pause_list(cursor)
        return RunResult(
            thread_id,
            cursor.status,
            cursor.node,
            cursor.state,  # type: ignore[arg-type]
            cursor.version,
            run_id,
            cursor.error,
            tuple(pause.id for pause in pauses) if pauses else (),
            pauses,
            None if cursor.due is None else as_time(cursor.due),
        )

    def _node_llm(self, thread_id: str, run_id: str, node: str, calls: list[dict[str, Any]]) -> Any:
        if self.llm is None:
            return None
        announce = self._emit if self._subscribers else None
        return NodeLLM(
            self.llm, calls, announce=announce, thread_id=thread_id, run_id=run_id, node=node
        )

    def _cache_memory(self) -> Memory:
        """Where cached node updates live: ``cache``, made in this process on first use."""
        if self.cache is None:
            self.cache = InProcessMemory()
        return self.cache

    @abstractmethod
    def _child_runner(self, flow: Flow) -> Any:
        """A runner of ``flow`` that runs the child threads of ``Subflow`` calls in a batch
        (``Runner`` makes them: this class is only its base)."""

    def _step_prefix(self, thread_id: str) -> str:
        """What step keys of this runner's nodes start with (a child flow's add its path)."""
        return thread_id

    def _deps_for(self, run_id: str) -> Any:
        """The deps the nodes of run ``run_id`` see: the call's own, else the runner's."""
        if self._call_deps:
            return self._call_deps.get(run_id, self.deps)
        return self.deps

    def _using_deps(self, run_id: str, deps: Any) -> AbstractContextManager[None]:
        """Hand ``deps`` to the nodes of run ``run_id`` (``UNSET``: the runner's own)."""
        return _NO_DEPS if deps is UNSET else self._call_deps_given(run_id, deps)

    @contextmanager
    def _call_deps_given(self, run_id: str, deps: Any) -> Iterator[None]:
        self._call_deps[run_id] = deps
        try:
            yield
        finally:
            del self._call_deps[run_id]

    # -- preparing runs (shared by sync and async) -------------------------------------------

    def _start_steps(
        self, thread_id: str, state: S | Mapping[str, Any] | None, run_id: str
    ) -> Steps:
        return start_steps(self, self._threads, thread_id, state, run_id)

    def _resume_steps(
        self,
        thread_id: str,
        value: Any,
        gate: str | None,
        expected_version: int | None,
        run_id: str,
        actor: str | None = None,
    ) -> Steps:
        return resume_steps(
            self, self._threads, thread_id, value, gate, expected_version, run_id, actor
        )

    _check_version = staticmethod(check_version)

    # -- drivers -----------------------------------------------------------------------------------

    def _drive(self, thread_id: str, run_id: str, steps: Steps) -> RunResult[S]:
        try:
            instruction = next(steps)
            while True:
                instruction = advance_sync(steps, instruction)
        except StopIteration as stop:
            return self._finish(thread_id, run_id, stop.value)
        finally:
            steps.close()  # on an error mid-batch, stop the batch's calls now, not at GC

    async def _adrive(self, thread_id: str, run_id: str, steps: Steps) -> RunResult[S]:
        try:
            instruction = next(steps)
            while True:
                instruction = steps.send(await perform_async(instruction))
        except StopIteration as stop:
            return self._finish(thread_id, run_id, stop.value)
        finally:
            steps.close()

    def _finish(self, thread_id: str, run_id: str, cursor: Cursor) -> RunResult[S]:
        return self._result(thread_id, cursor, run_id)
