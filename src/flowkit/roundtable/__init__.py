"""The roundtable (seed 004) on the flowkit engine: several LLM characters and a person at one
table; each turn one character speaks and nominates the next with ``[Next: ID]``.

Configuration as data (``load_config``), next-speaker resolution and post-processing as pure
functions, the flow (``build_flow``), a small service for apps (``Roundtable``) and round
summaries kept across sessions. ``import flowkit`` does not import this package; importing it
is cheap too, since every name loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import RoundtableConfig, config_json_schema, example_names, load_config
    from .errors import RoundtableConfigError
    from .speaker import Member, NextPolicy, NextSpeaker, normalize_name, resolve_next_speaker
    from .state import LogEntry, PersonInput, RoundtableState, TurnFailure
    from .text import PostprocessSettings, display_text, postprocess

__all__ = [
    "LogEntry",
    "Member",
    "NextPolicy",
    "NextSpeaker",
    "PersonInput",
    "PostprocessSettings",
    "RoundtableConfig",
    "RoundtableConfigError",
    "RoundtableState",
    "TurnFailure",
    "config_json_schema",
    "display_text",
    "example_names",
    "load_config",
    "normalize_name",
    "postprocess",
    "resolve_next_speaker",
]

_LAZY = {
    "RoundtableConfig": "config",
    "config_json_schema": "config",
    "example_names": "config",
    "load_config": "config",
    "RoundtableConfigError": "errors",
    "Member": "speaker",
    "NextPolicy": "speaker",
    "NextSpeaker": "speaker",
    "normalize_name": "speaker",
    "resolve_next_speaker": "speaker",
    "LogEntry": "state",
    "PersonInput": "state",
    "RoundtableState": "state",
    "TurnFailure": "state",
    "PostprocessSettings": "text",
    "display_text": "text",
    "postprocess": "text",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowkit.roundtable' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
