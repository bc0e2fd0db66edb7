"""Journal records: what a store keeps for each thread, versioned and JSON-ready.

A thread's journal starts with a ``start`` record holding the whole initial state; every
later record holds only its update, so bytes written per step do not grow with history.
Snapshots hold a whole state so loading need not replay from the start. Every record
carries ``v`` (the format version) and a ``kind`` discriminator.

Format v2 (this flowkit) adds a checksum to every stored line and snapshot (see
``flowkit.stores._jsonl``); v1 records, which have none, are still read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "FORMAT_VERSION",
    "TS_RANGE",
    "UNSEALED_VERSION",
    "AnyRecord",
    "InputRecord",
    "ItemRecord",
    "JoinRecord",
    "PatchRecord",
    "PauseRecord",
    "Record",
    "RecordAdapter",
    "Snapshot",
    "StartRecord",
    "Status",
    "StepRecord",
    "SubRecord",
    "TimerRecord",
    "prebuilt",
    "record_clock",
    "record_time",
]

FORMAT_VERSION = 2
#: Records of this format version carry no checksum (written before v2); still readable.
UNSEALED_VERSION = 1

#: Where a thread stands: ``pending`` (a node is next; resume continues it), ``waiting``
#: (paused at a gate), ``done`` or ``failed``.
Status = Literal["pending", "waiting", "done", "failed"]

#: Seconds since the epoch, within what ``datetime`` can show (years 1 to 9999): a record with
#: a time outside it is damage, reported as such, never a crash of whoever prints it.
TS_RANGE = (-62_135_596_800.0, 253_402_300_799.0)
Timestamp = Annotated[float, Field(ge=TS_RANGE[0], le=TS_RANGE[1], allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = FORMAT_VERSION
    version: int
    ts: Timestamp
    run_id: str | None = None
    next: str
    status: Status
    #: The open pauses after this record that carry something the flow's shape cannot tell:
    #: a payload (a gate's, a node's question) or a pause made at run time (a node that asks,
    #: a ``Map`` call that asks), by pause id -> entry (JSON). ``None``: none such. On the
    #: records of a running batch (``item``, ``pause``) only what changed: a ``pause`` record
    #: holds the entries it adds, an ``item`` record closes its call's (so a batch's journal
    #: grows with its pauses, not with their square).
    pauses: dict[str, Any] | None = None
    #: When the timer of the position after this record fires (seconds since the epoch): a
    #: gate's deadline, a node's wake-up. ``None``: no timer.
    due: Timestamp | None = None


class StartRecord(_Record):
    """A thread's first record: the flow name and the full initial state."""

    kind: Literal["start"] = "start"
    flow: str
    state: dict[str, Any]
    forked_from: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: A fork taken while a ``Subflow`` node ran: the child's position, as a ``Snapshot``.
    sub: dict[str, Any] | None = None
    #: The ``Flow.version`` the thread started under; ``None`` (journals from before flow
    #: versions, and every flow still at version 1) means 1.
    flow_version: int | None = None
    #: A fork taken while a ``Map``/``Parallel`` node ran: its finished calls, by index (as a
    #: ``Snapshot`` keeps them), so the fork runs none of them again.
    items: dict[int, dict[str, Any]] | None = None


class StepRecord(_Record):
    """A node ran: its update (or its error), how long it took, the LLM calls it made."""

    kind: Literal["step"] = "step"
    node: str
    update: dict[str, Any]
    attempts: int = 1
    latency_s: float = 0.0
    error: dict[str, Any] | None = None
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)
    #: The node did not run: its update came from the node cache (``CachePolicy``).
    cached: bool = False


class InputRecord(_Record):
    """A gate was resumed with validated input, which became ``update``."""

    kind: Literal["input"] = "input"
    gate: str
    input: dict[str, Any]
    update: dict[str, Any]
    #: Who answered (``resume(..., actor=...)``; the principal, through the server); ``None``:
    #: not said (and not written, so a journal from before this field reads the same).
    actor: str | None = None


