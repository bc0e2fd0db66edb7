"""One thread's bounded event queue with the seed's priority rules (seed 000 §4.2).

``classify_event`` gives each event its priority. Critical events are never pushed out by
other events: past the high-water mark (80 % by default) a critical event evicts the oldest
non-critical ones. A progress event replaces the queued one of its type. The queue never
holds more than ``maxsize`` events; the broadcaster's lock guards it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..records._events import (
    Completed,
    Event,
    Failed,
    NodeFinished,
    StateChanged,
    TokenStreamed,
    Waiting,
)

__all__ = [
    "Classifier",
    "Envelope",
    "Merge",
    "Priority",
    "PutResult",
    "QueueStats",
    "ThreadQueue",
    "classify_event",
    "merge_progress",
]

Priority = Literal["critical", "progress", "normal"]

#: Combines a queued progress event with its replacement; ``None`` keeps both.
Merge = Callable[[Event, Event], Event | None]


#: Maps an event to its priority and type (progress events of one type replace each other).
Classifier = Callable[[Event], tuple[Priority, str]]


def classify_event(event: Event) -> tuple[Priority, str]:
    """The default priorities: seed 000 §4.2 over flowkit's events."""
    if isinstance(event, Failed | Waiting | Completed):
        return "critical", event.kind
    if isinstance(event, StateChanged):
        if event.classes.get("critical"):
            return "critical", event.kind
        if event.classes.get("progress"):
            return "progress", f"{event.kind}:{event.node}"
        return "normal", event.kind
    if isinstance(event, TokenStreamed | NodeFinished):
        return "progress", f"{event.kind}:{event.node}"
    return "normal", event.kind


def merge_progress(old: Event, new: Event) -> Event | None:
    """Coalesce progress: the newer event wins, but streamed text is joined, never lost."""
    if isinstance(old, TokenStreamed) and isinstance(new, TokenStreamed):
        if old.done:
            return None  # a finished answer stays whole; the next stream queues on its own
        return TokenStreamed(new.thread_id, new.run_id, new.node, old.text + new.text, new.done)
    return new


@dataclass(frozen=True, slots=True)
class Envelope:
    """An event as a consumer receives it: with its priority, type and per-thread ``seq``.

    ``seq`` increases by one per published event of the thread, so a gap shows that events
    between were coalesced or evicted.
    """

    event: Event
    priority: Priority
    type: str
    seq: int

    @property
    def thread_id(self) -> str:
        return self.event.thread_id

    @property
    def kind(self) -> str:
        return self.event.kind


@dataclass(slots=True)
class QueueStats:
    """Counters of one queue (or, summed, of a broadcaster)."""

    published: int = 0
    delivered: int = 0
    coalesced: int = 0  # progress events replaced by a newer one of the same type
    evicted: int = 0  # non-critical events pushed out to make room
    dropped: int = 0  # non-critical events refused: the queue was full of critical ones
    critical_dropped: int = 0  # only when `maxsize` critical events sit unread

    def add(self, other: QueueStats) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True, slots=True)
class PutResult:
    queued: bool
    evicted: int = 0
    coalesced: bool = False
    critical_dropped: bool = False


class ThreadQueue:
    """Bounded, ordered by arrival; ``put`` applies the priority rules, ``take`` pops the oldest."""

    __slots__ = ("_critical", "_items", "_progress", "_seq", "high_water", "maxsize", "stats")

    def __init__(self, maxsize: int, high_water: int) -> None:
        if maxsize < 1 or not 1 <= high_water <= maxsize:
            raise ValueError(f"need 1 <= high_water ({high_water}) <= maxsize ({maxsize})")
        self.maxsize = maxsize
        self.high_water = high_water
        self._items: OrderedDict[int, Envelope] = OrderedDict()
        self._progress: dict[str, int] = {}  # progress type -> seq of its queued event
        self._critical = 0
        self._seq = 0
        self.stats = QueueStats()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def critical(self) -> int:
        """How many critical events are queued."""
        return self._critical

    def put(self, event: Event, priority: Priority, type_: str, merge: Merge | None) -> PutResult:
        self._seq += 1
        self.stats.published += 1
        coalesced = False
        if priority == "progress":
            queued = self._progress.get(type_)
            if queued is not None:
                combined = merge(self._items[queued].event, event) if merge else event
                if combined is not None:
                    self._remove(queued)
                    event, coalesced = combined, True
                    self.stats.coalesced += 1
        evicted = 0
        critical_dropped = False
        if priority == "critical":
            if len(self._items) >= self.high_water:
                evicted = self._evict(keep=self.high_water - 1)
            if len(self._items) >= self.maxsize:  # full of unread critical events
                self._remove(next(iter(self._items)))
                self.stats.critical_dropped += 1
                critical_dropped = True
        elif len(self._items) >= self.maxsize:
            evicted = self._evict(keep=self.maxsize - 1)
            if len(self._items) >= self.maxsize:
                self.stats.dropped += 1
                return PutResult(False, evicted, coalesced)
        envelope = Envelope(event, priority, type_, self._seq)
        self._items[self._seq] = envelope
        if priority == "critical":
            self._critical += 1
        elif priority == "progress":
            self._progress[type_] = self._seq
        return PutResult(True, evicted, coalesced, critical_dropped)

    def take(self) -> Envelope | None:
        """The oldest queued event, or ``None``."""
        if not self._items:
            return None
        envelope = self._remove(next(iter(self._items)))
        self.stats.delivered += 1
        return envelope

    def _remove(self, seq: int) -> Envelope:
        envelope = self._items.pop(seq)
        if envelope.priority == "critical":
            self._critical -= 1
        elif self._progress.get(envelope.type) == seq:
            del self._progress[envelope.type]
        return envelope

    def _evict(self, *, keep: int) -> int:
        """Drop the oldest non-critical events until at most ``keep`` events remain."""
        excess = len(self._items) - keep
        victims: list[int] = []
        for seq, envelope in self._items.items():
            if len(victims) >= excess:
                break
            if envelope.priority != "critical":
                victims.append(seq)
        for seq in victims:
            self._remove(seq)
        self.stats.evicted += len(victims)
        return len(victims)
