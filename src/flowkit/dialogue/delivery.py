"""Delivering reminders to a person at a terminal: ``flowkit chat`` runs a ``Deliverer`` next
to its input loop, which fires the due timers every ``poll_s`` seconds (``Dialogue.fire_due``)
and prints the replies of its own conversation as they come, between the person's turns.

``/event INTENT name=value ...`` typed in the chat is an external event (``parse_event``).
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import FlowkitError

if TYPE_CHECKING:
    from .app import Dialogue

__all__ = ["Deliverer", "parse_event"]


class Deliverer:
    """Fires ``bot``'s due timers every ``poll_s`` seconds on a daemon thread and passes the
    text of each reply in conversation ``thread_id`` to ``say``. Use as a context manager
    (``stop`` ends the thread); ``lock`` serialises ``say`` with the caller's own output."""

    def __init__(
        self,
        bot: Dialogue,
        thread_id: str,
        say: Callable[[str], None],
        *,
        poll_s: float = 0.5,
        lock: threading.Lock | None = None,
    ) -> None:
        self.bot = bot
        self.thread_id = thread_id
        self.say = say
        self.poll_s = poll_s
        self.lock = lock or threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flowkit-reminders", daemon=True)

    def __enter__(self) -> Deliverer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def tick(self) -> int:
        """Fire what is due now; say the replies of this conversation. How many it said."""
        said = 0
        for reply in self.bot.fire_due():
            if reply.thread_id == self.thread_id and reply.text:
                with self.lock:
                    self.say(reply.text)
                said += 1
        return said

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.tick()
            except FlowkitError:  # a store busy or a timer refused: the next tick tries again
                continue


def parse_event(line: str) -> tuple[str, dict[str, str]] | None:
    """``/event INTENT name=value ...`` -> (intent, entities); ``None`` for other lines.

    A value with spaces is quoted as in a shell (``name="Sato Taro"``); a line whose quotes
    do not pair up (``name=O'Brien``) is split at whitespace.

    Raises:
        ValueError: ``/event`` without an intent, or an entity without ``=``.
    """
    try:
        parts = shlex.split(line)
    except ValueError:  # an unpaired quote is part of a value
        parts = line.split()
    if not parts or parts[0] != "/event":
        return None
    if len(parts) < 2:
        raise ValueError("usage: /event INTENT [entity=value ...]")
    entities: dict[str, str] = {}
    for part in parts[2:]:
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise ValueError(f"`{part}` is not entity=value")
        entities[name] = value
    return parts[1], entities
