"""``from_spec``: build an LLM from a short string such as ``ollama:llama3.1``.

The CLI's ``--llm`` and the ``FLOWKIT_LLM`` variable use these strings; backends are
imported only when chosen, so naming a replay or scripted LLM never loads httpx.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from flowkit.errors import LLMConfigError
from flowkit.llm._protocol import LLM

__all__ = ["from_spec"]

_FORMS = (
    "openai:MODEL (OpenAI or any OpenAI-compatible server; OPENAI_BASE_URL, OPENAI_API_KEY), "
    "ollama:MODEL (OLLAMA_HOST), replay:PATH (a cassette) or scripted:PATH (a rules file)"
)
_OLLAMA_PORT = 11434


def from_spec(
    spec: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> LLM:
    """Build the LLM a spec names; ``spec=None`` reads ``FLOWKIT_LLM``.

    Arguments win over the environment. ``base_url`` is the API root, e.g.
    ``http://host:8000/v1`` for OpenAI-compatible servers or ``http://host:11434`` for
    Ollama; ``timeout`` and ``max_retries`` apply to the HTTP backends only.

    Raises:
        LLMConfigError: no spec, or one that is not in a valid form.
    """
    if spec is None:
        spec = os.environ.get("FLOWKIT_LLM", "")
        if not spec.strip():
            raise LLMConfigError(
                f"No LLM is configured: pass a spec or set FLOWKIT_LLM to {_FORMS}."
            )
    kind, colon, rest = spec.strip().partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if not colon or not rest:
        raise LLMConfigError(f"LLM spec {spec!r} is not valid; use {_FORMS}.")
    options: dict[str, Any] = {}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    if kind == "openai":
        from flowkit.llm.openai import OpenAICompatibleLLM

        url = base_url or _env("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key or _env("OPENAI_API_KEY")
        return OpenAICompatibleLLM(model=rest, base_url=url, api_key=key, **options)
    if kind == "ollama":
        from flowkit.llm.ollama import OllamaLLM

        host = base_url or ollama_url(_env("OLLAMA_HOST") or "localhost")
        return OllamaLLM(model=rest, base_url=host, **options)
    if kind == "replay":
        from flowkit.llm.replay import ReplayLLM

        return ReplayLLM.from_file(rest)
    if kind == "scripted":
        from flowkit.llm.scripted import ScriptedLLM

        return ScriptedLLM.from_file(rest)
    raise LLMConfigError(f"LLM spec {spec!r} names an unknown backend {kind!r}; use {_FORMS}.")


def ollama_url(host: str) -> str:
    """Turn an ``OLLAMA_HOST`` value (``host``, ``host:port`` or a URL) into a base URL."""
    host = host.strip().rstrip("/")
    if "://" in host:
        return host
    url = f"http://{host}"
    try:
        port = urlsplit(url).port
    except ValueError as exc:
        raise LLMConfigError(f"OLLAMA_HOST {host!r} is not host[:port] or a URL.") from exc
    return url if port is not None else f"{url}:{_OLLAMA_PORT}"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None
