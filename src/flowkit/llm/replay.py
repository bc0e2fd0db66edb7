"""``ReplayLLM``: answer from recorded calls, and refuse any request that was not recorded.

Records come from a thread's journal or a cassette file (``{"format_version": 1, "calls":
[...]}``), in the shape :func:`flowkit.llm.recording.call_record` writes.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from flowkit.errors import LLMConfigError, LLMSchemaError, ReplayMismatchError
from flowkit.llm._protocol import InProcessLLM
from flowkit.llm._structured import parse_answer, schema_name
from flowkit.llm._types import Chunk, LLMResponse, Message, check_messages

from .._atomic import write_atomically

__all__ = ["CASSETTE_FORMAT_VERSION", "ReplayLLM", "load_cassette", "save_cassette"]

CASSETTE_FORMAT_VERSION = 1


class ReplayLLM(InProcessLLM):
    """An LLM that replays recorded calls; a request that differs raises ``ReplayMismatchError``.

    With ``strict=True`` calls must come in the recorded order. With ``strict=False`` each
    request takes the first unused recording with the same messages and schema, so
    concurrent calls may arrive in any order. Either way, an unrecorded request is an
    error, never a wrong answer.
    """

    def __init__(
        self, calls: Sequence[Mapping[str, Any]], *, strict: bool = True, model: str | None = None
    ) -> None:
        self._calls = [_checked(i, call) for i, call in enumerate(calls)]
        self._used = [False] * len(self._calls)
        self._next = 0
        self.strict = strict
        self._lock = threading.Lock()
        first = self._calls[0][0].get("model") if self._calls else None
        super().__init__(model=model or (first if isinstance(first, str) else None) or "replay")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, strict: bool = True) -> ReplayLLM:
        """Replay the calls of a cassette file written by :func:`save_cassette`."""
        return cls(load_cassette(path), strict=strict)

    def __repr__(self) -> str:
        return f"ReplayLLM(calls={len(self._calls)}, remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        """How many recorded calls have not been replayed yet."""
        return self._used.count(False)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Return the recorded response for this request (``timeout`` is ignored)."""
        index, response = self._take(messages, schema)
        if schema is None:
            return response
        try:
            if response.parsed is not None:
                parsed: BaseModel = schema.model_validate(response.parsed)
            else:
                parsed = parse_answer(response.text, schema, model=self.model)
        except (ValidationError, LLMSchemaError) as exc:
            raise ReplayMismatchError(
                f"LLM call {index}: the recorded answer no longer fits schema "
                f"`{schema_name(schema)}` ({exc}). The schema changed since recording; "
                "record again.",
                model=self.model,
            ) from exc
        return response.model_copy(update={"parsed": parsed})

    def stream(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> Iterator[Chunk]:
        """Replay a recorded answer as one final chunk."""
        _, response = self._take(messages, None)
        yield Chunk(text=response.text, done=True, usage=response.usage)

    def _take(
        self, messages: Sequence[Message], schema: type[BaseModel] | None
    ) -> tuple[int, LLMResponse]:
        asked = check_messages(messages)
        name = schema_name(schema) if schema is not None else None
        with self._lock:
            if self.strict:
                index = self._next
                if index >= len(self._calls):
                    raise ReplayMismatchError(
                        f"LLM call {index} has no recording: only {len(self._calls)} calls were "
                        "recorded. The flow now calls the LLM more often; record again.",
                        model=self.model,
                    )
                how = _difference(self._calls[index][0], asked, name)
                if how is not None:
                    raise ReplayMismatchError(
                        f"LLM call {index} does not match the recording: {how}. "
                        "If the prompt changed on purpose, record again.",
                        model=self.model,
                    )
            else:
                index = next(
                    (
                        i
                        for i, (request, _) in enumerate(self._calls)
                        if not self._used[i] and _difference(request, asked, name) is None
                    ),
                    -1,
                )
                if index < 0:
                    last = asked[-1]["content"]
                    raise ReplayMismatchError(
                        f"No unused recording matches this LLM request (schema {name!r}, last "
                        f"message {_clip(last)!r}); {self.remaining} recordings are unused. "
                        "If the prompt changed on purpose, record again.",
                        model=self.model,
                    )
            self._used[index] = True
            self._next = index + 1
            return index, self._calls[index][1]


def save_cassette(path: str | os.PathLike[str], calls: Sequence[Mapping[str, Any]]) -> None:
    """Write ``calls`` to a cassette file atomically (temp file, fsync, rename)."""
    target = Path(path)
    data = {"format_version": CASSETTE_FORMAT_VERSION, "calls": [dict(c) for c in calls]}
    write_atomically(target, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def load_cassette(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the calls of a cassette file.

    Raises:
        LLMConfigError: the file is missing, not JSON, or not a cassette of a known version.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LLMConfigError(f"Cannot read cassette {str(path)!r}: {exc}.") from exc
    except ValueError as exc:
        raise LLMConfigError(f"Cassette {str(path)!r} is not valid JSON: {exc}.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        raise LLMConfigError(
            f'Cassette {str(path)!r} must be an object {{"format_version": 1, "calls": [...]}}.'
        )
    if data.get("format_version") != CASSETTE_FORMAT_VERSION:
        raise LLMConfigError(
            f"Cassette {str(path)!r} has format_version {data.get('format_version')!r}; this "
            f"flowkit reads version {CASSETTE_FORMAT_VERSION}. Record it again."
        )
    calls: list[dict[str, Any]] = data["calls"]
    return calls


def _checked(index: int, call: Mapping[str, Any]) -> tuple[dict[str, Any], LLMResponse]:
    try:
        request = call["request"]
        messages = request["messages"]
        if not isinstance(messages, list):
            raise TypeError("request.messages is not a list")
        return dict(request), LLMResponse.model_validate(call["response"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise LLMConfigError(
            f"Recorded LLM call {index} is malformed ({exc}); each call must be "
            '{"request": {"messages": [...], "schema": ...}, "response": {"text": ..., ...}}.'
        ) from exc


def _difference(
    recorded: Mapping[str, Any], messages: list[Message], schema: str | None
) -> str | None:
    """How a request differs from a recorded one, in words; ``None`` when it matches."""
    if recorded.get("schema") != schema:
        return f"schema is {schema!r}, the recording has {recorded.get('schema')!r}"
    expected: list[Any] = recorded["messages"]
    for i, (want, got) in enumerate(zip(expected, messages, strict=False)):
        if want == got:
            continue
        if not isinstance(want, Mapping) or want.get("role") != got.get("role"):
            role = want.get("role") if isinstance(want, Mapping) else want
            return f"message {i} has role {got.get('role')!r}, the recording has {role!r}"
        return f"message {i} ({got.get('role')}) differs: {_text_difference(want, got)}"
    if len(expected) != len(messages):
        return f"{len(messages)} messages were sent, the recording has {len(expected)}"
    return None


def _text_difference(want: Mapping[str, Any], got: Mapping[str, Any]) -> str:
    a, b = str(want.get("content", "")), str(got.get("content", ""))
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    start = max(at - 20, 0)
    return (
        f"from character {at}, sent {_clip(b[start:])!r}, recorded {_clip(a[start:])!r}"
        if a != b
        else "other keys differ"
    )


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