class ItemRecord(_Record):
    """One call of a ``Map`` or ``Parallel`` node finished: its update (or error), not yet merged.

    The state does not change until every call has finished and a ``join`` record merges them;
    until then a crashed run resumes with only the calls that have no item record.
    """

    kind: Literal["item"] = "item"
    node: str
    index: int = Field(ge=0)
    of: int = Field(ge=1)
    label: str = ""
    update: dict[str, Any]
    attempts: int = 1
    latency_s: float = 0.0
    error: dict[str, Any] | None = None
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)
    #: For a gate branch of a ``Parallel``: the validated input that became ``update``.
    input: dict[str, Any] | None = None
    #: Who gave ``input`` (as ``InputRecord.actor``); ``None``: not said, or no input.
    actor: str | None = None
    #: The call did not run: its update came from the node cache (``attempts`` is 0).
    cached: bool = False


class PauseRecord(_Record):
    """Pauses of a ``Map`` or ``Parallel`` node: with ``status="waiting"``, every call has
    finished or asked and ``gates`` (the ids of its gate branches and of the calls that asked)
    wait for input; with ``status="pending"``, one call asked (its question is in ``pauses``)
    while the others go on."""

    kind: Literal["pause"] = "pause"
    node: str
    gates: list[str]
    #: The LLM calls of a call that asked, made before it asked.
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)


class JoinRecord(_Record):
    """Every call of a ``Map`` or ``Parallel`` node finished: their updates merge, in index
    order, then ``update`` (the error summary, when some failed) applies on top.

    ``merged`` lists the indexes merged; a failed join (``status="failed"``) merges nothing and
    forgets the failed calls, so resuming runs only those again.
    """

    kind: Literal["join"] = "join"
    node: str
    merged: list[int] = Field(default_factory=list)
    #: False when a ``merge`` function combined the calls: ``update`` is its whole result.
    folded: bool = True
    failed: list[int] = Field(default_factory=list)
    update: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0
    error: dict[str, Any] | None = None


class PatchRecord(_Record):
    """A manual change (``update_state``, recovery): who and why are kept for audit."""

    kind: Literal["patch"] = "patch"
    update: dict[str, Any]
    reason: str = ""
    actor: str = "user"
    #: Set on the patch a migration wrote (``actor="migration"``): the thread's whole position
    #: after it, ``{"from", "to", "state", "error", "items", "sub"}``, so nothing before it is
    #: read with the new flow (see ``flowkit.definition._migration``). A rewind
    #: (``Runner.rewind``) writes one too, from and to the same version, with ``rewound_to``.
    migration: dict[str, Any] | None = None
    #: ``update_state(as_node=...)``: the node or gate whose update the patch stood in for.
    as_node: str | None = None


class SubRecord(_Record):
    """A step of the child flow run by ``Subflow`` node ``node``: the child's own record.

    ``record`` is whatever the child journaled (its start, steps, gate inputs, map items, or,
    for a nested subflow, a ``sub`` record of its own), versioned in the child's numbering;
    ``version``, ``next`` and ``status`` are the parent's. The parent's state does not change
    until the child finishes and a ``step`` record of ``node`` applies its output.
    """

    kind: Literal["sub"] = "sub"
    node: str
    #: The attempts of ``node`` so far: the child run this record belongs to is attempt
    #: number ``attempts`` (a ``RetryPolicy`` on the ``Subflow`` starts the next one afresh).
    attempts: int = Field(default=1, ge=1)
    record: Record


class TimerRecord(_Record):
    """A timer fired: the deadline of gate ``node`` passed unanswered (the thread moved to the
    gate's ``on_timeout``), or node ``node``, asleep (``ctx.sleep_until``), woke and its route
    decided where to go. ``fired`` is when the timer was due; ``update`` is what the move
    wrote (``dialog_state``, when the state mirrors it). See docs/timers.md."""

    kind: Literal["timer"] = "timer"
    node: str
    fired: Timestamp
    update: dict[str, Any] = Field(default_factory=dict)


AnyRecord = (
    StartRecord
    | StepRecord
    | InputRecord
    | PatchRecord
    | ItemRecord
    | PauseRecord
    | JoinRecord
    | SubRecord
    | TimerRecord
)
Record = Annotated[AnyRecord, Field(discriminator="kind")]
RecordAdapter: TypeAdapter[AnyRecord] = TypeAdapter(Record)


