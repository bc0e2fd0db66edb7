"""Turn the lines of a streamed answer into chunks, and say how a broken stream failed.

Pure: the drivers feed it lines; each backend supplies a parser for its wire format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from flowkit.errors import LLMError, LLMResponseError, LLMTimeoutError, LLMUnavailableError
from flowkit.llm._types import Chunk, ToolCall, Usage

__all__ = ["Delta", "ServerStreamError", "StreamDecoder", "ToolCallPart", "said_text"]


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A piece of a streamed tool call.

    OpenAI sends a call in pieces keyed by ``index``: the first has its ``id`` and ``name``,
    the rest add to ``arguments``. Ollama sends each call whole (``index=None``: a new call).
    """

    index: int | None = None
    id: str = ""
    name: str = ""
    arguments: str = ""

    def __post_init__(self) -> None:
        # Built inside a line parser, so a field of the wrong type fails that line as
        # unreadable (LLMResponseError) instead of surfacing later as a TypeError.
        _check_text(id=self.id, name=self.name, arguments=self.arguments)


@dataclass(frozen=True, slots=True)
class Delta:
    """What one stream line says: new text, and whether the answer is finished or done.

    ``finished`` means the model stopped (OpenAI ``finish_reason``): the answer is complete
    if the body then ends. ``done`` is the server's explicit end-of-stream marker.
    ``finish_reason`` is why the model stopped, where the line says it.
    """

    text: str = ""
    usage: Usage | None = None
    finished: bool = False
    done: bool = False
    tool_calls: tuple[ToolCallPart, ...] = ()
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        _check_text(text=self.text)
        if self.finish_reason is not None:
            _check_text(finish_reason=self.finish_reason)


_REASON = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def said_text(value: object) -> str | None:
    """A finish reason the server sent ("stop", "length", "tool_calls" ...), or ``None`` if
    it sent none or something else (a number, a long or odd string): an odd value there is
    not worth failing an answer for, nor worth keeping in a journal."""
    return value if isinstance(value, str) and _REASON.fullmatch(value) else None


def _check_text(**fields: object) -> None:
    for name, value in fields.items():
        if type(value) is not str:
            raise TypeError(f"{name} is a {type(value).__name__}, not text")


class ServerStreamError(Exception):
    """Raised by a line parser when the server reports an error inside the stream."""


class StreamDecoder:
    """Assemble a stream; never let a cut-off stream pass for a complete answer."""

    def __init__(
        self, parse_line: Callable[[str], Delta | None], *, model: str, url: str, timeout: float
    ) -> None:
        self._parse_line = parse_line
        self._model = model
        self._url = url
        self._timeout = timeout
        self._parts: list[str] = []
        self._usage: Usage | None = None
        self._finished = False
        self._finish_reason: str | None = None
        self._calls: dict[int, list[str]] = {}  # index -> [id, name, arguments so far]
        self.done = False

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._parts)

    def feed(self, line: str) -> Chunk | None:
        """Decode one line; return the chunk it carries, if any."""
        if self.done or not line.strip():
            return None
        try:
            delta = self._parse_line(line)
        except ServerStreamError as exc:
            raise LLMResponseError(
                f"{self._where} reported an error in the middle of the stream: {exc}. "
                "Retry the call; if it persists, check the server's logs.",
                model=self._model,
                raw_text=self.text,
            ) from exc
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            raise LLMResponseError(
                f"{self._where} sent a stream line that cannot be read ({exc!r}): {line[:200]!r}."
                " Check that base_url points at a server of this API kind.",
                model=self._model,
                raw_text=self.text,
            ) from exc
        if delta is None:
            return None
        self._parts.append(delta.text)
        self._usage = delta.usage or self._usage
        self._finished = self._finished or delta.finished
        self._finish_reason = delta.finish_reason or self._finish_reason
        for part in delta.tool_calls:
            self._add_call(part)
        if delta.done:
            self.done = True
            return self._last(delta.text)
        return Chunk(text=delta.text) if delta.text else None

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls assembled so far, in order."""
        return [
            ToolCall(id=call_id or f"call_{index}", name=name, arguments=arguments or "{}")
            for index, (call_id, name, arguments) in sorted(self._calls.items())
        ]

    def _add_call(self, part: ToolCallPart) -> None:
        index = part.index if part.index is not None else len(self._calls)
        call = self._calls.setdefault(index, ["", "", ""])
        call[0] = call[0] or part.id
        call[1] = call[1] or part.name
        call[2] += part.arguments

    def _last(self, text: str) -> Chunk:
        return Chunk(
            text=text,
            done=True,
            usage=self._usage,
            tool_calls=self.tool_calls,
            finish_reason=self._finish_reason,
        )

    def end(self, *, ended_by_close: bool = False) -> Chunk | None:
        """The body ended cleanly: the closing chunk, or raise if the end marker is missing.

        ``ended_by_close``: the body had no length and no chunking, so its end was the
        connection's close, which a dropped connection looks like too: a missing end
        marker is then a cut (``LLMUnavailableError``), not a server that ended too early.
        """
        if self.done:
            return None
        if self._finished:
            self.done = True
            return self._last("")
        if ended_by_close:
            raise self.cut("cut", "the connection closed before the stream's end marker")
        raise LLMResponseError(
            f"The stream from {self._where} ended after {len(self.text)} characters without "
            "its end marker, so the answer is incomplete. Retry the call.",
            model=self._model,
            raw_text=self.text,
        )

    def cut(self, kind: str, detail: str) -> LLMError:
        """The error for a stream that failed midway (``kind``: timeout, too_large,
        response (bytes that are not text), or any other: the connection was cut)."""
        received = f"after {len(self.text)} characters"
        if kind == "timeout":
            return LLMTimeoutError(
                f"The stream from {self._where} was not complete within {self._timeout:g} s "
                f"{received}; the answer is incomplete. Retry, or raise the timeout (it bounds "
                "the whole answer).",
                model=self._model,
            )
        if kind in ("too_large", "response"):
            return LLMResponseError(
                f"The stream from {self._where} was stopped {received}: {detail}.",
                model=self._model,
                raw_text=self.text,
            )
        return LLMUnavailableError(
            f"The stream from {self._where} was cut off {received} ({detail}); the "
            "answer is incomplete. Retry the call.",
            model=self._model,
        )

    @property
    def _where(self) -> str:
        return f"POST {self._url} (`{self._model}`)"
