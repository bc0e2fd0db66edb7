"""A client for Ollama's native ``/api/chat`` API (NDJSON streaming, ``format: "json"``).

Ollama also serves an OpenAI-compatible API at ``/v1``; this client uses the native one,
which reports load errors and token counts more precisely.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from flowkit._untrusted import parse_json
from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm._retry import Backoff
from flowkit.llm._stream import Delta, ServerStreamError
from flowkit.llm._types import LLMResponse, Message, Usage

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

    def _body(self, messages: list[Message], *, stream: bool, want_json: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": stream}
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
        content = data["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("message.content is not text")
        return LLMResponse(
            text=content, usage=_usage(data), model=data.get("model") or self.model, raw=data
        )

    def _parse_line(self, line: str) -> Delta | None:
        # NDJSON: one object per line; the last has "done": true and the token counts.
        data = parse_json(line, what="LLM stream line", max_bytes=None)
        if "error" in data:
            raise ServerStreamError(str(data["error"]))
        text = (data.get("message") or {}).get("content") or ""
        if data.get("done"):
            return Delta(text=text, usage=_usage(data), done=True)
        return Delta(text=text)

    def _status_hint(self, status: int) -> str:
        if status == 404:
            return (
                f"Check base_url (Ollama listens on http://HOST:11434) and that the model is "
                f"pulled: `ollama pull {self.model}`."
            )
        return super()._status_hint(status)


def _usage(data: dict[str, Any]) -> Usage | None:
    if "prompt_eval_count" not in data and "eval_count" not in data:
        return None
    prompt = data.get("prompt_eval_count") or 0
    completion = data.get("eval_count") or 0
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )
