"""Workers: many processes sharing the threads of one store, each run by one of them at a time.

``runner.submit(thread_id, input)`` queues work in a store that has a work queue (today
``PostgresStore``); ``Worker(flow, store=...)`` (or ``flowkit worker TARGET --store URL``)
claims runnable threads, runs each until it waits or finishes, and gives it back. A thread is
runnable when it has a queued input (a start state for a new thread, else a gate answer) or
when it is ``pending`` with nobody's live lease on it: its last worker died mid-run, and this
one resumes it from its last committed step. An input is marked used in the same transaction
as the step that applies it, so it is applied exactly once; one that cannot be applied (the
thread has finished, the input does not fit the gate) is marked rejected with the reason.

A worker also fires the timers of its flows (a gate's deadline, a node's wake-up;
``Runner.fire_due``) every ``timer_poll_s`` seconds, from a thread of its own; each timer
fires once however many workers share the store (docs/timers.md).
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from .errors import (
    ConflictError,
    FlowkitError,
    InvalidResumeInputError,
    InvalidStateError,
    InvariantViolation,
    NotWaitingError,
    RunError,
    StoreError,
    ThreadExistsError,
    UnknownGateError,
    UnstorableValueError,
)
from .foundation._logging import get_logger
from .foundation._progress import OnProgress
from .stores._work_queue import WorkQueue, work_queue

if TYPE_CHECKING:
    from .definition._flow import Flow
    from .runner._runner import Runner
    from .stores.postgres import ThreadStatus, WorkItem
    from .stores.postgres._queue import Claim

__all__ = ["WorkQueue", "Worker", "WorkerStats", "submit", "work_queue"]

#: Errors that say a queued input can never be applied: it is rejected, not retried.
_REJECT = (
    InvalidResumeInputError,
    InvalidStateError,
    NotWaitingError,
    UnknownGateError,
    ThreadExistsError,
    InvariantViolation,
    UnstorableValueError,
)


def submit(
    runner: Runner[Any],
    thread_id: str,
    input: Any = None,
    *,
    gate: str | None = None,
    expected_version: int | None = None,
) -> int:
    """``runner.submit(...)``: queue ``input`` for a worker; the work item's id."""
    return runner.submit(thread_id, input, gate=gate, expected_version=expected_version)


@dataclass(slots=True)
class WorkerStats:
    """What a worker did: threads claimed, runner calls, inputs rejected, runs that failed,
    timers fired."""

    claims: int = 0
    runs: int = 0
    rejected: int = 0
    errors: int = 0
    timers: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


