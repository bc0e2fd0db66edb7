"""Checkpoints of a ``Map``/``Parallel`` node: an ``item`` record per finished call, ``pause``
records, and the group commit that saves several finished calls with one append.

A call's record is its checkpoint: once saved, the call never runs again, whatever happens to
the process. The calls that finish together are saved together (``Group``): one append, so one
fsync on ``JsonFileStore`` and one transaction on PostgreSQL, instead of one per call. A group
is saved once no other finished call is at hand, and waits for more only while calls finish
quickly (the drivers' guess: the last call took less than what is left of the window), at most
``GROUP_WINDOW_S`` after its first call finished; it holds at most ``GROUP_RECORDS`` calls. A
crash therefore loses at most one group of finished calls besides the running ones; they run
again on resume, like the calls that were running.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...definition._parallel import Call
from ...records._events import Event
from ...records._node_error import NodeError
from ...records._records import (
    FORMAT_VERSION,
    AnyRecord,
    ItemRecord,
    PauseRecord,
    Status,
    prebuilt,
)
from .._cursor import Cursor, Finished, ItemDone
from .._open import merged, open_pauses, without_call
from .._port import RunPort

__all__ = [
    "GROUP_RECORDS",
    "GROUP_WINDOW_S",
    "Group",
    "checkpoint_call",
    "checkpoint_pauses",
    "finished_call",
    "label_of",
]

#: Most finished calls saved with one append (bounds what a group holds in memory).
GROUP_RECORDS = 256
#: Longest a group waits for more calls after its first finished (seconds); only quick calls
#: are waited for (a call run in the calling thread that is slower than expected may stretch it).
GROUP_WINDOW_S = 0.05


def label_of(name: str, call: Call) -> str:
    """A call's name in events, logs and errors: ``node[label]``."""
    return f"{name}[{call.label}]"


def finished_call(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    name: str,
    version: int,
    call: Call,
    of: int,
    update: Mapping[str, Any],
    *,
    error: NodeError | None = None,
    finished: Finished | None = None,
    status: Status = "pending",
    given: dict[str, Any] | None = None,
    actor: str | None = None,
) -> tuple[ItemDone, ItemRecord | None]:
    """Call ``call`` of node ``name`` as the cursor keeps it, and its ``item`` record at
    ``version`` (``None`` without a store), naming ``actor`` as who gave ``given``.
    ``UnstorableValueError`` if JSON cannot hold its update.

    The record is prebuilt, not validated, as a step's is (``step_record``): every value has
    its field's type by construction, and validating 10,000 of them was a fifth of a map."""
    stored = runner._threads.dump(update, thread_id=thread_id, who=label_of(name, call))
    done = ItemDone(update, stored, error, of, call.label)
    if runner.store is None:
        return done, None
    values = {
        "v": FORMAT_VERSION,
        "version": version,
        "ts": runner._threads.stamp(),
        "run_id": run_id,
        "next": name,
        "status": status,
        "pauses": None,
        "due": None,
        "kind": "item",
        "node": name,
        "index": call.index,
        "of": of,
        "label": call.label,
        "update": stored,
        "attempts": finished.attempts if finished else 1,
        # Microseconds, as the float nearest the decimal (like round(x, 6), at a third of it).
        "latency_s": round(finished.latency_s * 1_000_000) / 1_000_000 if finished else 0.0,
        "error": error.model_dump() if error else None,
        "llm_calls": list(finished.llm_calls) if finished else [],
        "input": given,
        "actor": actor,
        "cached": finished.outcome.cached if finished else False,
    }
    return done, prebuilt(ItemRecord, values)


def checkpoint_call(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    call: Call,
    of: int,
    update: Mapping[str, Any],
    *,
    error: NodeError | None = None,
    finished: Finished | None = None,
    status: Status = "pending",
    given: dict[str, Any] | None = None,
    actor: str | None = None,
) -> Cursor:
    """Commit an ``item`` record for one finished call (or answered pause, a gate branch or a
    call that asked, whose input is ``given``, answered by ``actor``) on its own: its update
    is kept aside in the cursor, the state does not change; the pauses still open stay."""
    name = cursor.node
    done, record = finished_call(
        runner, thread_id, run_id, name, cursor.version + 1, call, of, update,
        error=error, finished=finished, status=status, given=given, actor=actor,
    )  # fmt: skip
    after = Cursor(
        cursor.state,
        name,
        status,
        cursor.version + 1,
        None,
        {**(cursor.items or {}), call.index: done},
        entered=cursor.step_version,
        pauses=without_call(cursor.pauses, call.index, call.label),
    )
    runner._threads.commit(thread_id, cursor.version, after, record)
    return after


