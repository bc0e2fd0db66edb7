"""``ReplayLLM``: answer from recorded calls, and refuse any request that was not recorded.

Records come from a thread's journal or a cassette file (``{"format_version": 2,
"record_with": ..., "calls": [...]}``), in the shape :func:`flowkit.llm.recording.call_record`
writes. A request finds its answer by content, like VCR's match-on-body: the key is a hash of
the significant request fields (see :func:`request_key`), so a later process replaying the
same cassette finds the answers to its own calls, whatever ran before it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from flowkit._untrusted import parse_json, read_regular_file
from flowkit.errors import (
    LLMConfigError,
    LLMSchemaError,
    ReplayMismatchError,
    UntrustedInputError,
)
from flowkit.llm._protocol import InProcessLLM
from flowkit.llm._structured import parse_answer, schema_name
from flowkit.llm._tools import ToolLike, as_tools
from flowkit.llm._types import Chunk, LLMResponse, Message, check_messages

from .._atomic import write_atomically

__all__ = [
    "CASSETTE_FORMAT_VERSION",
    "SHOW_PROMPTS_ENV",
    "ReplayLLM",
    "load_cassette",
    "request_key",
    "save_cassette",
]

#: Version 2 adds each call's ``key`` and the optional ``record_with`` command; version 1
#: files (no keys) are read as well, their keys computed on load.
CASSETTE_FORMAT_VERSION = 2
_READABLE = (1, 2)
#: Set to ``1`` to let replay errors quote prompt text (off by default: prompts hold PII).
SHOW_PROMPTS_ENV = "FLOWKIT_REPLAY_SHOW_PROMPTS"
_GENERIC_RERECORD = (
    "record the calls again through RecordingLLM and save_cassette (docs/llm.md, "
    '"Record and replay")'
)


def request_key(
    messages: Sequence[Mapping[str, Any]],
    schema: str | None,
    tools: Sequence[str] | None = None,
) -> str:
    """The content key of a request: a hash of its messages, its schema name and its tools.

    Significant: every message with all its keys (role, content, tool calls ...), in order,
    the schema name and the names of the tools offered, in order. Not significant: the model
    name (the replaying LLM stands in for whatever model recorded), the timeout, the tools'
    descriptions and schemas, and JSON key order (keys are sorted before hashing). A request
    without tools has the key it had before tool calling existed.
    """
    content: dict[str, Any] = {"messages": [dict(m) for m in messages], "schema": schema}
    if tools:
        content["tools"] = list(tools)
    canonical = json.dumps(
        content,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class ReplayLLM(InProcessLLM):
    """An LLM that replays recorded calls; an unrecorded request raises ``ReplayMismatchError``.

    By default (``strict=False``) each request takes the first unused recording with the same
    content key: calls may come in any order, from any process. Equal requests recorded with
    different answers are played in their recorded order. With ``strict=True`` calls must
    come in exactly the recorded order. Either way, an unrecorded request is an error, never
    a wrong answer. Errors describe a request by its shape (schema, roles, sizes, key) and
    quote prompt text only with ``show_prompts=True`` or ``FLOWKIT_REPLAY_SHOW_PROMPTS=1``.
    """

    def __init__(
        self,
        calls: Sequence[Mapping[str, Any]],
        *,
        strict: bool = False,
        model: str | None = None,
        source: str | None = None,
        record_with: str | None = None,
        show_prompts: bool | None = None,
    ) -> None:
        self._calls = [_checked(i, call) for i, call in enumerate(calls)]
        self._keys = [_key_of(request) for request, _ in self._calls]
        self._used = [False] * len(self._calls)
        self._asked = 0
        self._next = 0
        self.strict = strict
        self.source = source
        self.record_with = record_with
        self.show_prompts = (
            show_prompts
            if show_prompts is not None
            else os.environ.get(SHOW_PROMPTS_ENV, "") not in ("", "0")
        )
        self._lock = threading.Lock()
        first = self._calls[0][0].get("model") if self._calls else None
        super().__init__(model=model or (first if isinstance(first, str) else None) or "replay")

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, strict: bool = False, show_prompts: bool | None = None
    ) -> ReplayLLM:
        """Replay the calls of a cassette file written by :func:`save_cassette`."""
        data = _read(path)
        return cls(
            data["calls"],
            strict=strict,
            source=str(path),
            record_with=data.get("record_with")
            if isinstance(data.get("record_with"), str)
            else None,
            show_prompts=show_prompts,
        )

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
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Return the recorded response for this request (``timeout`` is ignored)."""
        index, response = self._take(messages, schema, tools)
        if schema is None or response.tool_calls:
            return response
        try:
            if response.parsed is not None:
                parsed: BaseModel = schema.model_validate(response.parsed)
            else:
                parsed = parse_answer(response.text, schema, model=self.model)
        except (ValidationError, LLMSchemaError) as exc:
            raise ReplayMismatchError(
                f"Recorded call {index}{self._where()}: the recorded answer no longer fits "
                f"schema `{schema_name(schema)}` ({_clip(str(exc), 300)}). The schema changed "
                f"since recording; {self._rerecord()}.",
                model=self.model,
            ) from exc
        return response.model_copy(update={"parsed": parsed})

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Replay a recorded answer as one final chunk (with its tool calls)."""
        _, response = self._take(messages, None, tools)
        yield Chunk(
            text=response.text, done=True, usage=response.usage, tool_calls=response.tool_calls
        )

    def _take(
        self,
        messages: Sequence[Message],
        schema: type[BaseModel] | None,
        tools: Sequence[ToolLike] | None,
    ) -> tuple[int, LLMResponse]:
        asked = check_messages(messages)
        name = schema_name(schema) if schema is not None else None
        offered = [t.name for t in as_tools(tools)]
        key = request_key(asked, name, offered)
        with self._lock:
            if self.strict:
                index = self._strict_index(self._next, asked, name, offered)
                self._next = index + 1
            else:
                number = self._asked
                self._asked += 1
                index = next(
                    (i for i, k in enumerate(self._keys) if k == key and not self._used[i]), -1
                )
                if index < 0:
                    raise self._unmatched(number, asked, name, key, offered)
            self._used[index] = True
            return index, self._calls[index][1]

    def _strict_index(
        self, number: int, asked: list[Message], name: str | None, offered: list[str]
    ) -> int:
        if number >= len(self._calls):
            raise ReplayMismatchError(
                f"LLM call {number} has no recording{self._where()}: only {len(self._calls)} "
                f"calls were recorded; it asked {_describe(asked, name)}. The flow now calls "
                f"the LLM more often; {self._rerecord()}.",
                model=self.model,
            )
        how = _difference(self._calls[number][0], asked, name, self.show_prompts, offered)
        if how is not None:
            raise ReplayMismatchError(
                f"LLM call {number} does not match the recording{self._where()}: {how}. If "
                f"the prompt changed on purpose, {self._rerecord()}.",
                model=self.model,
            )
        return number

    def _unmatched(
        self, number: int, asked: list[Message], name: str | None, key: str, offered: list[str]
    ) -> ReplayMismatchError:
        same = [i for i, k in enumerate(self._keys) if k == key]
        if same:
            why = (
                f"its {len(same)} recording(s) were already played in this process; the "
                "flow now asks it more often"
            )
        else:
            why = "no recorded call has this content"
            nearest = self._nearest(asked, name, offered)
            if nearest is not None:
                index, how = nearest
                why += f"; the closest, recorded call {index}, differs: {how}"
        return ReplayMismatchError(
            f"LLM call {number} has no recording{self._where()}: it asked "
            f"{_describe(asked, name)}, key {key}; {why}. If the prompt changed on purpose, "
            f"{self._rerecord()}.",
            model=self.model,
        )

    def _nearest(
        self, asked: list[Message], name: str | None, offered: list[str]
    ) -> tuple[int, str] | None:
        """The recorded request sharing the longest prefix with ``asked``, and how it differs."""
        best: tuple[int, int] | None = None
        for i, (request, _) in enumerate(self._calls):
            if request.get("schema") != name:
                continue
            shared = _shared_prefix(request["messages"], asked)
            if best is None or shared > best[1]:
                best = (i, shared)
        if best is None:
            return None
        how = _difference(self._calls[best[0]][0], asked, name, self.show_prompts, offered)
        return (best[0], how) if how is not None else None

    def _where(self) -> str:
        return f" in cassette {self.source}" if self.source else ""

    def _rerecord(self) -> str:
        if self.record_with:
            return f"record the cassette again: {self.record_with}"
        return _GENERIC_RERECORD


def save_cassette(
    path: str | os.PathLike[str],
    calls: Sequence[Mapping[str, Any]],
    *,
    record_with: str | None = None,
) -> None:
    """Write ``calls`` to a cassette file atomically (temp file, fsync, rename).

    Each call gets its content ``key`` (for reading and diffing; replay recomputes it).
    ``record_with`` is the command that records the cassette again, quoted in replay errors.
    """
    target = Path(path)
    written = []
    for index, call in enumerate(calls):
        request, _ = _checked(index, call)
        written.append({"key": _key_of(request), **{k: v for k, v in call.items() if k != "key"}})
    data: dict[str, Any] = {"format_version": CASSETTE_FORMAT_VERSION}
    if record_with:
        data["record_with"] = record_with
    data["calls"] = written
    write_atomically(target, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


#: A cassette larger than this is refused unread (recordings of long sessions stay far below).
MAX_CASSETTE_BYTES = 64 * 1024 * 1024


def load_cassette(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the calls of a cassette file (format version 1 or 2).

    Raises:
        LLMConfigError: the file is missing, not JSON, or not a cassette of a known version.
    """
    calls: list[dict[str, Any]] = _read(path)["calls"]
    return calls


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        raw = read_regular_file(path, what="cassette", max_bytes=MAX_CASSETTE_BYTES)
        data = parse_json(raw, what="cassette", max_bytes=None)
    except OSError as exc:
        raise LLMConfigError(
            f"Cannot read cassette {str(path)!r}: {exc.strerror or exc}; check the path."
        ) from exc
    except UntrustedInputError as exc:
        raise LLMConfigError(f"Cassette {str(path)!r} is refused: {exc}.") from exc
    except ValueError as exc:  # also UnicodeDecodeError
        raise LLMConfigError(
            f"Cassette {str(path)!r} is not a JSON file ({_clip(str(exc), 120)})."
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        raise LLMConfigError(
            f'Cassette {str(path)!r} must be an object {{"format_version": '
            f'{CASSETTE_FORMAT_VERSION}, "calls": [...]}}.'
        )
    if data.get("format_version") not in _READABLE:
        raise LLMConfigError(
            f"Cassette {str(path)!r} has format_version {data.get('format_version')!r}; this "
            f"flowkit reads versions {', '.join(map(str, _READABLE))}. Record it again."
        )
    return data


def _checked(index: int, call: Mapping[str, Any]) -> tuple[dict[str, Any], LLMResponse]:
    try:
        request = call["request"]
        messages = request["messages"]
        if not isinstance(messages, list):
            raise TypeError("request.messages is not a list")
        return dict(request), LLMResponse.model_validate(call["response"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise LLMConfigError(
            f"Recorded LLM call {index} is malformed ({_clip(str(exc), 200)}); each call must "
            'be {"request": {"messages": [...], "schema": ...}, "response": {"text": ..., ...}}.'
        ) from exc


def _key_of(request: Mapping[str, Any]) -> str:
    schema = request.get("schema")
    tools = request.get("tools")
    return request_key(
        request["messages"],
        schema if isinstance(schema, str) else None,
        [str(t) for t in tools] if isinstance(tools, list) else None,
    )


def _describe(messages: Sequence[Message], schema: str | None) -> str:
    """A request in words without its text: schema, roles and sizes."""
    roles = ", ".join(
        f"{m['role']} {len(m['content']):,} chars"
        + (f" + {len(m['tool_calls'])} tool call(s)" if m.get("tool_calls") else "")
        for m in messages
    )
    return f"schema {schema or 'none (plain text)'} with {len(messages)} message(s) ({roles})"


def _shared_prefix(recorded: Sequence[Any], asked: Sequence[Message]) -> int:
    """How many leading characters two message lists share, counting whole equal messages."""
    total = 0
    for want, got in zip(recorded, asked, strict=False):
        if want == got:
            total += len(str(got.get("content", ""))) + 1
            continue
        if isinstance(want, Mapping) and want.get("role") == got.get("role"):
            a, b = str(want.get("content", "")), str(got.get("content", ""))
            total += next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
        break
    return total


def _difference(
    recorded: Mapping[str, Any],
    messages: list[Message],
    schema: str | None,
    show: bool,
    tools: list[str] | None = None,
) -> str | None:
    """How a request differs from a recorded one, in words; ``None`` when it matches."""
    if recorded.get("schema") != schema:
        return f"schema is {schema!r}, the recording has {recorded.get('schema')!r}"
    if (recorded.get("tools") or []) != (tools or []):
        return f"the tools offered are {tools or []}, the recording has {recorded.get('tools')}"
    expected: list[Any] = recorded["messages"]
    for i, (want, got) in enumerate(zip(expected, messages, strict=False)):
        if want == got:
            continue
        if not isinstance(want, Mapping) or want.get("role") != got.get("role"):
            role = want.get("role") if isinstance(want, Mapping) else want
            return f"message {i} has role {got.get('role')!r}, the recording has {role!r}"
        return f"message {i} ({got.get('role')}) differs: {_text_difference(want, got, show)}"
    if len(expected) != len(messages):
        return f"{len(messages)} messages were sent, the recording has {len(expected)}"
    return None


def _text_difference(want: Mapping[str, Any], got: Mapping[str, Any], show: bool) -> str:
    a, b = str(want.get("content", "")), str(got.get("content", ""))
    if a == b:
        return "other keys differ"
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    where = f"from character {at} (sent {len(b):,} chars, recorded {len(a):,})"
    if not show:
        return f"{where}; set {SHOW_PROMPTS_ENV}=1 to see the text"
    start = max(at - 20, 0)
    return f"{where}, sent {_clip(b[start:])!r}, recorded {_clip(a[start:])!r}"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
