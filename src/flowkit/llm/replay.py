"""``ReplayLLM``: answer from recorded calls, and refuse any request that was not recorded.

Records come from a thread's journal or a cassette file (``{"format_version": 2,
"record_with": ..., "calls": [...]}``), in the shape :func:`flowkit.llm.recording.call_record`
writes. A request finds its answer by content, like VCR's match-on-body: the key is a hash of
the significant request fields (see :func:`request_key`), so a later process replaying the
same cassette finds the answers to its own calls, whatever ran before it.

The cassette format lives in ``_cassette`` and the wording of a mismatch in
``_replay_mismatch``; their public names are re-exported here, where users import them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ValidationError

from flowkit.errors import LLMSchemaError, ReplayMismatchError
from flowkit.foundation._plain import describe_validation_error
from flowkit.llm._cassette import (
    CASSETTE_FORMAT_VERSION,
    checked_call,
    key_of,
    load_cassette,
    read_cassette,
    request_key,
    save_cassette,
)
from flowkit.llm._protocol import InProcessLLM
from flowkit.llm._replay_mismatch import (
    SHOW_PROMPTS_ENV,
    clip,
    describe,
    difference,
    nearest_recording,
)
from flowkit.llm._structured import parse_answer, schema_name
from flowkit.llm._tools import ToolLike, as_tools
from flowkit.llm._types import Chunk, LLMResponse, Message, check_messages

__all__ = [
    "CASSETTE_FORMAT_VERSION",
    "SHOW_PROMPTS_ENV",
    "ReplayLLM",
    "load_cassette",
    "request_key",
    "save_cassette",
]

_GENERIC_RERECORD = (
    "record a cassette from a real model with save_cassette (the calls of a run are "
    'runner.llm_calls(thread); outside a flow, RecordingLLM; docs/llm.md, "Record and replay")'
)


class ReplayLLM(InProcessLLM):
    """An LLM that replays recorded calls; an unrecorded request raises ``ReplayMismatchError``.

    By default (``strict=False``) each request takes the first unused recording with the same
    content key: calls may come in any order, from any process. Equal requests recorded with
    different answers are played in their recorded order. With ``strict=True`` calls must
    come in exactly the recorded order. Either way, an unrecorded request is an error, never
    a wrong answer. Errors describe a request by its shape (schema, roles, sizes, key) and
    quote prompt text only with ``show_prompts=True`` or ``FLOWKIT_REPLAY_SHOW_PROMPTS=1``.
    """

    #: Whether a request whose recordings were all played is answered by them again, from the
    #: first: for a cassette that serves many threads in one process (a demo's, under
    #: ``flowkit serve``). Off by default, where asking more often than recorded is an error.
    repeats: ClassVar[bool] = False

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
        self._calls = [checked_call(i, call) for i, call in enumerate(calls)]
        self._keys = [key_of(request) for request, _ in self._calls]
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
    ) -> Self:
        """Replay the calls of a cassette file written by :func:`save_cassette`."""
        data = read_cassette(path)
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
            # pydantic's own text spans several lines and links its docs; say it in one line.
            why = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            raise ReplayMismatchError(
                f"Recorded call {index}{self._where()}: the recorded answer no longer fits "
                f"schema `{schema_name(schema)}` ({clip(why, 300)}). The schema changed "
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
            text=response.text,
            done=True,
            usage=response.usage,
            tool_calls=response.tool_calls,
            finish_reason=response.finish_reason,
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
                index = self._unused(key)
                if index < 0 and self.repeats:
                    # Every recording of this request was played: play them again in order.
                    for i, k in enumerate(self._keys):
                        self._used[i] = self._used[i] and k != key
                    index = self._unused(key)
                if index < 0:
                    raise self._unmatched(number, asked, name, key, offered)
            self._used[index] = True
            return index, self._calls[index][1]

    def _unused(self, key: str) -> int:
        """The first recording of ``key`` not played yet, or -1."""
        return next((i for i, k in enumerate(self._keys) if k == key and not self._used[i]), -1)

    def _strict_index(
        self, number: int, asked: list[Message], name: str | None, offered: list[str]
    ) -> int:
        if number >= len(self._calls):
            raise ReplayMismatchError(
                f"LLM call {number} has no recording{self._where()}: only {len(self._calls)} "
                f"calls were recorded; it asked {describe(asked, name)}. The flow now calls "
                f"the LLM more often; {self._rerecord()}.",
                model=self.model,
            )
        how = difference(self._calls[number][0], asked, name, self.show_prompts, offered)
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
            nearest = nearest_recording(
                [request for request, _ in self._calls], asked, name, offered, self.show_prompts
            )
            if nearest is not None:
                index, how = nearest
                why += f"; the closest, recorded call {index}, differs: {how}"
        return ReplayMismatchError(
            f"LLM call {number} has no recording{self._where()}: it asked "
            f"{describe(asked, name)}, key {key}; {why}. A cassette answers only the "
            f"requests recorded in it: send one of those, or {self._rerecord()}.",
            model=self.model,
        )

    def _where(self) -> str:
        return f" in cassette {self.source}" if self.source else ""

    def _rerecord(self) -> str:
        if self.record_with:
            return f"record the cassette again: {self.record_with}"
        return _GENERIC_RERECORD
