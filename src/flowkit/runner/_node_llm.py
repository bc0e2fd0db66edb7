"""The LLM a node sees: the runner's LLM, with every call journaled and tokens announced.

Each node attempt gets its own wrapper whose calls land in that step's journal record, so
resume and fork never call the model for a step that already ran, and a thread's recorded
calls can drive a ``ReplayLLM``. Streamed chunks also go out as ``TokenStreamed`` events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..records._events import Event, TokenStreamed

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..llm import LLM, Chunk, LLMResponse, Message
    from ..llm._tools import ToolLike

__all__ = ["NodeLLM"]


class NodeLLM:
    """Wraps the runner's LLM for one node attempt (see the module docstring)."""

    def __init__(
        self,
        inner: LLM,
        calls: list[dict[str, Any]],
        *,
        announce: Callable[[Event], None] | None,
        thread_id: str,
        run_id: str,
        node: str,
    ) -> None:
        from ..llm.recording import RecordingLLM

        self._recording = RecordingLLM(inner, calls.append)
        self._calls = calls
        self._announce = announce
        self._ids = (thread_id, run_id, node)

    @property
    def model(self) -> str:
        return self._recording.model

    def __repr__(self) -> str:
        return f"NodeLLM({self._recording.inner!r})"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        return self._recording.complete(messages, schema=schema, tools=tools, timeout=timeout)

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        return await self._recording.acomplete(
            messages, schema=schema, tools=tools, timeout=timeout
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        call = len(self._calls)  # the index this call gets in the step's journal
        for chunk in self._recording.stream(messages, tools=tools, timeout=timeout):
            self._token(chunk, call)
            yield chunk

    async def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Chunk]:
        call = len(self._calls)
        async for chunk in self._recording.astream(messages, tools=tools, timeout=timeout):
            self._token(chunk, call)
            yield chunk

    def _token(self, chunk: Chunk, call: int) -> None:
        if self._announce is not None:
            thread_id, run_id, node = self._ids
            self._announce(TokenStreamed(thread_id, run_id, node, chunk.text, chunk.done, call))
