"""A node that sleeps: ``ctx.sleep_until(when)`` ends the node's step with a wake-up timer.

The step ends there, like an ask: the update given with it is saved, and the thread waits at
the node (status ``waiting``, no pause to answer) until its timer fires (``Runner.fire_due``,
driven by ``flowkit worker`` and ``flowkit serve``). Then the node's route decides where the
run goes; nothing the node did runs again. See docs/timers.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ._ask import Ask

__all__ = ["SleepUntil", "duration_text"]


class SleepUntil(Ask):
    """Raised by ``ctx.sleep_until(when, update=...)``: the engine turns it into a timer.

    An ``Ask`` without a question, so every part of the engine that lets a node's step end in
    a pause (no retry, no failure) lets it end in a sleep too; the core tells the two apart.
    ``when`` is checked by the engine (an aware ``datetime``, or a ``timedelta`` from now).
    """

    def __init__(self, when: datetime | timedelta, *, update: Mapping[str, Any] | None) -> None:
        super().__init__(None, update=update)
        self.when = when

    def __repr__(self) -> str:
        return f"SleepUntil({self.when!r})"


def duration_text(wait: timedelta) -> str:
    """A short human form of ``wait`` for diagrams and messages: ``2d``, ``36h``, ``90s``."""
    seconds = wait.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
