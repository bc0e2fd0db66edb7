"""What a person types in a terminal conversation (``flowkit chat``, ``flowkit roundtable``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["typed_lines"]


def typed_lines(out: TextIO, *, prompt: str = "you> ") -> Iterator[str]:
    """Each line the person types (or pipes) on stdin, stripped; blank lines are skipped.

    Ends at end of input or at ``/quit`` (``/exit``). The prompt is written only when stdin is a
    terminal, so piped input gives clean output; a line that is not UTF-8 text is skipped with
    a message on stderr instead of ending the conversation.
    """
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            out.write(prompt)
            out.flush()
        try:
            line = sys.stdin.readline()
        except UnicodeDecodeError:
            print("flowkit: error: the input is not UTF-8 text; skipped it", file=sys.stderr)
            continue
        if not line:
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            return
        yield text
