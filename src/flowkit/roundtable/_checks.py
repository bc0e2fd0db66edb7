"""Every problem of a roundtable configuration at once: its shape (the pydantic models) and
its meaning (clashing names, personas, LLM settings, placeholders), each with its place in the
file and, from a file, its line. What fits the models is still cross-checked when something
else does not, so one typo does not hide the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ._files import Lines, line_of
from ._models import CharacterSpec, RoundtableConfig
from .prompt import PLACEHOLDERS, placeholders_in
from .speaker import USER_NAMES, normalize_name

__all__ = ["config_problems", "meaning_problems"]

_SPEC_KINDS = ("openai", "ollama", "replay", "scripted")


def config_problems(
    data: Any, lines: Lines | None = None
) -> tuple[RoundtableConfig | None, list[str]]:
    """The configuration ``data`` makes (``None`` if its shape is wrong) and every problem."""
    lines = lines or {}
    if not isinstance(data, Mapping):
        kind = "nothing" if data is None else f"a {type(data).__name__}"
        return None, [f"line 1: (top): expected a mapping of configuration keys, got {kind}"]
    try:
        config = RoundtableConfig.model_validate(data)
    except ValidationError as exc:
        found = [_located(_shape_problem(error), lines) for error in _errors(exc)]
        partial, indexes = _partial(data, exc)
        if partial is not None:
            found += [_located(p, lines) for p in meaning_problems(partial, indexes)]
        return None, found
    return config, [_located(p, lines) for p in meaning_problems(config)]


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [dict(e) for e in exc.errors(include_url=False, include_input=False)]


def _partial(
    data: Mapping[str, Any], exc: ValidationError
) -> tuple[RoundtableConfig | None, list[int]]:
    """What of ``data`` fits the models, so the cross-checks still run on it, and the index in
    ``data`` of each character kept."""
    broken_top: set[str] = set()
    broken_characters: set[int] = set()
    for error in _errors(exc):
        loc = error["loc"]
        if not loc:
            return None, []
        if loc[0] == "characters" and len(loc) > 1 and isinstance(loc[1], int):
            broken_characters.add(loc[1])
        else:
            broken_top.add(str(loc[0]))
    kept = {k: v for k, v in data.items() if str(k) not in broken_top}
    characters = kept.get("characters")
    if not isinstance(characters, list):
        return None, []
    indexes = [i for i in range(len(characters)) if i not in broken_characters]
    kept["characters"] = [characters[i] for i in indexes]
    if not indexes:
        return None, []
    kept.setdefault("name", "unnamed")
    try:
        return RoundtableConfig.model_validate(kept), indexes
    except ValidationError:
        return None, []


def _shape_problem(error: Mapping[str, Any]) -> str:
    loc = tuple(str(part) for part in error["loc"])
    where = ".".join(loc) or "(top)"
    kind, msg = error["type"], str(error["msg"])
    if kind == "missing":
        return f"{where}: `{loc[-1] if loc else 'this'}` is required but missing; add it"
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        if key in ("api_key", "apikey", "key", "token"):
            return (
                f"{where}: never write an API key into the configuration; put it in an "
                "environment variable and name that variable with `api_key_env`"
            )
        return f"{where}: unknown key `{key}`; remove it or fix its spelling"
    text = msg[0].lower() + msg[1:] if msg else kind
    return f"{where}: {text}; fix the value"


def _located(problem: str, lines: Lines) -> str:
    where = problem.partition(": ")[0]
    line = line_of(lines, tuple(where.split(".")))
    return f"line {line}: {problem}" if line is not None else problem


def meaning_problems(config: RoundtableConfig, indexes: list[int] | None = None) -> list[str]:
    """What the models cannot see: clashing names, personas, LLM settings, placeholders."""
    found: list[str] = []
    owners: dict[str, tuple[str, str]] = {}
    ids = [c.id for c in config.characters]
    for index, character in enumerate(config.characters):
        where = f"characters.{indexes[index] if indexes else index}"
        names = [
            ("id", character.id),
            ("display_name", character.display_name),
            ("short_name", character.short_name),
            *(("synonyms", s) for s in character.synonyms),
        ]
        for label, name in names:
            key = normalize_name(name)
            if not key:
                if name:
                    found.append(
                        f"{where}.{label}: `{name}` has no letters left once "
                        "normalised; give a name with letters"
                    )
                continue
            if key in USER_NAMES:
                found.append(f"{where}.{label}: `{name}` means the person (USER); rename it")
                continue
            owner = owners.get(key)
            if owner is not None and owner[0] != character.id:
                found.append(
                    f"{where}.{label}: `{name}` is also a name of `{owner[0]}` ({owner[1]}); "
                    "a nomination must name one character, so make the names distinct"
                )
            owners.setdefault(key, (character.id, label))
        found += _llm_problems(where, character)
        own = character.persona is not None
        listed = character.id in config.personas
        if own and listed:
            found.append(
                f"{where}.persona: `{character.id}` has a persona here and under `personas`; "
                "keep one"
            )
        if not own and not listed:
            found.append(
                f"{where}: `{character.id}` has no persona; add `persona:` or "
                f"`personas.{character.id}.system_prompt`"
            )
    for name in config.personas:
        if name not in ids:
            found.append(
                f"personas.{name}: no character has the id `{name}` (characters: "
                f"{', '.join(ids)}); fix the id or remove the persona"
            )
    first = config.conversation.first_speaker
    if first is not None and first not in ids:
        found.append(
            f"conversation.first_speaker: `{first}` is not a character id ({', '.join(ids)})"
        )
    conversation = config.conversation
    if conversation.auto_loops > conversation.max_turns:
        found.append(
            f"conversation.auto_loops: {conversation.auto_loops} turns per message is more "
            f"than max_turns ({conversation.max_turns}); raise max_turns or lower auto_loops"
        )
    for part in ("response_constraints", "flow_rules", "prompt_template"):
        unknown = [p for p in placeholders_in(config.rule(part)) if p not in PLACEHOLDERS]
        if unknown:
            found.append(
                f"rules.{part}: unknown placeholder{'s' if len(unknown) > 1 else ''} "
                f"{', '.join('{' + u + '}' for u in unknown)}; use "
                f"{', '.join('{' + k + '}' for k in PLACEHOLDERS)}"
            )
    return found


def _llm_problems(where: str, character: CharacterSpec) -> list[str]:
    found: list[str] = []
    if character.llm is not None:
        if character.provider is not None or character.model is not None:
            found.append(
                f"{where}.llm: give either `llm` (a spec) or `provider` and `model`, not both"
            )
        kind, colon, rest = character.llm.partition(":")
        if not colon or not rest.strip() or kind.strip().lower() not in _SPEC_KINDS:
            found.append(
                f"{where}.llm: `{character.llm}` is not an LLM spec; write openai:MODEL, "
                "ollama:MODEL, replay:PATH or scripted:PATH"
            )
    elif character.provider is not None and character.model is None:
        found.append(f"{where}.model: provider `{character.provider}` needs a `model`")
    elif character.model is not None and character.provider is None:
        found.append(f"{where}.provider: model `{character.model}` needs a `provider`")
    provider = character.provider or (character.llm and character.llm.partition(":")[0].lower())
    if character.api_key_env is not None and provider == "ollama":
        found.append(f"{where}.api_key_env: Ollama takes no API key; remove it")
    return found
