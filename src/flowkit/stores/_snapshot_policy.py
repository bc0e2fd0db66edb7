"""When a store takes a snapshot: the rule ``JsonFileStore`` and ``PostgresStore`` share.

Opening a thread reads its latest snapshot and replays the records after it, so the records
since the snapshot are what opening costs beyond the state itself. A snapshot is due once
the journal has grown by ``ratio`` times the last snapshot's size (so snapshots add at most
``1 / ratio`` to the bytes written per step, which stay flat: BRIEF §4, ``bench/run.py``
measure 3), and then:

- once ``every`` records (64 by default) have come, which bounds the replay of a thread
  whose state is small next to its records;
- or, whatever the count, once the journal has also grown by ``min_bytes`` (as before).

A state that is big next to its records (a long chat history) thus waits for more records
than ``every``: opening it mid-run replays up to ``ratio`` snapshots' worth of records.

A thread that settles (waits for a person or has ended) is often opened next by a cold
reader, maybe in another process:

- where it waits, the rule above asks for ``PAUSE_MIN`` records instead of ``every``;
- where it waits or has ended after at least ``every`` records, once they reach
  ``1 / PAUSE_SHARE`` of the last snapshot's size. Replaying a record costs ~50x reading the
  same bytes in a snapshot, so a settled chat (its state growing with its history) opens in
  about the time its state takes to read. A thread that settles after every ``every``
  records writes at most ``PAUSE_SHARE`` times its records' bytes more; a short run (fewer
  than ``every`` records, which replay faster than a snapshot file is made) takes none.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import StoreError

__all__ = ["PAUSE_MIN", "PAUSE_SHARE", "SETTLED", "SnapshotPolicy"]

#: Records since the last snapshot below which a pause takes none: a thread that paused
#: after a few steps opens as fast from its journal.
PAUSE_MIN = 8
#: Where a thread settles after ``every`` records, a snapshot once they reach
#: ``1 / PAUSE_SHARE`` of the last one's size (module docstring).
PAUSE_SHARE = 8
#: The statuses after which a thread's next open is likely a cold one.
SETTLED = frozenset({"waiting", "done", "failed"})


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """The store settings ``snapshot_every``, ``snapshot_ratio`` and ``min_snapshot_bytes``."""

    every: int
    ratio: float
    min_bytes: int

    @classmethod
    def checked(cls, every: object, ratio: float, min_bytes: int) -> SnapshotPolicy:
        """The policy, or ``StoreError`` for a ``snapshot_every`` that is not a count."""
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise StoreError(
                f"snapshot_every must be a whole number of records, 1 or more; got "
                f"{every!r:.40}. It bounds how many records opening a thread replays "
                "(default 64)."
            )
        return cls(every, ratio, min_bytes)

    def due(self, *, records: int, since: int, snapshot: int, status: str) -> bool:
        """Whether to snapshot after a commit: ``records`` records of ``since`` bytes came
        since the last snapshot (or start record) of ``snapshot`` bytes, and the thread's
        status is now ``status``."""
        if records <= 0:
            return False
        if status in SETTLED and records >= self.every and since * PAUSE_SHARE >= snapshot:
            return True
        if since < self.ratio * snapshot:
            return False
        least = PAUSE_MIN if status == "waiting" else self.every
        return records >= least or since >= self.min_bytes
