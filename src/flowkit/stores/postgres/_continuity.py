"""Continuity of a thread in PostgreSQL: its ``threads`` row and its record rows must agree.

A journal file is read as one unbroken run (``_jsonl.scan_lines``); so are a thread's rows: a
start record first, then every version up to the one the ``threads`` row holds, with no other
start record among them, and a snapshot inside that run. A deleted row, a version row edited
by hand or a copied row is ``CorruptStoreError`` naming the thread and the gap, found when
the thread is loaded and before anything is written to it: never a silently different state,
never a ``ConflictError`` that no reload cures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ...errors import CorruptStoreError
from ...records._records import StartRecord
from .._protocol import AnyRecord

if TYPE_CHECKING:
    import psycopg

    from ._sql import Statements

__all__ = ["Extent", "breakage", "broken_journal", "check_run", "describe", "run_problems"]

#: Gaps listed in a message before the rest is summed up.
_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Extent:
    """What one statement read of a thread: its ``threads`` row's version and, over its
    record rows, the first and last version, how many, how many are start records and the
    first of those; and its snapshot's version (``None``: none)."""

    version: int
    low: int | None
    high: int | None
    count: int
    starts: int
    start_at: int | None
    snapshot: int | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Extent:
        """From the columns ``version, low, high, count, starts, start_at, snapshot``."""
        version, low, high, count, starts, start_at, snapshot = row
        return cls(
            int(version),
            None if low is None else int(low),
            None if high is None else int(high),
            int(count or 0),
            int(starts or 0),
            None if start_at is None else int(start_at),
            None if snapshot is None else int(snapshot),
        )

    @property
    def intact(self) -> bool:
        """Whether the rows can be one unbroken run (``describe`` says what is wrong if not)."""
        if self.low is None or self.high is None:
            return False
        return (
            self.count == self.high - self.low + 1
            and self.starts == 1
            and self.start_at == self.low
            and self.high == self.version
            and (self.snapshot is None or self.low <= self.snapshot <= self.high)
        )

    @property
    def intact_from_snapshot(self) -> bool:
        """Whether the rows from the snapshot's record on (what a load reads, so ``low`` is
        that record; every row without a snapshot) can be one unbroken run up to the
        version row. The rows before the snapshot are checked when the history is read."""
        if self.snapshot is None:
            return self.intact
        if self.low is None or self.high is None:
            return False
        return (
            self.low == self.snapshot
            and self.count == self.high - self.low + 1
            and self.high == self.version
            and (self.starts == 0 or (self.starts == 1 and self.start_at == self.low))
        )


def breakage(
    conn: psycopg.Connection[Any],
    sql: Statements,
    schema: str,
    thread_id: str,
    extent: Extent | None = None,
) -> CorruptStoreError | None:
    """The error for a thread whose ``extent`` (read now if not given) shows its rows are not
    one unbroken run, with every gap named (the versions are read to name them); else None."""
    if extent is None:
        row = conn.execute(sql.extent, {"thread": thread_id}).fetchone()
        if row is None:
            return None  # no such thread: the caller's statement says so
        extent = Extent.from_row(row)
    if extent.intact:
        return None
    rows = conn.execute(sql.journal, {"thread": thread_id}).fetchall()
    problems = describe(extent.version, extent.snapshot, [(int(v), str(k)) for v, k in rows])
    return broken_journal(schema, thread_id, problems) if problems else None


def describe(version: int, snapshot: int | None, rows: Iterable[tuple[int, str]]) -> list[str]:
    """What keeps ``rows`` (``(version, kind)``, oldest first) from being one unbroken run up
    to ``version`` (the ``threads`` row's); empty when nothing does."""
    ordered = sorted(rows)
    if not ordered:
        return [f"its `threads` row says version {version}, but it has no record rows"]
    problems: list[str] = []
    low, first_kind = ordered[0]
    high = ordered[-1][0]
    if first_kind != "start":
        problems.append(f"its first record (version {low}) is not a start record")
    gaps = [
        (before + 1, after - 1)
        for (before, _), (after, _) in pairwise(ordered)
        if after > before + 1
    ]
    if gaps:
        shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in gaps[:_SHOWN])
        more = f" and {len(gaps) - _SHOWN} more gaps" if len(gaps) > _SHOWN else ""
        plural = "s" if len(gaps) > 1 or gaps[0][0] != gaps[0][1] else ""
        problems.append(f"record{plural} {shown}{more} missing between {low} and {high}")
    starts = [v for v, kind in ordered[1:] if kind == "start"]
    if starts:
        listed = ", ".join(map(str, starts[:_SHOWN]))
        problems.append(f"a start record in the middle of the journal (version {listed})")
    if high != version:
        problems.append(_version_row(version, high))
    if snapshot is not None and not low <= snapshot <= high:
        problems.append(f"its snapshot is of version {snapshot}, outside records {low}-{high}")
    return problems


def run_problems(records: Sequence[AnyRecord], *, after: int | None, version: int) -> list[str]:
    """What keeps ``records`` from continuing version ``after`` (``None``: from their start
    record) without a gap up to ``version``, with no start record after the first."""
    expected = after
    for record in records:
        if expected is None:
            if not isinstance(record, StartRecord):
                return [f"its first record (version {record.version}) is not a start record"]
        elif record.version != expected + 1:
            return [f"record {expected + 1} is missing (the next one is {record.version})"]
        elif isinstance(record, StartRecord):
            return [f"a start record in the middle of the journal (version {record.version})"]
        expected = record.version
    if expected is None:
        return [f"its `threads` row says version {version}, but it has no record rows"]
    if expected != version:
        return [_version_row(version, expected)]
    return []


def check_run(
    schema: str, thread_id: str, records: Sequence[AnyRecord], *, after: int | None, version: int
) -> None:
    """Raise ``CorruptStoreError`` if ``run_problems`` finds any (each gap named when
    ``records`` are the whole journal)."""
    problems = run_problems(records, after=after, version=version)
    if problems and after is None:
        problems = describe(version, None, [(r.version, r.kind) for r in records]) or problems
    if problems:
        raise broken_journal(schema, thread_id, problems)


def _version_row(version: int, high: int) -> str:
    if high < version:
        missing = f"{high + 1}" if high + 1 == version else f"{high + 1}-{version}"
        return (
            f"its `threads` row says version {version}, but the records end at {high} "
            f"(missing {missing})"
        )
    return f"its `threads` row says version {version}, but the records go on to {high}"


def broken_journal(schema: str, thread_id: str, problems: Sequence[str]) -> CorruptStoreError:
    """The error for a thread whose rows do not read as one journal (``problems`` say why)."""
    return CorruptStoreError(
        f"Thread `{thread_id}` does not read as one unbroken journal: {'; '.join(problems)}",
        thread_id=thread_id,
        path=f"{schema}.records (thread `{thread_id}`)",
    )