def checkpoint_pauses(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    added: dict[str, Any],
    llm_calls: list[dict[str, Any]] | None = None,
    *,
    status: Status | None = None,
) -> Cursor:
    """Commit a ``pause`` record that adds (or replaces) pauses of the batch, ``added``: a
    call asked, or a Subflow call's child waits at other pauses now. The record holds only
    those, so a batch's journal grows with its pauses, not with their square; the thread
    keeps its status (or takes ``status``: ``waiting`` once every call has finished or asked)."""
    pauses = merged(cursor.pauses, added)
    after = cursor._replace(
        status=status or cursor.status,
        version=cursor.version + 1,
        pauses=pauses,
        entered=cursor.step_version,
    )
    record = None
    if runner.store is not None:
        record = PauseRecord.model_construct(
            version=after.version,
            ts=runner._threads.stamp(),
            run_id=run_id,
            next=cursor.node,
            status=after.status,
            pauses=added or None,  # what this record adds; the rest were journaled before
            node=cursor.node,
            gates=list(open_pauses(runner.flow, after)) if after.status == "waiting" else [],
            llm_calls=llm_calls or [],
        )
    runner._threads.commit(thread_id, cursor.version, after, record)
    return after


class Group:
    """The finished calls of a running batch not saved yet, saved together by ``save``.

    ``cursor`` is the thread's saved position; ``version`` the version the next record takes.
    The events of the calls (``NodeFinished``) are sent once they are saved, as a plain
    node's are after its commit.
    """

    def __init__(self, runner: RunPort, thread_id: str, cursor: Cursor) -> None:
        self.runner = runner
        self.thread_id = thread_id
        self.cursor = cursor
        self._calls: list[tuple[int, str, ItemDone]] = []
        self._records: list[AnyRecord] = []
        self._events: list[Event] = []
        self._since = 0.0
        self._failed = False

    @property
    def version(self) -> int:
        """The version the next call's record takes."""
        return self.cursor.version + len(self._calls) + 1

    def hold(self) -> float | None:
        """How much longer the unsaved calls may wait for the next finished one (seconds), or
        ``None`` when nothing waits to be saved (the driver may then block)."""
        if not self._calls:
            return None
        return max(0.0, GROUP_WINDOW_S - (time.monotonic() - self._since))

    def add(
        self, call: Call, done: ItemDone, record: ItemRecord | None, event: Event | None
    ) -> None:
        """Call ``call`` finished (record made at ``version``); saved now if the group is full
        or there is no store (nothing to gain by waiting)."""
        if not self._calls:
            self._since = time.monotonic()
        self._calls.append((call.index, call.label, done))
        if record is not None:
            self._records.append(record)
        if event is not None:
            self._events.append(event)
        if record is None or len(self._calls) >= GROUP_RECORDS:
            self.save()

    def save(self) -> Cursor:
        """Save the unsaved calls with one append; the thread's position after them."""
        if not self._calls:
            return self.cursor
        cursor = self.cursor
        items = dict(cursor.items or {})
        pauses = cursor.pauses
        for index, label, done in self._calls:
            items[index] = done
            pauses = without_call(pauses, index, label)
        after = Cursor(
            cursor.state,
            cursor.node,
            "pending",
            cursor.version + len(self._calls),
            None,
            items,
            entered=cursor.step_version,
            pauses=pauses,
        )
        self._failed = True  # until the append is through: never tried again on the way out
        self.runner._threads.commit_all(self.thread_id, cursor.version, after, self._records)
        self._failed = False
        self.cursor, events = after, self._events
        self._calls, self._records, self._events = [], [], []
        if self.runner._subscribers:
            for event in events:
                self.runner._emit(event)
        return after

    def save_on_exit(self, error: BaseException) -> None:
        """The batch is left on ``error``: save the calls that finished, so that they do not
        run again, unless saving is what failed. A second failure is logged; ``error`` is
        the one the caller raises."""
        if not self._calls or self._failed:
            return
        try:
            self.save()
        except Exception as exc:
            self.runner._log.warning(
                "batch_items_not_saved",
                thread_id=self.thread_id,
                node=self.cursor.node,
                items=len(self._calls),
                error_type=type(exc).__name__,
                after=type(error).__name__,
            )
