"""The characters' LLMs: each character its own model and provider (seed 004's
``LLMFactory``), built from its configuration when first needed and kept for the flow.

A character's LLM is, in order: the one passed for it in ``llms=`` (tests, apps), the one its
configuration names (``llm: ollama:MODEL`` or ``provider`` + ``model``, with its generation
settings), else the runner's LLM (``ctx.llm``, journaled with the thread). API keys come
from the environment variable ``api_key_env`` names, never from the file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import LLMConfigError
from ..llm import LLM
from .config import CharacterSpec, RoundtableConfig

__all__ = ["OPENROUTER_URL", "Cast", "client_for"]

OPENROUTER_URL = "https://openrouter.ai/api/v1"
#: Retries inside one turn's time budget: one, so a dropped connection is tried again.
_RETRIES = 1


class Cast:
    """The LLM of each character of ``config`` (see the module docstring)."""

    def __init__(self, config: RoundtableConfig, llms: Mapping[str, LLM] | None = None) -> None:
        ids = {c.id for c in config.characters}
        unknown = sorted(set(llms or {}) - ids)
        if unknown:
            raise LLMConfigError(
                f"llms= names {', '.join(unknown)}, not characters of `{config.name}` "
                f"({', '.join(sorted(ids))}); key the mapping by internal id."
            )
        self.config = config
        self._given: dict[str, LLM] = dict(llms or {})
        self._built: dict[str, LLM] = {}
        self._lock = threading.Lock()

    def has_own(self, internal_id: str) -> bool:
        """Whether the character has an LLM of its own (else it uses the runner's)."""
        if internal_id in self._given:
            return True
        spec = self.config.character(internal_id)
        return spec.llm is not None or spec.provider is not None

    def llm_for(self, internal_id: str, default: Any = None) -> Any:
        """The character's LLM, or ``default`` (the runner's) when it has none of its own.

        Raises:
            LLMConfigError: its configuration cannot make a client (e.g. the API key's
                variable is not set), or it has no LLM and there is no default.
        """
        given = self._given.get(internal_id)
        if given is not None:
            return given
        spec = self.config.character(internal_id)
        if spec.llm is None and spec.provider is None:
            if default is None:
                raise LLMConfigError(
                    f"Character `{internal_id}` has no LLM: give it `llm:` in the configuration, "
                    "pass llms={...}, or give the runner an llm."
                )
            return default
        with self._lock:
            built = self._built.get(internal_id)
            if built is None:
                built = self._built[internal_id] = client_for(
                    spec, timeout=self.config.conversation.timeout_s
                )
            return built

    def models(self) -> dict[str, str | None]:
        """Internal id -> the model its own LLM names (``None``: the runner's LLM)."""
        found: dict[str, str | None] = {}
        for character in self.config.characters:
            given = self._given.get(character.id)
            if given is not None:
                found[character.id] = given.model
            elif character.llm is not None:
                found[character.id] = character.llm.partition(":")[2].strip()
            else:
                found[character.id] = character.model
        return found

    def close(self) -> None:
        """Close the HTTP clients this cast built (not the ones it was given)."""
        with self._lock:
            built, self._built = self._built, {}
        for client in built.values():
            close = getattr(client, "close", None)
            if callable(close):
                close()


def client_for(spec: CharacterSpec, *, timeout: float = 60.0) -> LLM:
    """The client a character's configuration describes, with its generation settings."""
    kind: str | None = spec.provider
    model = spec.model
    if spec.llm is not None:
        head, _, rest = spec.llm.partition(":")
        kind, model = head.strip().lower(), rest.strip()
        if kind not in ("openai", "ollama"):
            from ..llm import from_spec

            return from_spec(spec.llm)
    if not model:
        raise LLMConfigError(f"Character `{spec.id}` names a provider but no model.")
    generation = spec.generation
    if kind == "ollama":
        from ..llm import OllamaLLM
        from ..llm._spec import ollama_url

        options = {
            key: value
            for key, value in (
                ("top_p", generation.top_p),
                ("repeat_penalty", generation.repeat_penalty),
                ("num_predict", generation.num_predict),
            )
            if value is not None
        }
        host = spec.base_url or ollama_url(os.environ.get("OLLAMA_HOST", "").strip() or "localhost")
        return OllamaLLM(
            model=model,
            base_url=host,
            temperature=generation.temperature,
            options=options,
            timeout=timeout,
            max_retries=_RETRIES,
        )
    from ..llm import OpenAICompatibleLLM

    extra = {
        key: value
        for key, value in (("top_p", generation.top_p), ("max_tokens", generation.num_predict))
        if value is not None
    }
    default_url = OPENROUTER_URL if kind == "openrouter" else "https://api.openai.com/v1"
    default_key = "OPENROUTER_API_KEY" if kind == "openrouter" else "OPENAI_API_KEY"
    url = spec.base_url or (
        os.environ.get("OPENAI_BASE_URL", "").strip() if kind == "openai" else ""
    )
    return OpenAICompatibleLLM(
        model=model,
        base_url=url or default_url,
        api_key=_api_key(spec, default_key),
        temperature=generation.temperature,
        extra_body=extra,
        timeout=timeout,
        max_retries=_RETRIES,
    )


def _api_key(spec: CharacterSpec, default_variable: str) -> str | None:
    variable = spec.api_key_env or default_variable
    value = os.environ.get(variable, "").strip()
    if not value and spec.api_key_env is not None:
        raise LLMConfigError(
            f"Character `{spec.id}` takes its API key from ${spec.api_key_env}, which is not set; "
            "set it in the environment."
        )
    return value or None
