"""What a person types in a terminal conversation (``flowkit chat``, ``flowkit roundtable``)."""

from __future__ import annotations

import codecs
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["typed_lines"]

#: Said after every refused line: the conversation goes on, and nothing reached it.
_SKIPPED = "it was skipped, nothing was sent."


def typed_lines(
    out: TextIO, *, prompt: str = "you> ", max_chars: int | None = None
) -> Iterator[str]:
    """Each line the person types (or pipes) on stdin, stripped; blank lines are skipped.

    Ends at end of input or at ``/quit`` (``/exit``). The prompt is written only when stdin is a
    terminal, so piped input gives clean output. A line that is not text in stdin's encoding,
    or longer than ``max_chars``, is refused with one line on stderr and the conversation goes
    on: one bad line never ends it.
    """
    interactive = sys.stdin.isatty()
    # Bytes are decoded here, a line at a time: a strict text layer would drop the lines read
    # with a bad one, and a lenient one would pass its escapes on as text.
    raw = getattr(sys.stdin, "buffer", None)
    encoding = codecs.lookup(getattr(sys.stdin, "encoding", None) or "utf-8").name
    while True:
        if interactive:
            out.write(prompt)
            out.flush()
        line = raw.readline() if raw is not None else sys.stdin.readline()
        if not line:
            return
        text, problem = _decoded(line, encoding)
        if problem is None:
            text = text.strip()
            if max_chars is not None and len(text) > max_chars:
                problem = (
                    f"that line has {len(text):,} characters, more than the {max_chars:,} a "
                    "message may have"
                )
        if problem is not None:
            print(f"flowkit: error: {problem}; {_SKIPPED}", file=sys.stderr)
            continue
        if not text:
            continue
        if text in ("/quit", "/exit"):
            return
        yield text


def _decoded(line: bytes | str, encoding: str) -> tuple[str, str | None]:
    """The line as text, or why it is not text in ``encoding`` (the first bad byte)."""
    if isinstance(line, str):
        # A text stdin that escaped undecodable bytes (surrogateescape, the C locale's way)
        # hands them over as lone surrogates: get the bytes back to name the bad one.
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            try:
                line = line.encode(encoding, "surrogateescape")
            except UnicodeEncodeError as exc:  # a lone surrogate no byte escapes to
                return "", f"that line is not text (character {exc.start + 1})"
        else:
            return line, None
    try:
        return line.decode(encoding), None
    except UnicodeDecodeError as exc:
        name = encoding.upper() if encoding.startswith("utf") else encoding
        bad = line[exc.start]
        return "", f"that line is not {name} text (its byte {exc.start + 1} is 0x{bad:02x})"
