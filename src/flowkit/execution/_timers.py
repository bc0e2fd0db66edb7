"""Timers: a gate's deadline and a node's wake-up, set where the thread gets there, fired once.

A thread arriving at a gate with ``deadline=`` carries ``due`` (``_open.arrive``); a node that
calls ``ctx.sleep_until(when)`` ends its step asleep (``sleep_step``): status ``waiting`` at
the node, ``due`` set, and a pause entry ``{"wake": due}`` that no answer can address. When the
timer fires (``fire_step``, under the thread's lock, after the runner re-read the thread and
saw it still due), the thread moves on: to the gate's ``on_timeout``, or where the sleeping
node's route says; the move is journaled as a ``timer`` record and the run continues from
there. ``due_timers`` finds the due threads: from the store's ``TimerIndex``, else by reading
every thread.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..definition._gate import MAX_DEADLINE
from ..definition._node import Node
from ..definition._sleep import SleepUntil
from ..errors import FlowkitError, NodeContractError, NotWaitingError
from ..records._records import TimerRecord
from ..stores._protocol import DueTimer, Store, timer_index
from ._asks import wait_at_node
from ._cursor import Cursor
from ._open import arrive, due_after
from ._port import RunPort
from ._steps import move, status_of

__all__ = [
    "as_time",
    "asleep",
    "drop_stale",
    "due_timers",
    "fire_step",
    "sleep_step",
    "sleeping",
    "timestamp",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def timestamp(moment: datetime) -> float:
    """An aware ``moment`` in seconds since the epoch, whole milliseconds (as records keep
    times), read exactly."""
    return ((moment - _EPOCH) // _MS) / 1000


def as_time(due: float) -> datetime:
    """A record's ``due`` as an aware UTC ``datetime``."""
    return _EPOCH + timedelta(milliseconds=round(due * 1000))


def sleeping(cursor: Cursor) -> bool:
    """Whether the thread sleeps at a node (``ctx.sleep_until``) until its timer fires."""
    entry = (cursor.pauses or {}).get(cursor.node)
    return cursor.status == "waiting" and entry is not None and "wake" in entry


def asleep(thread_id: str, cursor: Cursor) -> NotWaitingError:
    """The error for an answer to a thread that sleeps: nothing there takes input."""
    assert cursor.due is not None
    return NotWaitingError(
        f"Thread `{thread_id}` sleeps at `{cursor.node}` until "
        f"{as_time(cursor.due).isoformat()} (ctx.sleep_until) and takes no input; its timer "
        "wakes it (fire_due). To wake it now, move it with update_state(goto=...).",
        thread_id=thread_id,
        status=cursor.status,
        node=cursor.node,
    )


# -- a node falls asleep -------------------------------------------------------------------------


def wake_time(runner: RunPort, name: str, when: Any) -> float:
    """When node ``name``'s wake-up is due; ``NodeContractError`` (nothing saved) for a time
    that is not an aware ``datetime`` or a ``timedelta`` of zero or more."""
    fix = (
        "pass an aware datetime (e.g. datetime.now(UTC) + timedelta(days=1)) or a timedelta "
        "from now. Nothing was saved; fix the node and resume."
    )
    if isinstance(when, timedelta):
        if when < timedelta(0):
            raise NodeContractError(
                f"`{name}` asked to sleep for a negative time ({when}); {fix}", node=name
            )
        if when > MAX_DEADLINE:
            raise NodeContractError(
                f"`{name}` asked to sleep for more than {MAX_DEADLINE.days} days; {fix}",
                node=name,
            )
        return due_after(runner, when)
    if isinstance(when, datetime):
        if when.utcoffset() is None:
            raise NodeContractError(
                f"`{name}` asked to sleep until a naive datetime (no time zone), which could "
                f"mean any of 24 hours; {fix}",
                node=name,
            )
        return timestamp(when)
    raise NodeContractError(
        f"`{name}` asked to sleep until a {type(when).__name__}; {fix}", node=name
    )


def sleep_step(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: Node,
    sleep: SleepUntil,
    attempt: int,
    calls: list[dict[str, Any]],
    latency: float,
) -> Cursor:
    """Commit node ``name``'s sleep: the thread waits at the node until its timer fires."""
    due = wake_time(runner, name, sleep.when)
    entry = {"wake": due}
    step = (attempt, calls, latency)
    return wait_at_node(
        runner, thread_id, run_id, cursor, name, node, sleep.update, entry, step, due
    )


# -- a timer fires ------------------------------------------------------------------------------


def fire_step(runner: RunPort, thread_id: str, run_id: str, cursor: Cursor) -> Cursor:
    """Fire the due timer of ``cursor`` (the caller holds the thread's lock and has just read
    it): a gate's deadline moves the thread to the gate's ``on_timeout``, a sleeping node's
    wake-up to where its route says. Routed through the machine, mirrored, checked against
    the invariants, journaled as a ``timer`` record with the version the caller read (a
    ``ConflictError`` if anyone moved the thread since); the cursor after it."""
    flow = runner.flow
    name, fired = cursor.node, cursor.due
    assert fired is not None and cursor.status == "waiting"
    gate = flow.gates.get(name)
    target = gate.on_timeout if gate is not None else flow.next_state(name, cursor.state)
    assert target is not None, "a gate's timer comes from its deadline, with its on_timeout"
    update: dict[str, Any] = {}
    state = move(flow, thread_id, name, target, cursor.state, update, cursor.version)
    pauses, due = arrive(runner, thread_id, target, state)
    after = Cursor(
        state, target, status_of(flow, target), cursor.version + 1, pauses=pauses, due=due
    )
    record = None
    if runner.store is not None:
        record = TimerRecord(
            version=after.version,
            ts=runner._threads.stamp(),
            run_id=run_id,
            next=target,
            status=after.status,
            pauses=None if pauses is None else dict(pauses),
            due=due,
            node=name,
            fired=fired,
            update=runner._threads.dump(update, thread_id=thread_id, who=name),
        )
    runner._threads.commit(thread_id, cursor.version, after, record)
    runner._log.info(
        "timer_fired",
        thread_id=thread_id,
        run_id=run_id,
        node=name,
        target=target,
        kind="deadline" if gate is not None else "wake",
    )
    runner._announce(thread_id, run_id, name, after, update)
    return after


# -- finding due timers -------------------------------------------------------------------------


def due_timers(
    runner: RunPort,
    ids: Callable[[], list[str]],
    load: Callable[[str], Cursor],
    until: float,
    limit: int | None,
) -> list[DueTimer]:
    """The threads of the runner's flow whose timer is due by ``until``, earliest first: from
    the store's timer index when it keeps one, else by reading each of ``ids()`` with ``load``
    (a thread that cannot be read, or is another flow's, is left to whoever reads it next)."""
    store: Store | None = runner.store
    index = timer_index(store)
    if index is not None:
        return index.due_timers(until, flow=runner.flow.name, limit=limit)
    found = []
    for thread_id in ids():
        try:
            cursor = load(thread_id)
        except FlowkitError:
            continue
        if cursor.due is not None and cursor.due <= until and cursor.status == "waiting":
            found.append(DueTimer(thread_id, cursor.due))
    found.sort(key=lambda timer: (timer.due, timer.thread_id))
    return found if limit is None else found[:limit]


def drop_stale(store: Store | None, timer: DueTimer, cursor: Cursor | None) -> None:
    """Forget an index entry the thread (``None``: deleted) no longer has: a crash between
    the writes of a step, or of a delete, left it."""
    index = timer_index(store)
    if index is not None and (cursor is None or cursor.due != timer.due):
        index.drop_timer(timer.thread_id, timer.due)
