"""Firing a flow's due timers (``Runner.fire_due``): each under its thread's lock, after reading
the thread again, once whoever else fires the same store at the same time.

A gate's deadline that passed unanswered moves its thread to the gate's ``on_timeout``; a node
asleep (``ctx.sleep_until``) wakes and its route decides. The run then goes on from there, as
after a resume, driven by the Runner's own driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from ..definition._flow import Flow
from ..errors import ConflictError, RunError, ThreadNotFoundError
from ..execution._core import run_steps
from ..execution._cursor import Cursor, Steps
from ..execution._invoke import refuse_inside_event_loop
from ..execution._port import RunPort
from ..execution._threads import Threads
from ..execution._timers import as_time, drop_stale, due_timers, fire_step, timestamp
from ..execution.subflows._child import leaf
from ..execution.subflows._run import fire_child
from ..records._records import new_run_id
from ..stores._protocol import DueTimer
from ._fired import Fired
from ._result import RunResult

__all__ = ["fire_due_timers"]

#: The Runner's sync driver: runs ``steps`` of ``(thread_id, run_id)`` to their end.
Drive = Callable[[str, str, Steps], RunResult[Any]]


def fire_due_timers(
    runner: RunPort,
    threads: Threads,
    drive: Drive,
    now: datetime | None,
    limit: int | None,
) -> list[Fired[Any]]:
    """Fire the timers due by ``now`` (default: the runner's clock), earliest first, at most
    ``limit``; one ``Fired`` per timer fired (see ``Runner.fire_due``)."""
    if now is not None and (not isinstance(now, datetime) or now.utcoffset() is None):
        raise RunError(
            f"fire_due(now=...) takes an aware datetime (e.g. datetime.now(UTC)), not {now!r:.60}.",
            thread_id="",
        )
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise RunError(
            f"fire_due(limit=...) is a whole number of at least 1, or None, not {limit!r:.40}.",
            thread_id="",
        )
    flow = runner.flow
    try:
        refuse_inside_event_loop(flow, "")
    except RunError as exc:
        raise RunError(
            f"Flow `{flow.name}` has async nodes and fire_due was called inside an "
            "event loop; call it from a thread there: "
            "`await asyncio.to_thread(runner.fire_due)`.",
            thread_id="",
        ) from exc
    until = timestamp(now if now is not None else runner.clock())
    timers = due_timers(runner, threads.ids, threads.load, until, limit)
    fired = (_fire(runner, threads, drive, timer, until) for timer in timers)
    return [f for f in fired if f is not None]


def _fire(
    runner: RunPort, threads: Threads, drive: Drive, timer: DueTimer, until: float
) -> Fired[Any] | None:
    """Fire one thread's timer if it is still due when read under its lock; what fired, or
    ``None``."""
    thread_id = timer.thread_id
    run_id = new_run_id()
    flow = runner.flow
    try:
        with threads.lock(thread_id):
            cursor = threads.load(thread_id, migrate=True)
            if cursor.due is None or cursor.due > until or cursor.status != "waiting":
                drop_stale(runner.store, timer, cursor)
                return None
            if cursor.sub is None:
                after = fire_step(runner, thread_id, run_id, cursor)
            else:  # the timer of a gate or a node inside a Subflow
                after = fire_child(runner, thread_id, run_id, cursor)
            fired: Fired[Any] = Fired(
                thread_id,
                _timer_kind(flow, cursor),
                _timer_path(flow, cursor),
                after.node,
                as_time(cursor.due),
            )
            try:
                result = drive(thread_id, run_id, run_steps(runner, thread_id, run_id, after))
            except Exception as exc:  # the timer fired; the run after it did not finish
                runner._log.warning(
                    "timer_run_failed", thread_id=thread_id, error_type=type(exc).__name__
                )
                return replace(fired, error=exc)
            return replace(fired, result=result)
    except ConflictError:  # someone else runs the thread, or fired it first: theirs
        return None
    except ThreadNotFoundError:  # deleted since the index was read
        drop_stale(runner.store, timer, None)
        return None
    except Exception as exc:  # nothing committed: the timer stays due, tried next time
        runner._log.warning("timer_failed", thread_id=thread_id, error_type=type(exc).__name__)
        return None


def _timer_kind(flow: Flow, cursor: Cursor) -> Literal["deadline", "wake"]:
    """``"wake"`` for a node asleep, ``"deadline"`` for a gate's (inside children too)."""
    if cursor.sub is None:
        return "wake" if cursor.node in flow.nodes else "deadline"
    child_flow, inner, _ = leaf(flow, cursor)
    return "wake" if inner.node in child_flow.nodes else "deadline"


def _timer_path(flow: Flow, cursor: Cursor) -> str:
    """Where the timer fired: the gate or node, by path inside a ``Subflow``."""
    if cursor.sub is None:
        return cursor.node
    _, inner, prefix = leaf(flow, cursor)
    return f"{prefix}/{inner.node}"
