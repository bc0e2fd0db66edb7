"""The progress line of long commands: one updating line on stderr, only on a terminal.

``flowkit threads`` (as a table), ``prune``, ``migrate``, ``store copy``, ``store reindex``,
``worker`` and ``dialogue test`` can take minutes on a big store; a person at a terminal
should see that they move. A ``Progress`` draws ``label  done/total (pct%)  note  elapsed`` on
stderr and redraws it in place, at most 10 times a second, and erases it when the command is
done, so nothing of it stays in the output. It
draws nothing, ever, when stderr is not a terminal (piped, redirected, CI), with ``--json`` or
``--quiet``, with ``FLOWKIT_NO_PROGRESS=1`` or with ``TERM=dumb``; and it never writes to
stdout. A ``Progress`` is also an ``on_progress(done, total, what)`` callback
(``flowkit.foundation._progress``), which is how library functions report to it without
knowing about terminals. Use it from one thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import IO, TypeVar

from .output import printable, raw_stream

__all__ = ["Progress", "progress_for", "wanted_on"]

_T = TypeVar("_T")

#: Least seconds between two redraws (at most 10 a second), and before the first one: a
#: command that is over sooner draws nothing at all.
REDRAW_S = 0.1
_ERASE = "\r\x1b[K"  # back to the line's start, clear to its end


def wanted_on(stream: IO[str]) -> bool:
    """Whether a progress line may be drawn on ``stream``: a terminal, not ``TERM=dumb``,
    and ``FLOWKIT_NO_PROGRESS`` unset (or ``0``)."""
    if os.environ.get("FLOWKIT_NO_PROGRESS", "0") not in ("", "0"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # no such method, or closed
        return False


class Progress:
    """One progress line on ``stream`` (default: stderr), for a ``with`` block.

    ``total``: how many things there are, when known (then a percentage is shown).
    ``enabled=False`` draws nothing (``--json``, ``--quiet``); so does a stream that is not a
    terminal. ``clock`` is for tests.
    """

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        enabled: bool = True,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.text = ""
        self._stream = raw_stream(stream if stream is not None else sys.stderr)
        self._on = enabled and wanted_on(self._stream)
        self._clock = clock
        self._started = self._last = clock()
        self._drawn = False

    @property
    def shown(self) -> bool:
        """Whether this progress may draw at all (on a terminal and enabled)."""
        return self._on

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        """``n`` more things are done."""
        self.done += n
        self._tick()

    def note(self, text: str) -> None:
        """Show ``text`` on the line: what is being done now (a thread id, counts)."""
        self.text = text
        self._tick()

    def track(self, items: Iterable[_T]) -> Iterator[_T]:
        """``items``, one more done as the next is asked for (a ``continue`` counts too)."""
        for item in items:
            yield item
            self.advance()

    def __call__(self, done: int, total: int | None, what: str) -> None:
        """The ``on_progress(done, total, what)`` form: ``done`` so far, ``total`` if known."""
        self.done = done
        if total is not None:
            self.total = total
        self.text = what
        self._tick()

    def close(self) -> None:
        """Erase the line (if drawn) and draw no more."""
        if self._drawn:
            self._write(_ERASE)
        self._on = self._drawn = False

    def line(self) -> str:
        """The text of the line as it would be drawn now (without control sequences)."""
        parts = [self.label]
        if self.total is not None:
            percent = 100 * self.done // self.total if self.total > 0 else 100
            parts.append(f"{self.done:,}/{self.total:,} ({percent}%)")
        elif self.done:
            parts.append(f"{self.done:,}")
        if self.text:
            parts.append(printable(self.text).replace("\n", " ").replace("\t", " "))
        parts.append(f"{self._clock() - self._started:.0f}s")
        return "  ".join(parts)

    def _tick(self) -> None:
        if not self._on:
            return
        now = self._clock()
        if now - self._last < REDRAW_S:
            return
        self._last = now
        width = _columns(self._stream) - 1  # the last column would wrap on some terminals
        self._write(_ERASE + self.line()[:width])
        self._drawn = True

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the command goes on
            self._on = False


def _columns(stream: IO[str]) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
    return max(columns, 20) if columns else 80  # 0: a terminal that does not say


def progress_for(args: argparse.Namespace, label: str, *, total: int | None = None) -> Progress:
    """The progress line of a command run with ``args``: off with ``--json`` or ``--quiet``."""
    quiet = getattr(args, "json", False) or getattr(args, "quiet", False)
    return Progress(label, total=total, enabled=not quiet)
