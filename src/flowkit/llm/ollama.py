"""A client for Ollama's native ``/api/chat`` API (NDJSON streaming, ``format: "json"``).

Ollama also serves an OpenAI-compatible API at ``/v1``; this client uses the native one,
which reports load errors and token counts more precisely.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from flowkit.foundation._untrusted import parse_json
from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm._retry import Backoff
from flowkit.llm._stream import Delta, ServerStreamError, ToolCallPart, said_text
from flowkit.llm._tools import Tool
from flowkit.llm._types import LLMResponse, Message, ToolCall, Usage

__all__ = ["OllamaLLM"]


class OllamaLLM(HTTPChatLLM):
    """Chat over ``POST {base_url}/api/chat``.

    Requests ask for ``format: "json"`` when a schema is given (or always, with
    ``json_mode``). ``options`` are Ollama's model options (``num_ctx``, ``seed`` ...);
    ``temperature`` is put there too.
    """

    _path = "/api/chat"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "http://localhost:11434",
        temperature: float | None = None,
        json_mode: bool = False,
        options: Mapping[str, Any] | None = None,
        keep_alive: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: Backoff | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            api_key=None,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )
        self.temperature = temperature
        self.json_mode = json_mode
        self.options = dict(options or {})
        self.keep_alive = keep_alive

    def _body(
        self,
        messages: list[Message],
        *,
        stream: bool,
        want_json: bool,
        tools: Sequence[Tool] = (),
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "stream": stream,
        }
        if tools:
            body["tools"] = [t.spec() for t in tools]
        if want_json or self.json_mode:
            body["format"] = "json"
        options = dict(self.options)
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if options:
            body["options"] = options
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        return body

    def _parse(self, data: Any) -> LLMResponse:
        message = data["message"]
        content = message["content"]
        if not isinstance(content, str):
            raise TypeError("message.content is not text")
        calls = [
            ToolCall(id=part.id or f"call_{i}", name=part.name, arguments=part.arguments)
            for i, part in enumerate(_tool_call_parts(message))
        ]
        return LLMResponse(
            text=content,
            usage=_usage(data),
            model=data.get("model") or self.model,
            raw=data,
            tool_calls=calls,
            finish_reason=said_text(data.get("done_reason")),
        )

    def _parse_line(self, line: str) -> Delta | None:
        # NDJSON: one object per line; the last has "done": true and the token counts.
        data = parse_json(line, what="LLM stream line", max_bytes=None)
        if "error" in data:
            raise ServerStreamError(str(data["error"]))
        message = data.get("message") or {}
        text = message.get("content") or ""
        calls = _tool_call_parts(message)
        if data.get("done"):
            reason = said_text(data.get("done_reason"))
            return Delta(
                text=text, usage=_usage(data), done=True, tool_calls=calls, finish_reason=reason
            )
        return Delta(text=text, tool_calls=calls)

    def _status_hint(self, status: int) -> str:
        if status == 404:
            return (
                f"Check base_url (Ollama listens on http://HOST:11434) and that the model is "
                f"pulled: `ollama pull {self.model}`."
            )
        return super()._status_hint(status)


def _wire_message(message: Message) -> dict[str, Any]:
    """A flowkit message in Ollama's shape: arguments as objects, results by tool name."""
    if message["role"] == "tool":
        wire = {k: v for k, v in message.items() if k not in ("tool_call_id", "name")}
        if "name" in message:
            wire["tool_name"] = message["name"]
        return wire
    calls = message.get("tool_calls")
    if not calls:
        return message
    wire = dict(message)
    wire["tool_calls"] = [
        {"function": {"name": call["name"], "arguments": _arguments_object(call["arguments"])}}
        for call in calls
    ]
    return wire


def _arguments_object(arguments: str) -> Any:
    # Ollama wants an object; arguments a model wrote malformed (or nested past the parser's
    # limit, which json.loads would meet with RecursionError) are sent back as text.
    try:
        return parse_json(arguments, what="tool arguments", max_bytes=None)
    except ValueError:
        return arguments


def _tool_call_parts(message: dict[str, Any]) -> tuple[ToolCallPart, ...]:
    """Ollama's tool calls, each whole: ``{"function": {"name", "arguments": {...}}}``."""
    parts = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function.get("arguments", {})
        if not isinstance(function["name"], str):
            raise TypeError("tool call name is not text")
        parts.append(
            ToolCallPart(
                id=call.get("id") or "",
                name=function["name"],
                arguments=arguments
                if isinstance(arguments, str)
                else json.dumps(arguments, ensure_ascii=False),
            )
        )
    return tuple(parts)


def _usage(data: dict[str, Any]) -> Usage | None:
    if "prompt_eval_count" not in data and "eval_count" not in data:
        return None
    prompt = data.get("prompt_eval_count") or 0
    completion = data.get("eval_count") or 0
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )
