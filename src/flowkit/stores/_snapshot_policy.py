"""When a store takes a snapshot: the rule ``JsonFileStore`` and ``PostgresStore`` share.

Opening a thread reads its latest snapshot and replays the records after it, so the records
since the snapshot are what opening costs beyond the state itself. A snapshot is due once
the journal has grown by ``ratio`` times the last snapshot's size (so snapshots add at most
``1 / ratio`` to the bytes written per step, which stay flat: BRIEF §4, ``bench/run.py``
measure 3), and then:

- at a pause (the thread waits for a person, so its next open is a cold one, maybe in another
  process), once ``PAUSE_MIN`` records have come since the last snapshot;
- or once ``every`` records (64 by default) have come, which bounds the replay of a thread
  whose state is small next to its records;
- or, whatever the count, once the journal has also grown by ``min_bytes`` (as before).

A state that is big next to its records (a long chat history) thus waits for more records
than ``every``: opening it mid-run replays up to ``ratio`` snapshots' worth of records.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import StoreError

__all__ = ["PAUSE_MIN", "SnapshotPolicy"]

#: Records since the last snapshot below which a pause takes none: a thread that paused
#: after a few steps opens as fast from its journal.
PAUSE_MIN = 8


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

    def due(self, *, records: int, since: int, snapshot: int, waiting: bool) -> bool:
        """Whether to snapshot after a commit: ``records`` records of ``since`` bytes came
        since the last snapshot (or start record) of ``snapshot`` bytes, and the thread now
        ``waiting`` or not."""
        if since < self.ratio * snapshot or records <= 0:
            return False
        return records >= (PAUSE_MIN if waiting else self.every) or since >= self.min_bytes
