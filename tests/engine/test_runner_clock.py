"""``Runner(clock=...)`` stamps every record the engine writes for the runner: a test or a
replay that fixes the clock gets a history on that clock alone, never mixed with the wall
clock. Times are kept in whole milliseconds, truncated, like the wall clock's."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError

from flowkit import END, Flow, Gate, Map, Parallel, Runner, Subflow, append
from flowkit.records._records import TS_RANGE
from flowkit.stores import MemoryStore, Snapshot, SubRecord

#: The fake clock's first reading: far from now, so a wall-clock stamp cannot pass for it.
BASE = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)


class FakeClock:
    """A counter: reading ``n`` is ``BASE`` plus ``n`` seconds and 0.250999 s (the 999 µs
    must be truncated away); ``stamps`` holds what each reading becomes in a record."""

    def __init__(self, first_bad: int | None = None) -> None:
        self.stamps: list[float] = []
        self.first_bad = first_bad

    def __call__(self) -> datetime:
        n = len(self.stamps)
        if self.first_bad is not None and n >= self.first_bad:
            self.stamps.append(float("nan"))
            return datetime.max.replace(tzinfo=UTC)
        self.stamps.append(BASE.timestamp() + n + 0.25)
        return BASE + timedelta(seconds=n, microseconds=250_999)


class Review(BaseModel):
    notes: Annotated[list[str], append] = []
    approved: bool = False


class Approve(BaseModel):
    approved: bool


class Topic(BaseModel):
    topic: str


class Note(BaseModel):
    note: str


class Doc(BaseModel):
    topic: str = ""
    sections: list[str] = ["a", "b"]
    summaries: Annotated[list[str], append] = []
    answers: Annotated[list[str], append] = []
    note: str = ""
    approved: bool = False
    log: Annotated[list[str], append] = []


REVIEW = Flow(
    name="review",
    state=Review,
    start="check",
    nodes={"check": lambda s: {"notes": ["checked"]}, "tidy": lambda s: {"notes": ["tidy"]}},
    gates={"approve": Approve},
    routes={"check": "approve", "approve": "tidy", "tidy": END},
)

DOC = Flow(
    name="doc",
    state=Doc,
    start="draft",
    nodes={
        "draft": lambda s: {"log": ["draft"]},
        "split": Map(lambda s, section: {"summaries": [section]}, over=lambda s: s.sections),
        "ask": Parallel({"human": Gate(Note), "machine": lambda s: {"answers": ["auto"]}}),
        "review": Subflow(
            REVIEW, output=lambda parent, child: {"approved": child.approved}, writes=["approved"]
        ),
        "publish": lambda s: {"log": ["publish"]},
    },
    gates={"topic": Topic},
    routes={
        "draft": "topic",
        "topic": "split",
        "split": "ask",
        "ask": "review",
        "review": "publish",
        "publish": END,
    },
)


class SnapshotEveryStep(MemoryStore):
    """A ``MemoryStore`` that takes a snapshot after every commit (snapshots are stamped too)."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[str, Snapshot]] = []

    def snapshot_due(self, thread_id: str) -> bool:
        return True

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        super().write_snapshot(thread_id, snapshot)
        self.snapshots.append((thread_id, snapshot))


def stamps_of(records: list[Any]) -> list[float]:
    """The ``ts`` of every record, and of the child's record inside each ``sub`` record."""
    found = []
    for record in records:
        inner = record
        found.append(inner.ts)
        while isinstance(inner, SubRecord):
            inner = inner.record
            found.append(inner.ts)
    return found


