"""Read a response body within the attempt's deadline and the client's size cap.

httpx's timeouts bound each network operation, not the whole answer: a server dripping a
byte at a time keeps every read short and the call alive for ever, and ``response.text``
buffers whatever size the server sends. The drivers read bodies through a ``Budget``
instead, chunk by chunk, and split streams into lines here.
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Mapping
from typing import Literal

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "BodyLimitError",
    "Budget",
    "LineSplitter",
    "not_text",
]

#: Chat answers are kilobytes; 10 MiB leaves room for long ones and still bounds memory.
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024

# Only CR, LF and CRLF end a line: JSON may carry U+2028 raw, which str.splitlines splits.
_EOL = re.compile(r"\r\n|\r|\n")


class BodyLimitError(Exception):
    """An attempt ran past its deadline or its size cap while the body was arriving, or the
    body is not text (``kind`` "response": bytes that are not UTF-8)."""

    def __init__(self, kind: Literal["timeout", "too_large", "response"], detail: str) -> None:
        self.kind: Literal["timeout", "too_large", "response"] = kind
        self.detail = detail
        super().__init__(detail)


class Budget:
    """The time and bytes one attempt may still spend: deadline = start + ``timeout``."""

    def __init__(self, *, timeout: float, max_bytes: int) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.deadline = time.monotonic() + timeout
        self.received = 0

    def remaining(self) -> float:
        """Seconds left before the deadline (0 when it has passed)."""
        return max(self.deadline - time.monotonic(), 0.0)

    def check_length(self, headers: Mapping[str, str]) -> None:
        """Refuse a body whose declared ``Content-Length`` is over the cap before reading it."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large(f"declares {int(declared)} bytes")

    def take(self, chunk: bytes) -> bytes:
        """Account for ``chunk``; raise if the cap or the deadline is passed."""
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise self._too_large(f"went past {self.max_bytes} bytes")
        if time.monotonic() > self.deadline:
            raise self.overdue()
        return chunk

    def overdue(self) -> BodyLimitError:
        """The error for an answer still arriving when the deadline passed."""
        return BodyLimitError(
            "timeout",
            f"the answer was not complete within {self.timeout:g} s "
            f"({self.received} bytes received)",
        )

    def _too_large(self, what: str) -> BodyLimitError:
        return BodyLimitError(
            "too_large",
            f"the response body {what}, over max_response_bytes={self.max_bytes}; raise "
            "max_response_bytes if such answers are expected",
        )


class LineSplitter:
    """Bytes in, text lines out (split at LF, CRLF or CR), decoded as UTF-8.

    Linear in the body's size however long a line is: only the text each ``feed`` brings is
    searched for a line end, and a line's pieces are joined once, when it ends.
    """

    def __init__(self) -> None:
        # Strict: an answer is handed over as the model wrote it, never with U+FFFD put in
        # for bytes that were not text.
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._pieces: list[str] = []  # the line being received, in pieces
        self._after_cr = False  # the text so far ends with CR: a LF next completes a CRLF

    @property
    def pending(self) -> bool:
        """Whether part of a line (or of a character) is still waiting for its end."""
        return bool(self._pieces) or bool(self._decoder.getstate()[0])

    def feed(self, data: bytes) -> list[str]:
        """The lines ``data`` completes; a partial last line waits for the next call."""
        text = self._decode(data)
        if self._after_cr and text:
            self._after_cr = False
            if text[0] == "\n":  # the second half of a CRLF split across chunks
                text = text[1:]
        lines: list[str] = []
        start = 0
        for match in _EOL.finditer(text):
            self._pieces.append(text[start : match.start()])
            lines.append("".join(self._pieces))
            self._pieces.clear()
            start = match.end()
        if start < len(text):
            self._pieces.append(text[start:])
        self._after_cr = self._after_cr or text.endswith("\r")
        return lines

    def _decode(self, data: bytes, *, final: bool = False) -> str:
        try:
            return self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise BodyLimitError("response", not_text(exc)) from None

    def end(self) -> list[str]:
        """The last line, once the body has ended."""
        tail = "".join(self._pieces) + self._decode(b"", final=True)
        self._pieces.clear()
        return [tail] if tail else []


def not_text(exc: UnicodeDecodeError) -> str:
    """What a body that is not UTF-8 text is said to be, in error text."""
    return f"bytes that are not UTF-8 text (a {exc.reason} at byte {exc.start} of a piece)"
