"""A client for OpenAI's ``/chat/completions`` API and every server that copies it.

That covers OpenAI, vLLM, LM Studio, llama.cpp's server, DeepSeek and most hosted gateways:
set ``base_url`` to the server's ``.../v1``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from flowkit.errors import LLMConfigError
from flowkit.foundation._untrusted import parse_json
from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm._retry import Backoff
from flowkit.llm._stream import Delta, ServerStreamError, ToolCallPart, said_text
from flowkit.llm._tools import Tool
from flowkit.llm._types import LLMResponse, Message, ToolCall, Usage

__all__ = ["OpenAICompatibleLLM"]


class OpenAICompatibleLLM(HTTPChatLLM):
    """Chat completions over ``POST {base_url}/chat/completions``.

    ``json_mode`` sends ``response_format={"type": "json_object"}`` (OpenAI then requires
    the word "JSON" in the prompt). ``extra_body`` is merged into every request body for
    server-specific options such as ``max_tokens``, ``seed`` or vLLM's ``guided_json``.
    The API key is sent only in the ``Authorization`` header.
    """

    _path = "/chat/completions"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
        extra_body: Mapping[str, Any] | None = None,
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
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )
        self.temperature = temperature
        self.json_mode = json_mode
        self.extra_body = dict(extra_body or {})

    def _body(
        self,
        messages: list[Message],
        *,
        stream: bool,
        want_json: bool,
        tools: Sequence[Tool] = (),
    ) -> dict[str, Any]:
        # A schema alone does not switch JSON mode on: many compatible servers reject
        # response_format, and OpenAI rejects it when the prompt does not say "JSON".
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "stream": stream,
        }
        if tools:
            body["tools"] = [t.spec() for t in tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return {**body, **self.extra_body}

    def _parse(self, data: Any) -> LLMResponse:
        message = data["choices"][0]["message"]
        content = message.get("content")
        calls = [_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])]
        if not isinstance(content, str) and not calls:
            refusal = message.get("refusal")
            raise ValueError(f"no text content (refusal: {refusal!r})" if refusal else "no content")
        return LLMResponse(
            text=content if isinstance(content, str) else "",
            usage=_usage(data.get("usage")),
            model=data.get("model") or self.model,
            raw=data,
            tool_calls=calls,
            finish_reason=said_text(data["choices"][0].get("finish_reason")),
        )

    def _parse_line(self, line: str) -> Delta | None:
        # Server-sent events: only `data:` lines matter; comments and ids are keep-alives.
        if not line.startswith("data:"):
            return None
        payload = line[5:].strip()
        if payload == "[DONE]":
            return Delta(done=True)
        data = parse_json(payload, what="LLM stream line", max_bytes=None)
        if "error" in data:
            error = data["error"]
            raise ServerStreamError(
                error.get("message", error) if isinstance(error, dict) else error
            )
        choices = data.get("choices") or [{}]
        choice = choices[0]
        delta = choice.get("delta") or {}
        text = delta.get("content") or ""
        return Delta(
            text=text,
            usage=_usage(data.get("usage")),
            finished=choice.get("finish_reason") is not None,
            tool_calls=tuple(_tool_call_part(p) for p in delta.get("tool_calls") or ()),
            finish_reason=said_text(choice.get("finish_reason")),
        )

    def _status_hint(self, status: int) -> str:
        if status in (401, 403):
            return "Check the API key (api_key= or OPENAI_API_KEY)."
        if status == 404:
            return (
                f"Check that base_url ends with the API root (usually `/v1`) and that the server "
                f"serves the model `{self.model}`."
            )
        return super()._status_hint(status)


def _wire_message(message: Message) -> dict[str, Any]:
    """A flowkit message in OpenAI's shape (tool calls nest under ``function``)."""
    calls = message.get("tool_calls")
    if message["role"] == "tool":
        if "tool_call_id" not in message:
            raise LLMConfigError(
                'A "tool" message needs the "tool_call_id" of the call it answers; build it '
                "with flowkit.llm.tool_message(call, content)."
            )
        return {k: v for k, v in message.items() if k != "name"}
    if not calls:
        return message
    wire = {k: v for k, v in message.items() if k != "tool_calls"}
    wire["content"] = message["content"] or None
    wire["tool_calls"] = [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]},
        }
        for call in calls
    ]
    return wire


def _tool_call(index: int, data: dict[str, Any]) -> ToolCall:
    function = data["function"]
    arguments = function.get("arguments")
    return ToolCall(
        id=data.get("id") or f"call_{index}",
        name=function["name"],
        arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
    )


def _tool_call_part(data: dict[str, Any]) -> ToolCallPart:
    function = data.get("function") or {}
    return ToolCallPart(
        index=int(data.get("index", 0)),
        id=data.get("id") or "",
        name=function.get("name") or "",
        arguments=function.get("arguments") or "",
    )


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return Usage(
        prompt_tokens=data.get("prompt_tokens") or 0,
        completion_tokens=data.get("completion_tokens") or 0,
        total_tokens=data.get("total_tokens") or 0,
    )
