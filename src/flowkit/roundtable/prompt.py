"""The prompt of one turn (seed 004 ``prepare_context``): the rules, the speaker's persona, the
others at the table, the conversation so far and the recent memory, put into the template.

Substitution replaces only ``{identifier}`` tokens that name a placeholder, so JSON in a
template (``{"next":"INTERNAL_ID"}``) survives as written; ``str.format`` would choke on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from .speaker import Member

__all__ = ["PLACEHOLDERS", "other_characters", "placeholders_in", "render_template"]

#: Every placeholder a template may use, and what it becomes.
PLACEHOLDERS: Final[dict[str, str]] = {
    "character_name": "the speaker's display name",
    "character_id": "the speaker's internal id",
    "persona_prompt": "the speaker's persona (system prompt)",
    "response_constraints": "the rules' response constraints (rendered)",
    "flow_rules": "the rules' flow rules (rendered)",
    "other_characters": "the others at the table: display name (INTERNAL_ID), ...",
    "other_ids": "the others' internal ids, comma-separated",
    "conversation_log": "the conversation so far, one [HH:MM:SS] speaker: text line each",
    "user_input": "the person's latest message",
    "memory": "summaries of recent earlier sessions",
}
_TOKEN = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders_in(template: str) -> list[str]:
    """The ``{identifier}`` tokens of ``template``, in order, once each."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(template):
        seen.setdefault(match.group(1), None)
    return list(seen)


def render_template(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` that ``values`` has replaced; everything else (JSON
    braces, unknown names) stays as written."""
    return _TOKEN.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def other_characters(registry: Sequence[Member], speaker: str) -> list[Member]:
    return [m for m in registry if m.internal_id != speaker]


def describe_others(others: Sequence[Member]) -> tuple[str, str]:
    """(``display name (ID), ...``, ``ID, ...``) for the others at the table."""
    return (
        ", ".join(f"{m.display_name} ({m.internal_id})" for m in others),
        ", ".join(m.internal_id for m in others),
    )
