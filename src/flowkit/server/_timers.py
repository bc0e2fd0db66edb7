"""The server's timer loop: while the app runs, the due timers of every served flow (a gate's
deadline, a node's wake-up) are fired every ``poll_s`` seconds (``Runner.fire_due``).

Firing runs in a worker thread: the run after a timer may call nodes and language models.
Stopping waits for the round in hand, so a shutdown never cuts a timer's step in two (the
journal would hold it anyway: each timer fires once, whoever fires it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from ..foundation._logging import get_logger
from ..runner._runner import Runner

__all__ = ["TimerLoop"]


class TimerLoop:
    """Fires the due timers of ``runners`` every ``poll_s`` seconds between ``start`` and
    ``stop`` (both called on the app's event loop)."""

    def __init__(self, runners: Iterable[Runner[Any]], poll_s: float) -> None:
        self.runners = list(runners)
        self.poll_s = poll_s
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="flowkit-timers")

    async def stop(self) -> None:
        """Fire no more; returns once the round in hand (if any) has finished."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        while not self._stop.is_set():
            await asyncio.to_thread(self.fire)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll_s)

    def fire(self) -> int:
        """One round: every runner's due timers; how many fired. A failure (a store that is
        away) is logged and the next round tries again."""
        fired = 0
        for runner in self.runners:
            try:
                fired += len(runner.fire_due())
            except Exception as exc:
                get_logger().warning(
                    "server_timers_failed", flow=runner.flow.name, error_type=type(exc).__name__
                )
        return fired
