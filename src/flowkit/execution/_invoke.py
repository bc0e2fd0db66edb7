"""Driving the execution core: carrying out its instructions (run a node, back off, run a
batch) in this thread (``advance_sync``) or on the event loop (``perform_async``). How one
node is called, with its timeout, is ``_calls``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ..errors import RunError
from ._calls import call_async, call_sync
from ._cursor import Batch, Cursor, Finished, Instruction, Outcome, Sleep, Steps
from .batch._drive import AsyncBatchDriver, SyncBatchDriver

if TYPE_CHECKING:
    from ..definition._flow import Flow

__all__ = [
    "advance_sync",
    "drive_sync",
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
        return steps.send(instruction.driver.next_finished(instruction.hold))
    try:
        outcome = Outcome(value=call_sync(instruction))
    except Exception as exc:
        outcome = Outcome(error=exc)
    return steps.send(outcome)


def drive_sync(steps: Generator[Instruction, Any, Cursor]) -> Cursor:
    """Carry out every instruction of ``steps`` in this thread; the cursor they end at."""
    try:
        instruction = next(steps)
        while True:
            instruction = advance_sync(steps, instruction)
    except StopIteration as stop:
        result: Cursor = stop.value
        return result
    finally:
        steps.close()


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
        finished: Finished | None = await instruction.driver.next_finished(instruction.hold)
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
