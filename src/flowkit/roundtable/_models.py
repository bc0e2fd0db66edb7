"""The roundtable configuration's models: the characters (each with its own LLM), their
personas, the rules and prompt template, the conversation limits, the next-speaker policy,
post-processing, memory and logs.

Only the shape and what the nodes read of it; ``config`` loads and checks a configuration
(``_checks`` cross-checks what the models cannot see) and re-exports every model here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._defaults import EMPTY_TEXTS, RULES
from .speaker import Member, NextPolicy
from .text import PostprocessSettings

__all__ = [
    "CharacterSpec",
    "ConversationSpec",
    "Generation",
    "LogsSpec",
    "MemorySpec",
    "PersonaSpec",
    "PostprocessSpec",
    "Provider",
    "RoundtableConfig",
    "RulesSpec",
]

#: Providers a character may name; ``openrouter`` is OpenAI-compatible at its own URL.
Provider = Literal["openai", "ollama", "openrouter"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Generation(_Spec):
    """Sampling settings sent with each request (each only when given)."""

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    repeat_penalty: float | None = Field(None, gt=0, description="Ollama only")
    num_predict: int | None = Field(
        None, ge=1, description="most tokens in a reply (OpenAI: max_tokens)"
    )


class CharacterSpec(_Spec):
    """A character: its ids and names, its LLM (each may use another model or provider), its
    generation settings and its persona."""

    id: str = Field(
        pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
        description="internal id the [Next: ID] tags use (LUMINA); upper-case by convention",
    )
    display_name: str = Field(min_length=1, description="the name shown and logged (ルミナ)")
    short_name: str = Field("", description="a short name nominations may use (る)")
    synonyms: list[str] = Field([], description="more names nominations may use")
    llm: str | None = Field(
        None,
        description="an LLM spec: openai:MODEL, ollama:MODEL, replay:PATH or scripted:PATH "
        "(or give provider and model)",
    )
    provider: Provider | None = None
    model: str | None = Field(None, min_length=1)
    base_url: str | None = Field(None, description="the API root, e.g. http://host:11434")
    api_key_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the API key (never the key itself)",
    )
    generation: Generation = Generation()
    persona: str | None = Field(None, description="the system prompt (or use `personas:`)")


class PersonaSpec(_Spec):
    """The origin's ``personas.yaml`` entry: a display name and a system prompt."""

    name: str = ""
    system_prompt: str = Field(min_length=1)


class RulesSpec(_Spec):
    """The global rules (the origin's ``global_rules.yaml``); each part may use placeholders."""

    response_constraints: str | None = None
    flow_rules: str | None = None
    prompt_template: str | None = None


class ConversationSpec(_Spec):
    """How long the characters talk after each message of the person."""

    auto_loops: int = Field(
        0,
        ge=0,
        description="characters' turns per person message; 0 = off: each character speaks "
        "once per message",
    )
    max_turns: int = Field(8, ge=1, le=100, description="most characters' turns in one round")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="seconds one LLM call may take")
    first_speaker: str | None = Field(
        None, description="internal id of who answers the person first (default: the first)"
    )


class PostprocessSpec(_Spec):
    """Limits of a displayed reply."""

    max_sentences: int = Field(2, ge=1)
    max_chars: int = Field(160, ge=10)
    empty_text: str | None = Field(None, description="default: （応答なし） / (no response)")


class MemorySpec(_Spec):
    """Round summaries kept across sessions."""

    enabled: bool = True
    recent: int = Field(3, ge=0, le=20, description="summaries of earlier sessions in a prompt")
    domain: str = Field("generic", description="the records' domain field")


class LogsSpec(_Spec):
    """Where the conversation and operation logs go (relative to the file; none: no files)."""

    conversation_dir: str | None = None
    operation_dir: str | None = None


class RoundtableConfig(_Spec):
    """A whole roundtable. Build its flow with ``flowkit.roundtable.build_flow``."""

    version: Literal[1] = 1
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    language: str = Field("ja", description="ja or en: the default rules and empty text")
    characters: list[CharacterSpec] = Field(min_length=1)
    personas: dict[str, PersonaSpec] = Field({}, description="INTERNAL_ID -> persona")
    rules: RulesSpec = RulesSpec()
    conversation: ConversationSpec = ConversationSpec()
    next: NextPolicy = NextPolicy()
    postprocess: PostprocessSpec = PostprocessSpec()
    memory: MemorySpec = MemorySpec()
    logs: LogsSpec = LogsSpec()

    # -- what the nodes use --------------------------------------------------------------------

    @property
    def registry(self) -> list[Member]:
        """The characters as the next-speaker resolution sees them, in registry order."""
        return [
            Member(
                internal_id=c.id,
                display_name=c.display_name,
                short_name=c.short_name,
                synonyms=tuple(c.synonyms),
            )
            for c in self.characters
        ]

    def character(self, internal_id: str) -> CharacterSpec:
        return next(c for c in self.characters if c.id == internal_id)

    def persona(self, internal_id: str) -> str:
        own = self.character(internal_id).persona
        if own is not None:
            return own
        spec = self.personas.get(internal_id)
        return spec.system_prompt if spec is not None else ""

    def rule(self, name: Literal["response_constraints", "flow_rules", "prompt_template"]) -> str:
        given: str | None = getattr(self.rules, name)
        if given is not None:
            return given
        return RULES.get(self.language, RULES["en"])[name]

    @property
    def postprocess_settings(self) -> PostprocessSettings:
        empty = self.postprocess.empty_text
        if empty is None:
            empty = EMPTY_TEXTS.get(self.language, EMPTY_TEXTS["en"])
        return PostprocessSettings(
            self.postprocess.max_sentences, self.postprocess.max_chars, empty
        )

    @property
    def first_speaker(self) -> str:
        return self.conversation.first_speaker or self.characters[0].id
