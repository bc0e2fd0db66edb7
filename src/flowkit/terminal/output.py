"""How commands print: aligned tables, times, JSON documents, and hints that run as printed.

Everything a command prints passes through ``terminal_safe``: user data (a slot value, a
message, a thread's state) may hold terminal control sequences that would recolour, retitle
or clear the reader's terminal, so control characters are written as visible escapes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO, Any, TextIO, cast

__all__ = [
    "command_hint",
    "iso",
    "printable",
    "raw_stream",
    "table",
    "terminal_safe",
    "when",
    "write_json",
]

# C0 controls but tab and newline, DEL, and C1 controls (U+0080-U+009F: CSI, OSC ...).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # C0 as `\x1b`, the familiar form; DEL and C1 as `\u009b`, which is also a valid escape
    # inside a JSON string (json.dumps escapes C0 itself but leaves DEL and C1 raw).
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline written as an escape."""
    return _CONTROL.sub(_escape, text)


class _TerminalSafe:
    """A text stream that writes ``printable(text)`` to the stream it wraps."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def terminal_safe(stream: IO[str]) -> TextIO:
    """``stream`` wrapped so that no control character from user data reaches a terminal."""
    return cast(TextIO, _TerminalSafe(stream))


def raw_stream(stream: IO[str]) -> IO[str]:
    """The stream ``terminal_safe`` wrapped (else ``stream``): for the progress line, which
    writes its own control sequences and makes its text printable itself."""
    return stream._stream if isinstance(stream, _TerminalSafe) else stream


def when(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat()


def table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


def write_json(data: Any, out: TextIO) -> None:
    import json

    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def command_hint(*words: str, store: str | None = None, **options: str | None) -> str:
    """A ``flowkit`` command line a person can paste: quoted, with ``--store`` when not default.

    ``store`` is the folder or database URL the current command used; it is added unless it
    is the default the next command would pick by itself, and a URL's password is shown as
    ``***`` (keep it in ``$FLOWKIT_STORE`` or ``~/.pgpass`` for hints that paste as they are).
    ``options`` become ``--name value`` (``_`` -> ``-``).
    """
    import shlex

    from .store import default_store, shown

    parts = ["flowkit", *words]
    for name, value in options.items():
        if value is not None:
            parts += [f"--{name.replace('_', '-')}", value]
    if store is not None and store != default_store():
        parts += ["--store", shown(store)]
    return " ".join(shlex.quote(part) for part in parts)