class Worker:
    """Claims and runs threads of ``flows`` from ``store`` with ``concurrency`` OS threads.

    ``run()`` serves until ``stop()`` (or, with ``until_idle=True``, until nothing is left
    to claim). ``llm`` is handed to every runner. ``poll_s``: pause between empty claims.
    ``park_s``: how long a thread whose run raised is left alone before another try.
    ``timer_poll_s``: how often the due timers of the flows are fired (``None``: never, for
    a deployment where another process does it). ``clock`` is every runner's clock (an aware
    ``datetime``; default: the wall clock), as ``Runner(clock=...)``: tests move it by hand.
    """

    def __init__(
        self,
        flows: Flow | Sequence[Flow],
        *,
        store: Any,
        concurrency: int = 1,
        llm: Any = None,
        poll_s: float = 0.2,
        park_s: float = 60.0,
        runs_per_claim: int = 20,
        timer_poll_s: float | None = 2.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from .definition._flow import Flow

        chosen = [flows] if isinstance(flows, Flow) else list(flows)
        if not chosen or not all(isinstance(f, Flow) for f in chosen):
            raise RunError("A Worker needs one Flow or a list of Flows to run.", thread_id="")
        if not isinstance(concurrency, int) or concurrency < 1:
            raise RunError(
                f"concurrency must be a whole number of at least 1, got {concurrency!r}",
                thread_id="",
            )
        if timer_poll_s is not None and (
            isinstance(timer_poll_s, bool)
            or not isinstance(timer_poll_s, int | float)
            or not 0 < timer_poll_s < float("inf")
        ):
            raise RunError(
                f"timer_poll_s must be a positive number of seconds, or None, got "
                f"{timer_poll_s!r:.40}",
                thread_id="",
            )
        self.flows = {flow.name: flow for flow in chosen}
        self.store = store
        self.queue = work_queue(store)
        self.concurrency = concurrency
        self.llm = llm
        self.poll_s = poll_s
        self.park_s = park_s
        self.runs_per_claim = runs_per_claim
        self.timer_poll_s = timer_poll_s
        self.clock = clock
        self.stats = WorkerStats()
        self._stop = threading.Event()
        self._log = get_logger()

    def stop(self) -> None:
        """Claim nothing more; ``run`` returns once each slot has given its thread back."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self, *, until_idle: bool = False) -> WorkerStats:
        """Serve until stopped (or idle); returns what was done."""
        self._log.info("worker_started", concurrency=self.concurrency, pid=os.getpid())
        timers = None
        if self.timer_poll_s is not None and until_idle:
            self.fire_timers()  # what is due now, before the work it may queue
        elif self.timer_poll_s is not None:
            timers = threading.Thread(target=self._timers, name="flowkit-timers", daemon=True)
            timers.start()
        if self.concurrency == 1:
            self._slot(until_idle)
        else:
            slots = [
                threading.Thread(target=self._slot, args=(until_idle,), name=f"flowkit-worker-{i}")
                for i in range(self.concurrency)
            ]
            for slot in slots:
                slot.start()
            for slot in slots:
                slot.join()
        if timers is not None:
            timers.join()
        self._log.info("worker_stopped", claims=self.stats.claims, runs=self.stats.runs)
        return self.stats

    def fire_timers(self) -> int:
        """Fire the due timers of every flow of this worker now (``Runner.fire_due``); how
        many fired. A store that cannot be reached is logged and tried at the next poll."""
        return self._fire(self._runners())

    def _fire(self, runners: dict[str, Runner[Any]]) -> int:
        fired = 0
        for runner in runners.values():
            try:
                fired += len(runner.fire_due())
            except Exception as exc:  # the database is away (StoreError): the next poll
                self._log.warning("worker_timers_failed", error_type=type(exc).__name__)
        self.stats.add(timers=fired)
        return fired

    def _timers(self) -> None:
        """Fire due timers every ``timer_poll_s`` until stopped (its own thread)."""
        assert self.timer_poll_s is not None
        runners = self._runners()
        while not self._stop.is_set():
            self._fire(runners)
            self._stop.wait(self.timer_poll_s)

    def run_once(self) -> bool:
        """Claim one runnable thread and serve it; whether there was one."""
        return self._serve_one(self._runners())

    # -- one slot ------------------------------------------------------------------------------

    def _runners(self) -> dict[str, Runner[Any]]:
        from .runner._runner import Runner

        # Each slot has runners of its own: a runner's cursor cache is not shared across OS
        # threads, and the store's leases keep two slots off one thread anyway.
        return {
            name: Runner(flow, store=self.store, llm=self.llm, clock=self.clock)
            for name, flow in self.flows.items()
        }

    def _slot(self, until_idle: bool) -> None:
        runners = self._runners()
        idle_wait = self.poll_s
        while not self._stop.is_set():
            try:
                served = self._serve_one(runners)
            except StoreError as exc:  # the database is away: wait and try again
                self._log.warning("worker_claim_failed", error_type=type(exc).__name__)
                served = False
            if served:
                idle_wait = self.poll_s
                continue
            if until_idle:
                return
            self._stop.wait(idle_wait * random.uniform(0.5, 1.5))
            idle_wait = min(idle_wait * 2, max(self.poll_s, 2.0))

    def _serve_one(self, runners: dict[str, Runner[Any]]) -> bool:
        claimed = self.queue.claim_next(list(self.flows))
        if claimed is None:
            return False
        self.stats.add(claims=1)
        try:
            self._serve(runners, claimed)
        finally:
            self.queue.release(claimed.thread_id)
        return True

    def _serve(self, runners: dict[str, Runner[Any]], claimed: Claim) -> None:
        thread_id = claimed.thread_id
        found, item = claimed.status, claimed.item  # read with the claim, in its round trip
        for turn in range(self.runs_per_claim):
            if self.queue.lease_lost(thread_id):
                return
            if turn:  # after a run (or a rejected input): read them again
                found, item = self.queue.next_work(thread_id)
            step = self._next_call(runners, thread_id, found, item)
            if step is None:
                return
            item, call = step
            if call is not None and not self._call(thread_id, item, call):
                return

    def _next_call(
        self,
        runners: dict[str, Runner[Any]],
        thread_id: str,
        found: ThreadStatus | None,
        item: WorkItem | None,
    ) -> tuple[WorkItem | None, Callable[[], Any] | None] | None:
        """What to do next with a claimed thread standing at ``found`` (None: it does not
        exist yet) whose next queued input is ``item``: a runner call and the item it uses,
        an item rejected (no call), or nothing left (None)."""
        if found is None:  # a new thread: the item is its start (claimed for its flow)
            runner = runners.get(item.flow) if item is not None else None
            if item is None or runner is None:
                return None
            return item, partial(runner.start, thread_id, item.input)
        if item is not None and item.flow != found.flow:
            self._reject(item, f"the thread belongs to flow `{found.flow}`, not `{item.flow}`")
            return item, None
        runner = runners.get(found.flow)
        if runner is None:
            return None
        if found.status == "pending":  # a run that stopped mid-way: finish it first
            return None, partial(runner.resume, thread_id)
        if item is None:
            return None
        if item.expected_version is not None and item.expected_version != found.version:
            reason = f"the thread is at version {found.version}, not {item.expected_version}"
        elif found.status == "waiting" or (found.status == "failed" and item.input is None):
            return item, partial(runner.resume, thread_id, item.input, gate=item.gate)
        else:
            reason = f"the thread is {found.status}; fork it to run again"
        self._reject(item, reason)
        return item, None

    def _call(self, thread_id: str, item: WorkItem | None, call: Callable[[], Any]) -> bool:
        """Run one runner call, using ``item``; whether serving the thread may go on."""
        queue = self.queue
        if item is not None:
            queue.consume_on_write(thread_id, item.id)
        try:
            call()
        except _REJECT as exc:
            if item is None:
                return self._failed(thread_id, exc)
            self._reject(item, str(exc))
            return True
        except ConflictError:
            return False  # someone else moved the thread (or took it over): leave it to them
        except FlowkitError as exc:  # e.g. StepLimitError: not fixed by running it again now
            return self._failed(thread_id, exc)
        except Exception as exc:  # a bug in a node escapes only as a failed run, never here
            return self._failed(thread_id, exc)
        finally:
            queue.consume_on_write(thread_id, None)
        self.stats.add(runs=1)
        return True

    def _reject(self, item: WorkItem, reason: str) -> None:
        self.queue.reject(item.id, reason)
        self.stats.add(rejected=1)
        self._log.warning("work_rejected", thread_id=item.thread_id, item=item.id)

    def _failed(self, thread_id: str, exc: BaseException) -> bool:
        self.stats.add(errors=1)
        self._log.error("worker_run_failed", thread_id=thread_id, error_type=type(exc).__name__)
        with suppress(StoreError):  # parking only spares the other workers a useless retry
            self.queue.park(thread_id, self.park_s)
        return False


def serve_forever(
    worker: Worker, *, grace_s: float = 30.0, on_progress: OnProgress | None = None
) -> WorkerStats:
    """Run ``worker`` until SIGTERM or SIGINT; then finish what it holds (at most ``grace_s``)
    and give back every lease. For the main thread of a worker process. ``on_progress(runs,
    None, "claimed N, done M, failed K")`` is called from this thread a few times a second."""
    import signal

    def graceful(signum: int, frame: Any) -> None:
        worker._log.info("worker_stopping", signal=signal.Signals(signum).name)
        worker.stop()

    previous = {sig: signal.signal(sig, graceful) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        runner = threading.Thread(target=worker.run, name="flowkit-worker", daemon=True)
        runner.start()
        while runner.is_alive() and not worker.stopping:
            runner.join(0.2)
            if on_progress is not None:
                stats = worker.stats
                counts = f"claimed {stats.claims}, done {stats.runs}, failed {stats.errors}"
                on_progress(stats.runs, None, counts)
        runner.join(grace_s)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return worker.stats
