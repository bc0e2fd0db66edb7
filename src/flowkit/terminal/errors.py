"""How a command fails: ``CommandError`` ends it with a message on stderr and an exit code.

``flowkit.cli``'s ``main`` catches every exception at its boundary and prints it as one plain
line (``flowkit.cli._errors.explain``), so no input ever shows a Python traceback.
"""

from __future__ import annotations

from ..foundation._plain import shorten

__all__ = ["CommandError", "tidy"]

#: The most lines of one error message printed; the rest are counted.
_MAX_LINES = 40


class CommandError(Exception):
    """Ends a command with a message on stderr and an exit code (no traceback)."""

    def __init__(self, message: str, code: int = 1) -> None:
        self.code = code
        super().__init__(message)


def tidy(message: str) -> str:
    """A message with each line shortened and at most ``_MAX_LINES`` lines."""
    lines = [shorten(line, 300) for line in message.splitlines()] or [""]
    if len(lines) > _MAX_LINES:
        lines = [*lines[:_MAX_LINES], f"... and {len(lines) - _MAX_LINES} more lines"]
    return "\n".join(lines)
