"""``RecordingLLM``: pass calls through to another LLM and hand each finished call to a sink.

The runner uses it to journal every LLM call of a step, so that resume, fork and replay can
answer from the journal instead of calling the model again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from flowkit.llm._protocol import LLM
from flowkit.llm._structured import schema_name
from flowkit.llm._tools import ToolLike, as_tools
from flowkit.llm._types import Chunk, LLMResponse, Message, ToolCall, Usage

__all__ = ["RecordingLLM", "call_record"]

#: Receives one JSON-serialisable record per finished call (see :func:`call_record`).
Sink = Callable[[dict[str, Any]], None]


def call_record(
    messages: Sequence[Message],
    schema: type[BaseModel] | None,
    model: str,
    response: LLMResponse,
    tools: Sequence[ToolLike] | None = None,
) -> dict[str, Any]:
    """The record of one call: ``{"request": {messages, schema, model}, "response": {...}}``.

    ``schema`` is recorded by name (:func:`flowkit.llm._structured.schema_name`), and so are
    the ``tools`` offered (``"tools": [names]``, only when some were); the response is
    ``LLMResponse.model_dump(mode="json")`` without an empty ``tool_calls``, so the record is
    plain JSON and a call without tools is recorded as before tool calling existed.
    """
    request: dict[str, Any] = {
        "messages": [dict(m) for m in messages],
        "schema": schema_name(schema) if schema is not None else None,
        "model": model,
    }
    if tools:
        request["tools"] = [t.name for t in as_tools(tools)]
    answer = response.model_dump(mode="json")
    if not answer.get("tool_calls"):
        answer.pop("tool_calls", None)
    if answer.get("finish_reason") is None:
        answer.pop("finish_reason", None)
    return {"request": request, "response": answer}


def _with_tools(tools: Sequence[ToolLike] | None) -> dict[str, Any]:
    # Only when given: an LLM written before tool calling has no `tools` parameter.
    return {} if tools is None else {"tools": tools}


class RecordingLLM:
    """Delegate to ``inner``; after each successful call, pass its record to ``sink``.

    Failed calls are not recorded. A stream is recorded as one call with the assembled
    text once its final chunk arrives; a stream abandoned early is not recorded.
    """

    def __init__(self, inner: LLM, sink: Sink) -> None:
        self.inner = inner
        self._sink = sink

    def __repr__(self) -> str:
        return f"RecordingLLM({self.inner!r})"

    @property
    def model(self) -> str:
        """The wrapped LLM's model name."""
        return self.inner.model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Call the wrapped LLM and record the call."""
        response = self.inner.complete(
            messages, schema=schema, timeout=timeout, **_with_tools(tools)
        )
        self._sink(call_record(messages, schema, self.model, response, tools))
        return response

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Async version of :meth:`complete`."""
        response = await self.inner.acomplete(
            messages, schema=schema, timeout=timeout, **_with_tools(tools)
        )
        self._sink(call_record(messages, schema, self.model, response, tools))
        return response

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Stream from the wrapped LLM; record the whole answer when it is complete."""
        tape = _Tape(self, messages, tools)
        for chunk in self.inner.stream(messages, timeout=timeout, **_with_tools(tools)):
            tape.add(chunk)
            yield chunk

    async def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Chunk]:
        """Async version of :meth:`stream`."""
        tape = _Tape(self, messages, tools)
        async for chunk in self.inner.astream(messages, timeout=timeout, **_with_tools(tools)):
            tape.add(chunk)
            yield chunk


class _Tape:
    """Collects a stream's chunks; records the call as the final chunk passes through."""

    def __init__(
        self, owner: RecordingLLM, messages: Sequence[Message], tools: Sequence[ToolLike] | None
    ) -> None:
        self._owner = owner
        self._messages = [dict(m) for m in messages]
        self._tools = tools
        self._parts: list[str] = []
        self._usage: Usage | None = None
        self._calls: list[ToolCall] = []
        self._finish_reason: str | None = None
        self._started = time.perf_counter()

    def add(self, chunk: Chunk) -> None:
        self._parts.append(chunk.text)
        self._usage = chunk.usage or self._usage
        self._calls = chunk.tool_calls or self._calls
        self._finish_reason = chunk.finish_reason or self._finish_reason
        if chunk.done:
            # Recorded before the caller sees the last chunk, which it may not ask past.
            response = LLMResponse(
                text="".join(self._parts),
                usage=self._usage,
                latency_s=time.perf_counter() - self._started,
                model=self._owner.model,
                raw={"stream": True},
                tool_calls=self._calls,
                finish_reason=self._finish_reason,
            )
            self._owner._sink(
                call_record(self._messages, None, self._owner.model, response, self._tools)
            )
