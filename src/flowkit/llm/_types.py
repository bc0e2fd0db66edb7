"""The values that cross the LLM boundary: chat messages in, a response or stream chunks out.

They are plain pydantic models so a response can be journaled as JSON and read back exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from flowkit.errors import LLMConfigError

__all__ = ["Chunk", "LLMResponse", "Message", "Usage", "check_messages"]

#: One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = dict[str, str]


class Usage(BaseModel):
    """Token counts as the server reported them."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        # A call that needed a repair request costs both requests.
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class LLMResponse(BaseModel):
    """What one ``complete`` call produced.

    ``parsed`` holds the validated model instance when a schema was asked for (dumped to a
    plain dict in JSON mode). ``raw`` is the server's last response body.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    parsed: Any = None
    usage: Usage | None = None
    latency_s: float = 0.0
    model: str
    raw: dict[str, Any] = {}


class Chunk(BaseModel):
    """A piece of a streamed answer; the last chunk of a complete stream has ``done=True``."""

    model_config = ConfigDict(frozen=True)

    text: str
    done: bool = False
    usage: Usage | None = None


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """Return ``messages`` as a list, or raise if they are not chat messages.

    Raises:
        LLMConfigError: empty, or an item is not ``{"role": str, "content": str}``.
    """
    if isinstance(messages, str | bytes) or not messages:
        raise LLMConfigError(
            'Pass a non-empty list of messages like [{"role": "user", "content": "..."}].'
        )
    for index, message in enumerate(messages):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise LLMConfigError(
                f"Message {index} is not a chat message; each must be a dict with string "
                f'"role" and "content", like {{"role": "user", "content": "..."}}.'
            )
    return list(messages)
