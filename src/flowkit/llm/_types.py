"""The values that cross the LLM boundary: chat messages in, a response or stream chunks out.

They are plain pydantic models so a response can be journaled as JSON and read back exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from flowkit.errors import LLMConfigError

__all__ = ["Chunk", "LLMResponse", "Message", "ToolCall", "Usage", "check_messages"]

#: One chat message: ``{"role": "system" | "user" | "assistant" | "tool", "content": "..."}``.
#: An assistant message that asked for tools also has ``"tool_calls": [{"id", "name",
#: "arguments"}]``; a tool result has ``"tool_call_id"`` and ``"name"`` (see docs/tools.md).
Message = dict[str, Any]


class ToolCall(BaseModel):
    """One tool the model asked to run.

    ``arguments`` is the JSON text the model wrote, kept as sent: a model may write
    malformed JSON, and the tool loop tells it so instead of failing. ``id`` pairs the call
    with its result message (servers that give none, like Ollama, get ``call_<n>``).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"

    def as_message_part(self) -> dict[str, str]:
        """The call as it goes in an assistant message's ``tool_calls``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


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
    plain dict in JSON mode). ``tool_calls`` are the tools the model asked to run when it
    was offered ``tools=`` (``text`` is then often empty). ``raw`` is the server's last
    response body. ``finish_reason`` is why the model stopped, as the server said it
    (OpenAI's ``finish_reason``, Ollama's ``done_reason``): ``"stop"``, ``"length"`` (cut at
    the token limit: the text is incomplete), ``"tool_calls"``, ``"content_filter"`` ...;
    ``None`` where the server did not say.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    parsed: Any = None
    usage: Usage | None = None
    latency_s: float = 0.0
    model: str
    raw: dict[str, Any] = {}
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None

    def assistant_message(self) -> Message:
        """This answer as the assistant message to append to the conversation."""
        message: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        return message


class Chunk(BaseModel):
    """A piece of a streamed answer; the last chunk of a complete stream has ``done=True``.

    Tool calls arrive in pieces too; they are assembled and given whole on the last chunk,
    with ``finish_reason`` (as ``LLMResponse.finish_reason``).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    done: bool = False
    usage: Usage | None = None
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """Return ``messages`` as a list, or raise if they are not chat messages.

    Raises:
        LLMConfigError: empty, or an item is not ``{"role": str, "content": str}``, or its
            ``tool_calls`` / ``tool_call_id`` / ``name`` are not of the documented shape.
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
        problem = (
            _tool_fields_problem(message) or _unicode_problem(message) or _json_problem(message)
        )
        if problem:
            raise LLMConfigError(f"Message {index} ({message['role']}): {problem}.")
    return list(messages)


#: The keys whose shape ``check_messages`` checks itself; any other goes to the server as is.
_CHECKED_KEYS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


def _json_problem(message: Message) -> str | None:
    """A value the request body (JSON) cannot carry: the HTTP clients failed on it with the
    JSON encoder's own ``TypeError``, while ``ScriptedLLM`` took it (tests passed, production
    failed)."""
    for key, value in message.items():
        if key in _CHECKED_KEYS:
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            return (
                f'its "{key}" holds a {type(value).__name__}, which a request cannot carry '
                "(JSON); give it as text, a number, a list or a dict"
            )
    return None


def _unicode_problem(message: Message) -> str | None:
    """Text with a lone surrogate (e.g. bytes decoded with ``surrogateescape``) cannot be
    sent: the request body is UTF-8, which has no encoding for it."""
    texts = [message["role"], message["content"], message.get("name"), message.get("tool_call_id")]
    for call in message.get("tool_calls") or ():
        texts += [call["id"], call["name"], call["arguments"]]
    for text in texts:
        if isinstance(text, str) and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return "its text is not valid Unicode (a lone surrogate); decode bytes as UTF-8"
    return None


def _tool_fields_problem(message: Message) -> str | None:
    for key in ("tool_call_id", "name"):
        if key in message and not isinstance(message[key], str):
            return f'"{key}" must be a string'
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list) or not all(
        isinstance(call, dict)
        and all(isinstance(call.get(key), str) for key in ("id", "name", "arguments"))
        for call in calls
    ):
        return (
            '"tool_calls" must be a list of {"id": str, "name": str, "arguments": str} '
            "(LLMResponse.assistant_message() writes it)"
        )
    return None