class Snapshot(BaseModel):
    """The whole state after record ``version``, so loading can skip the records before it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = FORMAT_VERSION
    version: int
    ts: Timestamp
    next: str
    status: Status
    flow: str
    state: dict[str, Any]
    error: dict[str, Any] | None = None
    #: Finished, not yet merged calls of the ``Map``/``Parallel`` node at ``next``, by index.
    items: dict[int, dict[str, Any]] | None = None
    #: The child's position while the ``Subflow`` node at ``next`` runs (a ``Snapshot``).
    sub: dict[str, Any] | None = None
    #: The ``Flow.version`` the state above fits; ``None`` means 1.
    flow_version: int | None = None
    #: The version at which the thread arrived at ``next``, when earlier than ``version``
    #: (records that keep it there came since): the step's idempotency key needs it.
    entered: int | None = None
    #: A child's snapshot (in ``sub``): which attempt of its ``Subflow`` node the child run is.
    attempts: int = Field(default=1, ge=1)
    #: The open pauses with a payload or made at run time, by id (see ``Record.pauses``).
    pauses: dict[str, Any] | None = None
    #: When the position's timer fires (see ``Record.due``).
    due: Timestamp | None = None


SubRecord.model_rebuild()


def record_time() -> float:
    """Now, in whole milliseconds since the epoch, for a journal record's ``ts``.

    Truncated, never rounded up: a record is never stamped later than a clock read taken
    after it (``prune(older_than=0)`` right after a run sees it as past). An integer divided
    by 1000 is the float nearest the decimal, so the JSON line shows the short number; and
    it costs a third of ``round(t, 3)``."""
    return int(time.time() * 1000) / 1000


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


class _ClockReading(BaseModel):
    """A clock's reading as a record would hold it: only there to refuse one out of range."""

    model_config = ConfigDict(title="the time of Runner(clock=...)")

    ts: Timestamp


def record_clock(clock: Callable[[], datetime] | None) -> Callable[[], float]:
    """What stamps the ``ts`` of a runner's records: ``record_time`` (the wall clock, fast)
    without a ``clock``, else the clock's time in whole milliseconds, truncated the same way.

    An injected clock is read exactly (integer milliseconds since the epoch, never through a
    float product that could round up). A time a record may not hold (outside ``TS_RANGE``)
    is refused here, before any record holds it, with pydantic's ``ValidationError`` naming
    ``ts``: so every record, prebuilt or not, and every snapshot or marker is in range."""
    if clock is None:
        return record_time

    def clock_time() -> float:
        moment = clock()
        if moment.utcoffset() is None:  # naive: local time, as datetime.timestamp() reads it
            moment = moment.astimezone()
        ts = ((moment - _EPOCH) // _MS) / 1000
        if TS_RANGE[0] <= ts <= TS_RANGE[1]:
            return ts
        return _ClockReading(ts=ts).ts  # raises: the error names the field and its bounds

    return clock_time


_R = TypeVar("_R", bound=BaseModel)
_set = object.__setattr__


def prebuilt(kind: type[_R], values: dict[str, Any]) -> _R:
    """A ``kind`` holding ``values`` as they are, without validation.

    Only for records the engine builds itself on its hot path, from values that have the
    fields' types by construction: ``values`` names every field of ``kind``, in declaration
    order (the order of the JSON line), each of its field's type, already in JSON form and
    owned by the record alone. Validating such a dict again cost a third of a step with
    ``MemoryStore``; tests/engine/test_prebuilt_records.py holds each builder to the
    validated record, equal and byte for byte. The one value a caller does not control, the
    time (a ``Runner(clock=...)``), was checked where it was read (``record_clock``).
    """
    record = kind.__new__(kind)
    _set(record, "__dict__", values)
    _set(record, "__pydantic_fields_set__", set(values))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


def new_run_id() -> str:
    """A run's id: 16 random hex digits (``os.urandom``, not a UUID object built and cut:
    that was a fifth of what starting a short run cost)."""
    return os.urandom(8).hex()
