"""Drivers for a ``Batch``: run its jobs concurrently, hand back each one as it finishes.

Each job is a small generator of its own (a node call with its retries). The drivers advance
those generators in the driving thread or event loop, so the engine's bookkeeping (events,
attempt markers, logs) never runs concurrently; only the node calls themselves do: in a
bounded thread pool (sync driver; async nodes get an event loop per call there), or as tasks
on the running loop (async driver; sync nodes go to worker threads).

``next_finished(hold)`` with a number ``hold``: the core holds finished jobs not saved yet.
The driver then waits for the next one only while jobs finish quickly (the last one took at
most ``hold`` seconds), and at most ``hold`` seconds; otherwise it sends ``None`` and the core
saves what it holds first (see ``Batch.hold``), so a slow call's checkpoint never waits.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from .._calls import call_async, call_sync
from .._cursor import AttemptSteps, Batch, CallNode, Finished, Job, Outcome, Sleep

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncBatchDriver", "SyncBatchDriver"]


class _Running:
    """A job that has started: its steps and when it started."""

    __slots__ = ("job", "started", "steps")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.steps: AttemptSteps = job.make()
        self.started = time.perf_counter()

    def finish(self, stop: StopIteration) -> Finished:
        outcome, attempts, calls = stop.value
        return Finished(
            self.job.index, outcome, attempts, calls, time.perf_counter() - self.started
        )


class SyncBatchDriver:
    """Runs a batch's node calls in a thread pool of ``batch.limit`` workers."""

    def __init__(self, batch: Batch) -> None:

        self._call = call_sync
        self._limit = batch.limit
        self._waiting: deque[Job] = deque(batch.jobs)
        self._calls: dict[Future[Any], _Running] = {}
        self._sleeping: list[tuple[float, _Running]] = []
        self._active = 0
        self._ready: deque[Finished] = deque()
        #: How long the last job took: the guess for the next one.
        self._last_s = 0.0
        # One call at a time runs in this thread, as a plain node does: handing each to a
        # worker thread and waiting for it cost more than a durable step (~0.2 ms a call).
        self._pool = (
            None
            if batch.limit == 1
            else ThreadPoolExecutor(
                max_workers=min(batch.limit, max(1, len(batch.jobs))),
                thread_name_prefix=f"flowkit-{batch.node}",
            )
        )

    def next_finished(self, hold: float | None = None) -> Finished | None:
        """The next finished job; with ``hold``, ``None`` rather than wait longer than that for
        one, or at all when the last job took longer (a call in this thread is then not
        started)."""
        while not self._ready:
            # A call that finished here is handed back (and checkpointed) before the next
            # one starts, so its checkpoint never waits for more than the calls of its group.
            while self._waiting and self._active < self._limit and not self._ready:
                if self._pool is None and hold is not None and self._last_s > hold:
                    return None
                self._active += 1
                running = _Running(self._waiting.popleft())
                self._advance(running, next(running.steps))
            if self._ready:
                break
            if hold is not None:
                self._wait(hold if self._last_s <= hold else 0.0)
                if not self._ready:
                    return None
                break
            self._wait()
        return self._ready.popleft()

    def _advance(self, running: _Running, instruction: CallNode | Sleep) -> None:
        if isinstance(instruction, Sleep):
            self._sleeping.append((time.monotonic() + instruction.seconds, running))
        elif self._pool is None:
            try:
                outcome = Outcome(value=self._call(instruction))
            except Exception as exc:
                outcome = Outcome(error=exc)
            self._send(running, outcome)
        else:
            self._calls[self._pool.submit(self._call, instruction)] = running

    def _send(self, running: _Running, outcome: Outcome | None) -> None:
        try:
            instruction = running.steps.send(outcome)
        except StopIteration as stop:
            self._active -= 1
            finished = running.finish(stop)
            self._last_s = finished.latency_s
            self._ready.append(finished)
            return
        self._advance(running, instruction)

    def _wait(self, limit: float | None = None) -> None:
        """Wait until a call finishes or a back-off ends (at most ``limit`` seconds)."""
        timeout = limit
        if self._sleeping:
            wake = max(0.0, min(wake for wake, _ in self._sleeping) - time.monotonic())
            timeout = wake if limit is None else min(wake, limit)
        if not self._calls:  # only retries waiting out their back-off
            time.sleep(timeout or 0.0)
        done, _ = wait(list(self._calls), timeout=timeout, return_when=FIRST_COMPLETED)
        for future in done:
            running = self._calls.pop(future)
            error = future.exception()
            if error is None:
                outcome = Outcome(value=future.result())
            elif isinstance(error, Exception):
                outcome = Outcome(error=error)
            else:
                raise error  # KeyboardInterrupt and the like end the run, as in a plain node
            self._send(running, outcome)
        now = time.monotonic()
        due = [entry for entry in self._sleeping if entry[0] <= now]
        for entry in due:
            self._sleeping.remove(entry)
            self._send(entry[1], None)

    def close(self) -> None:
        # Wait for calls already running: two attempts of one call must never overlap, and a
        # resume in this process could start the same call again.
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


class AsyncBatchDriver:
    """Runs a batch's node calls as tasks on the running event loop, ``batch.limit`` at once."""

    def __init__(self, batch: Batch) -> None:
        import asyncio

        self._asyncio = asyncio
        self._done: asyncio.Queue[Finished | BaseException] = asyncio.Queue()
        self._last_s = 0.0  # how long the last job took: the guess for the next one
        gate = asyncio.Semaphore(batch.limit)
        self._tasks = [asyncio.ensure_future(self._run(job, gate)) for job in batch.jobs]

    async def _run(self, job: Job, gate: asyncio.Semaphore) -> None:

        asyncio = self._asyncio
        try:
            async with gate:
                running = _Running(job)
                instruction = next(running.steps)
                while True:
                    outcome: Outcome | None = None
                    if isinstance(instruction, Sleep):
                        await asyncio.sleep(instruction.seconds)
                    else:
                        try:
                            if instruction.node.is_async:
                                value = await call_async(instruction)
                            else:  # a sync call must not block the other calls' event loop
                                value = await asyncio.to_thread(call_sync, instruction)
                            outcome = Outcome(value=value)
                        except Exception as exc:
                            outcome = Outcome(error=exc)
                    try:
                        instruction = running.steps.send(outcome)
                    except StopIteration as stop:
                        self._done.put_nowait(running.finish(stop))
                        return
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a bug in the engine: surface it, never hang
            self._done.put_nowait(exc)

    async def next_finished(self, hold: float | None = None) -> Finished | None:
        """The next finished job; with ``hold``, ``None`` rather than wait longer than that for
        one, or at all when the last job took longer."""
        if hold is None or not self._done.empty():
            item = await self._done.get()
        elif self._last_s > hold:
            return None
        else:
            try:
                item = await self._asyncio.wait_for(self._done.get(), hold)
            except TimeoutError:
                return None
        if isinstance(item, BaseException):
            raise item
        self._last_s = item.latency_s
        return item

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
