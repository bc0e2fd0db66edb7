"""``embeddings_from_spec``: build an embeddings client from a short string such as
``openai:text-embedding-3-small``, as ``from_spec`` does for chat models.

An embedding server is often not the chat server (a small local model beside a hosted chat
model), so ``FLOWKIT_EMBED_BASE_URL`` (with its own ``FLOWKIT_EMBED_API_KEY``) wins over the
chat variables; the OpenAI key is sent only where ``OPENAI_BASE_URL`` points.
"""

from __future__ import annotations

import os
from typing import Any

from flowkit.errors import LLMConfigError
from flowkit.llm._embeddings import Embeddings
from flowkit.llm._spec import ollama_url

__all__ = ["EMBED_BASE_URL_ENV", "embeddings_from_spec"]

#: The API root of the embedding server, when it is not the chat server.
EMBED_BASE_URL_ENV = "FLOWKIT_EMBED_BASE_URL"
#: The key sent to ``FLOWKIT_EMBED_BASE_URL`` (none by default).
EMBED_API_KEY_ENV = "FLOWKIT_EMBED_API_KEY"

_FORMS = (
    "openai:MODEL (any OpenAI-compatible /v1/embeddings; FLOWKIT_EMBED_BASE_URL, else "
    "OPENAI_BASE_URL), ollama:MODEL (FLOWKIT_EMBED_BASE_URL, else OLLAMA_HOST) or "
    "replay:PATH (a cassette)"
)


def embeddings_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> Embeddings:
    """Build the embeddings client a spec names; arguments win over the environment.

    Raises:
        LLMConfigError: a spec not in a valid form.
    """
    if not isinstance(spec, str):
        raise LLMConfigError(f"An embeddings spec is a string: {_FORMS}.")
    kind, colon, rest = spec.strip().partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if not colon or not rest:
        raise LLMConfigError(f"Embeddings spec {spec!r} is not valid; use {_FORMS}.")
    options: dict[str, Any] = {}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    own_url = _env(EMBED_BASE_URL_ENV)
    if kind == "openai":
        from flowkit.llm.openai_embed import OpenAIEmbeddings

        if base_url is None and own_url is not None:
            base_url, key = own_url, _env(EMBED_API_KEY_ENV)
        else:
            key = _env("OPENAI_API_KEY")
        url = base_url or _env("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAIEmbeddings(model=rest, base_url=url, api_key=api_key or key, **options)
    if kind == "ollama":
        from flowkit.llm.ollama_embed import OllamaEmbeddings

        host = base_url or own_url or ollama_url(_env("OLLAMA_HOST") or "localhost")
        return OllamaEmbeddings(model=rest, base_url=host, **options)
    if kind == "replay":
        from flowkit.llm.embedding_replay import ReplayEmbeddings

        return ReplayEmbeddings.from_file(rest)
    raise LLMConfigError(
        f"Embeddings spec {spec!r} names an unknown backend {kind!r}; use {_FORMS}."
    )


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None
