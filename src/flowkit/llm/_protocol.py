"""The ``LLM`` protocol: the few methods every backend (HTTP, scripted, replay) provides.

Nodes and the runner depend on this protocol only, so any object with these methods can be
plugged in, including ones written outside flowkit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel

from flowkit.llm._types import Chunk, LLMResponse, Message

if TYPE_CHECKING:
    from flowkit.llm._tools import ToolLike

__all__ = ["LLM", "InProcessLLM"]


@runtime_checkable
class LLM(Protocol):
    """A chat model: messages in, a response (or a stream of chunks) out.

    ``timeout`` is in seconds and overrides the backend's default for one call. With
    ``schema``, the answer is parsed into that pydantic model and returned as ``.parsed``;
    an answer that does not fit raises :class:`flowkit.errors.LLMSchemaError`. With
    ``tools``, the model may answer with ``.tool_calls`` instead (see docs/tools.md). Every
    failure is a :class:`flowkit.errors.LLMError`.

    ``tools`` is optional for an implementation: flowkit's wrappers pass it only when the
    caller gives it, so an LLM written before tool calling keeps working without them.
    """

    @property
    def model(self) -> str:
        """The model name requests are sent with."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer the conversation."""
        ...

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer the conversation without blocking the event loop."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Yield the answer as it is generated; raise if the stream ends early."""
        ...

    def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Chunk]:
        """Async version of :meth:`stream`."""
        ...


class InProcessLLM(ABC):
    """Base for LLMs that answer without I/O (scripted, replayed): async runs the sync code."""

    def __init__(self, *, model: str) -> None:
        self._model = model

    @property
    def model(self) -> str:
        """The model name reported in responses."""
        return self._model

    @abstractmethod
    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer the conversation."""

    @abstractmethod
    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Yield the answer in chunks, the last with ``done=True``."""

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Same as :meth:`complete`; nothing here blocks on I/O."""
        return self.complete(messages, schema=schema, tools=tools, timeout=timeout)

    async def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Chunk]:
        """Same as :meth:`stream`."""
        for chunk in self.stream(messages, tools=tools, timeout=timeout):
            yield chunk