def test_every_record_of_a_run_is_stamped_by_the_runners_clock() -> None:
    clock, store = FakeClock(), SnapshotEveryStep()
    runner: Runner[Doc] = Runner(DOC, store=store, clock=clock, track_attempts=True)
    assert runner.start("t").node == "topic"  # start, a node's step, waiting at a gate
    # The gate's input, a Map (item and join records), then a Parallel whose gate branch
    # waits (its item and a pause record), answered (an item with the input, a join), then
    # a Subflow (its child's start, step, waiting at the child's gate).
    runner.resume("t", {"topic": "clocks"})
    assert runner.resume("t", {"note": "mine"}, gate="human").gates == ("review/approve",)
    runner.update_state("t", {"log": ["patched"]}, reason="a person's note")
    runner.update_state("t", {"notes": ["child note"]}, child="review")
    runner.fork("t", "u")
    assert runner.resume("t", {"approved": True}, gate="review/approve").done
    assert runner.resume("u", {"approved": False}).done
    kinds = {r.kind for r in store.records("t")} | {
        r.record.kind for r in store.records("t") if isinstance(r, SubRecord)
    }
    assert kinds == {"start", "step", "input", "item", "pause", "join", "patch", "sub"}

    issued = set(clock.stamps)
    for thread in ("t", "u"):
        stamps = stamps_of(store.records(thread))
        assert set(stamps) <= issued, sorted(set(stamps) - issued)
        assert stamps == sorted(stamps)  # one clock, read in order
        assert {c.ts for c in runner.history(thread)} <= issued
        marker = store.last_attempt(thread)
        assert marker is not None and marker.ts in issued
    # A snapshot holds its record's time: no second reading to fail once the step is saved.
    assert store.snapshots
    for thread, snapshot in store.snapshots:
        assert snapshot.ts == store.records(thread)[snapshot.version].ts
    # Whole milliseconds, truncated: 0.250999 s past the second is stamped .25.
    assert all(round(ts % 1, 6) == 0.25 for ts in issued)


def test_a_fork_start_is_stamped_by_the_clock() -> None:
    clock, store = FakeClock(), MemoryStore()
    runner: Runner[Doc] = Runner(DOC, store=store, clock=clock)
    runner.start("t")
    runner.fork("t", "u", at=0)
    start = store.records("u")[0]
    assert start.kind == "start" and start.ts == clock.stamps[-1]


def test_a_clock_with_an_offset_is_stamped_as_the_same_instant() -> None:
    east = timezone(timedelta(hours=5, minutes=30))
    moment = BASE.astimezone(east) + timedelta(microseconds=1_999)
    store = MemoryStore()
    Runner(DOC, store=store, clock=lambda: moment).start("t")
    assert {r.ts for r in store.records("t")} == {BASE.timestamp() + 0.001}


def test_without_a_clock_records_keep_the_wall_clock_in_whole_milliseconds() -> None:
    store = MemoryStore()
    before = datetime.now(UTC).timestamp()
    Runner(DOC, store=store).start("t")
    after = datetime.now(UTC).timestamp()
    for ts in stamps_of(store.records("t")):
        assert before - 0.001 <= ts <= after
        assert len(repr(ts).partition(".")[2]) <= 3


#: What the fake clock's readings stamp, in order: 0 start, 1 draft's step, 2 the gate's
#: input, 3 and 4 the Map's items, 5 its join, 6 the Parallel's node branch, 7 its pause.
@pytest.mark.parametrize("first_bad", [1, 2, 3, 5, 6, 7])
def test_a_clock_outside_what_a_record_may_hold_is_refused_and_nothing_stored(
    first_bad: int,
) -> None:
    """The clock goes bad after ``first_bad`` good readings; the record it would have stamped
    is refused, nothing of it stored, and the records before it keep their good times."""
    clock, store = FakeClock(first_bad=first_bad), MemoryStore()
    runner: Runner[Doc] = Runner(DOC, store=store, clock=clock)
    with pytest.raises(ValidationError, match="ts"):
        runner.start("t")
        runner.resume("t", {"topic": "clocks"})
    good = clock.stamps[:first_bad]
    assert good == [ts for ts in clock.stamps if not math.isnan(ts)]  # NaN: a bad reading
    stored = stamps_of(store.records("t")) if store.threads() else []
    assert stored == good  # one record per good reading, none for the bad one


def test_a_clock_before_year_one_in_utc_is_refused() -> None:
    early = datetime.min.replace(tzinfo=timezone(timedelta(hours=-1)))  # 01:00 UTC, year 1
    late = datetime.min.replace(tzinfo=timezone(timedelta(hours=1)))  # 23:00 UTC, year 0
    assert early.timestamp() > TS_RANGE[0] > late.timestamp()
    store = MemoryStore()
    Runner(DOC, store=store, clock=lambda: early).start("ok")
    with pytest.raises(ValidationError, match="ts"):
        Runner(DOC, store=store, clock=lambda: late).start("t")
    assert store.threads() == ["ok"]
