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

Where a thread settles (it waits for a person or has ended, so its next open is a cold one,
maybe in another process), a snapshot is due sooner: once ``PAUSE_MIN`` records and
``1 / PAUSE_SHARE`` of the last snapshot's size have come since it. Replaying a record costs
~50x reading the same bytes in a snapshot, so a settled thread opens in about the time its
state takes to read, whatever its history. The bytes a snapshot adds stay bounded: a thread
that settles after every step writes at most ``PAUSE_SHARE`` times its records' bytes more
(in practice far less: most settles come after several records, and those below
``PAUSE_MIN`` take none).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import StoreError

__all__ = ["PAUSE_MIN", "PAUSE_SHARE", "SETTLED", "SnapshotPolicy"]

#: Records since the last snapshot below which a pause takes none: a thread that paused
#: after a few steps opens as fast from its journal.
PAUSE_MIN = 8
#: Where a thread settles, a snapshot once the records since the last one reach
#: ``1 / PAUSE_SHARE`` of its size (module docstring).
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

    def due(self, *, records: int, since: int, snapshot: int, settled: bool) -> bool:
        """Whether to snapshot after a commit: ``records`` records of ``since`` bytes came
        since the last snapshot (or start record) of ``snapshot`` bytes, and the thread has
        now ``settled`` (its status one of ``SETTLED``) or not."""
        if records <= 0:
            return False
        if settled and records >= PAUSE_MIN and since * PAUSE_SHARE >= snapshot:
            return True
        if since < self.ratio * snapshot:
            return False
        return records >= self.every or since >= self.min_bytes
