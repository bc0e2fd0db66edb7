"""Calling one node: sync or async, with or without a timeout, from a sync or async driver.

When a node's timeout fires, its ``ctx.cancel_event`` is set. An async node is cancelled by
``asyncio`` and has unwound before the run goes on. A sync node runs in a worker thread, and
Python cannot stop a thread: past its timeout it is *abandoned* (its result is discarded, the
run records a ``NodeTimeoutError``) but may still be running. So that two attempts of a node
never run at once (think of a node moving a robot axis), the next attempt of that node in
that thread first waits for the abandoned one to return, for up to its timeout again; if it
is still running then, the attempt fails with ``NodeStillRunningError`` instead of starting.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import RunError
from ._calls import call_async, call_sync
from ._cursor import Batch, Finished, Instruction, Outcome, Sleep, Steps
from .batch._drive import AsyncBatchDriver, SyncBatchDriver

if TYPE_CHECKING:
    from ..definition._flow import Flow

__all__ = [
    "advance_sync",
    "perform_async",
    "refuse_inside_event_loop",
]


def advance_sync(steps: Steps, instruction: Instruction) -> Instruction:
    """Carry out one instruction of the execution core in this thread; the core's next one.

    The one sync driver step, shared by ``Runner`` and ``Runner.stream``; the core's
    ``StopIteration`` (the run waits, finishes or fails) passes through to the caller.
    """
    if isinstance(instruction, Sleep):
        threading.Event().wait(instruction.seconds)
        return steps.send(None)
    if isinstance(instruction, Batch):
        if instruction.driver is None:
            instruction.driver = SyncBatchDriver(instruction)
        return steps.send(instruction.driver.next_finished())
    try:
        outcome = Outcome(value=call_sync(instruction))
    except Exception as exc:
        outcome = Outcome(error=exc)
    return steps.send(outcome)


async def perform_async(instruction: Instruction) -> Outcome | Finished | None:
    """Carry out one instruction of the execution core on the running event loop; what to
    send back to the core. The one async driver step, shared by ``Runner`` and ``astream``."""
    import asyncio

    if isinstance(instruction, Sleep):
        await asyncio.sleep(instruction.seconds)
        return None
    if isinstance(instruction, Batch):
        if instruction.driver is None:
            instruction.driver = AsyncBatchDriver(instruction)
        finished: Finished = await instruction.driver.next_finished()
        return finished
    try:
        return Outcome(value=await call_async(instruction))
    except Exception as exc:
        return Outcome(error=exc)


def refuse_inside_event_loop(flow: Flow, thread_id: str) -> None:
    """The sync API cannot run a flow's async nodes from inside a running event loop.

    Checked before anything is written, so the caller gets a clear error instead of a
    thread that failed at a node which never ran.
    """
    if not flow.has_async:
        return
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RunError(
        f"Flow `{flow.name}` has async nodes and this call runs inside an event loop; use "
        "`await runner.astart(...)` / `await runner.aresume(...)` there.",
        thread_id=thread_id,
    )
