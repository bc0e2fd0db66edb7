"""A client for Ollama's native ``/api/embed`` API (many texts per request)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._http_embed import HTTPEmbeddings
from flowkit.llm._retry import Backoff

__all__ = ["OllamaEmbeddings"]


class OllamaEmbeddings(HTTPEmbeddings):
    """Embeddings over ``POST {base_url}/api/embed``.

    ``options`` are Ollama's model options (``num_ctx`` ...); ``truncate=False`` makes a text
    longer than the model's context an error instead of being cut.
    """

    _path = "/api/embed"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "http://localhost:11434",
        dimensions: int | None = None,
        options: Mapping[str, Any] | None = None,
        truncate: bool | None = None,
        keep_alive: str | None = None,
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
            api_key=None,
            dimensions=dimensions,
            batch_size=batch_size,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )
        self.options = dict(options or {})
        self.truncate = truncate
        self.keep_alive = keep_alive

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.options:
            body["options"] = self.options
        if self.truncate is not None:
            body["truncate"] = self.truncate
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        return body

    def _vectors(self, data: Any) -> Any:
        return data["embeddings"]

    def _status_hint(self, status: int) -> str:
        if status == 404:
            return (
                "Check base_url (Ollama listens on http://HOST:11434) and that the embedding "
                f"model is pulled: `ollama pull {self.model}`."
            )
        return super()._status_hint(status)
