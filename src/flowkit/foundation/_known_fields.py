"""Keys of a mapping that a model would drop silently, and the "did you mean" hint for names.

pydantic ignores keys a model does not declare (``extra="ignore"``, its default), so a typo in
a start state or a gate's answer (``{"topc": ...}``) would run with the default instead of
the value the caller meant. The runner refuses such keys by name, with the nearest field.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["suggest", "unknown_keys", "unknown_keys_message"]

#: Keys shown at most, and characters of each: the caller's keys are input, kept short.
_SHOWN = 5
_KEY_CHARS = 40
#: Fields of the model listed at most (a big state's full list would bury the point).
_FIELDS = 12


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` for the name in ``known`` closest to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _accepted(model: type[BaseModel]) -> set[str]:
    names: set[str] = set()
    for name, info in model.model_fields.items():
        names.add(name)
        for alias in (info.alias, info.validation_alias):
            if isinstance(alias, str):
                names.add(alias)
    return names


def unknown_keys(model: type[BaseModel], data: Any) -> list[str]:
    """The keys of ``data`` (when a mapping) that ``model`` would silently drop, in order.

    Nothing for a model that keeps or refuses extra keys itself (``extra="allow"`` or
    ``"forbid"``) or for data that is not a mapping.
    """
    if not isinstance(data, Mapping) or model.model_config.get("extra") in ("allow", "forbid"):
        return []
    accepted = _accepted(model)
    return [key for key in data if key not in accepted]


def unknown_keys_message(model: type[BaseModel], keys: list[str]) -> str:
    """``unknown field `topc` (did you mean `topic`?)``, for at most five keys."""
    fields = list(model.model_fields)
    listed = ", ".join(fields[:_FIELDS]) + (", …" if len(fields) > _FIELDS else "")
    shown = [f"`{str(key)[:_KEY_CHARS]}`{suggest(str(key), fields)}" for key in keys[:_SHOWN]]
    more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    noun = "field" if len(keys) == 1 else "fields"
    return f"unknown {noun} {', '.join(shown)}{more}; {model.__name__} has: {listed}"
