"""Timeouts are safe: two attempts of a node never run at once, and nodes see cancellation.

The node under test moves a fake robot axis that counts the attempts moving it together.
Nothing here asserts elapsed time: the checks are counters and events.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, RetryPolicy, Runner, node
from flowkit.stores import Store

RETRY = RetryPolicy(max_attempts=3, initial_delay=0, jitter=False)


class Cell(BaseModel):
    position: int = 0


class Axis:
    """A fake robot axis: records who moves it, and the most attempts ever moving it at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.entered: list[int] = []
        self.saw_cancel: dict[int, bool] = {}
        self.second_entered = threading.Event()
        self.stopped = threading.Event()

    @contextmanager
    def moving(self, attempt: int) -> Iterator[None]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.entered.append(attempt)
        if attempt > 1:
            self.second_entered.set()
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1
            if attempt == 1:
                self.stopped.set()


def _flow(move: Any) -> Flow:
    return Flow(name="cell", state=Cell, start="move", nodes={"move": move}, routes={"move": END})


def test_a_timed_out_sync_attempt_is_never_overlapped_by_its_retry(store: Store) -> None:
    axis = Axis()

    @node(writes=["position"], timeout=0.3, retry=RETRY)
    def move(state: Cell, ctx: Context) -> dict[str, int] | None:
        with axis.moving(ctx.attempt):
            if ctx.attempt == 1:
                ctx.cancel_event.wait()  # the move hangs until the timeout cancels it
                axis.saw_cancel[1] = ctx.cancelled
                # The axis takes a while to brake: a retry started now would move it too.
                axis.second_entered.wait(0.05)
                return None
            axis.saw_cancel[ctx.attempt] = ctx.cancelled
            return {"position": 100}

    result = Runner(_flow(move), store=store).start("t1")
    assert (result.status, result.state.position) == ("done", 100)
    assert axis.entered == [1, 2]
    assert axis.max_active == 1
    assert axis.saw_cancel == {1: True, 2: False}


def test_an_attempt_that_ignores_cancellation_fails_the_node_instead_of_overlapping(
    store: Store,
) -> None:
    axis = Axis()
    release = threading.Event()

    @node(writes=["position"], timeout=0.05, retry=RETRY)
    def move(state: Cell, ctx: Context) -> dict[str, int]:
        with axis.moving(ctx.attempt):
            if ctx.attempt == 1 and not release.is_set():
                release.wait()  # deaf to ctx.cancelled: keeps moving past timeout and grace
            return {"position": 100}

    runner = Runner(_flow(move), store=store)
    result = runner.start("t1")
    assert result.status == "failed"
    assert result.error is not None and result.error.type == "NodeStillRunningError"
    assert not result.error.retryable
    assert "ctx.cancelled" in result.error.message
    assert axis.entered == [1] and axis.max_active == 1

    release.set()
    assert axis.stopped.wait(60)
    resumed = runner.resume("t1")
    assert (resumed.status, resumed.state.position) == ("done", 100)
    assert axis.max_active == 1


def test_abandoned_attempts_of_other_threads_do_not_hold_a_thread_back() -> None:
    release = threading.Event()

    @node(writes=["position"], timeout=0.05)
    def move(state: Cell, ctx: Context) -> dict[str, int]:
        if ctx.thread_id == "stuck":
            release.wait()
        return {"position": 1}

    runner = Runner(_flow(move))
    try:
        assert runner.start("stuck").error is not None
        assert runner.start("free").status == "done"
    finally:
        release.set()


def test_the_async_driver_never_overlaps_attempts_of_a_sync_node(store: Store) -> None:
    axis = Axis()

    @node(writes=["position"], timeout=0.3, retry=RETRY)
    def move(state: Cell, ctx: Context) -> dict[str, int] | None:
        with axis.moving(ctx.attempt):
            if ctx.attempt == 1:
                ctx.cancel_event.wait()
                axis.saw_cancel[1] = ctx.cancelled
                axis.second_entered.wait(0.05)
                return None
            return {"position": 100}

    result = asyncio.run(Runner(_flow(move), store=store).astart("t1"))
    assert (result.status, result.state.position) == ("done", 100)
    assert axis.entered == [1, 2] and axis.max_active == 1
    assert axis.saw_cancel == {1: True}


@pytest.mark.parametrize("api", ["sync", "async"])
def test_an_async_node_is_cancelled_before_its_retry_starts(api: str) -> None:
    axis = Axis()

    @node(writes=["position"], timeout=0.05, retry=RETRY)
    async def move(state: Cell, ctx: Context) -> dict[str, int]:
        with axis.moving(ctx.attempt):
            if ctx.attempt == 1:
                try:
                    await asyncio.Event().wait()  # never set: only cancellation ends it
                except asyncio.CancelledError:
                    await asyncio.sleep(0.01)  # braking, still on the axis
                    raise
            return {"position": 100}

    runner = Runner(_flow(move))
    result = runner.start("t1") if api == "sync" else asyncio.run(runner.astart("t1"))
    assert (result.status, result.state.position) == ("done", 100)
    assert axis.entered == [1, 2] and axis.max_active == 1


def test_an_async_node_sees_the_cancel_flag_after_its_timeout() -> None:
    seen: list[bool] = []

    @node(timeout=0.05)
    async def move(state: Cell, ctx: Context) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            seen.append(ctx.cancelled)

    result = Runner(_flow(move)).start("t1")
    assert result.status == "failed" and result.error is not None
    assert result.error.type == "NodeTimeoutError"
    assert seen == [True]  # set before asyncio cancelled it


def test_a_node_without_timeout_is_never_cancelled() -> None:
    seen: list[bool] = []

    def move(state: Cell, ctx: Context) -> None:
        seen.append(ctx.cancelled)
        seen.append(ctx.cancel_event.is_set())

    assert Runner(_flow(move)).start("t1").status == "done"
    assert seen == [False, False]
