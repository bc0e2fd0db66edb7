"""The prompts of the quality workflow.

The check prompt lists the check templates (``check_templates``: typo, notation, style,
structure) with the manuscript and its hash; the plan prompt shows one issue's minimum
excerpt with its ``excerpt_hash``, ``range_checksum`` and ``manuscript_hash`` (§3.4) and the
tools offered for its category.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..llm._types import Message
from .check_templates import CheckTemplate, load_check_templates
from .fetch import Excerpt
from .models import Issue
from .tools import Toolbox

__all__ = ["CheckTemplate", "check_prompt", "plan_prompt"]

_CHECK_SYSTEM = (
    "You check one episode of a web novel for quality problems. For every problem, give its "
    "category (one of the checks below), severity (low, medium, high, critical), a short "
    "description, `quote`: the exact text of the manuscript the problem is in (copied "
    "character for character, as short as possible), and a suggested fix. Also give a score "
    "from 0 to 1 per check in `metrics`. Answer in the manuscript's language.\nChecks:\n"
)
_PLAN_SYSTEM = (
    "You fix one quality problem in a web-novel manuscript. The excerpt shows the problem "
    "between ⟦ and ⟧. Choose one of the offered tools; with replace_text give the exact text "
    "that replaces the marked part (only that part). Set defer=true when a person must decide."
)


def check_prompt(
    text: str, manuscript_hash: str, templates: Sequence[CheckTemplate] | None = None
) -> list[Message]:
    """The check step's prompt over ``templates`` (default: the shipped ones)."""
    if templates is None:
        templates = load_check_templates()
    checks = "\n".join(f"- {t.category} ({t.name}): {t.instruction}" for t in templates)
    return [
        {"role": "system", "content": _CHECK_SYSTEM + checks},
        {
            "role": "user",
            "content": f"manuscript_hash: {manuscript_hash}\nManuscript:\n{text}",
        },
    ]


def plan_prompt(
    issue: Issue, piece: Excerpt, toolbox: Toolbox, offered: Sequence[str]
) -> list[Message]:
    start = issue.text_range.start_char - piece.start_char
    end = issue.text_range.end_char - piece.start_char
    marked = piece.text[:start] + "⟦" + piece.text[start:end] + "⟧" + piece.text[end:]
    tools = "\n".join(f"- {name}: {toolbox.tools[name].description}" for name in offered)
    facts = {
        "category": issue.category,
        "severity": issue.severity,
        "problem": issue.description,
        "suggested_fixes": list(issue.suggested_fixes),
        **piece.metadata(),
    }
    return [
        {"role": "system", "content": _PLAN_SYSTEM},
        {
            "role": "user",
            "content": f"Issue:\n{json.dumps(facts, ensure_ascii=False)}\nOffered tools:\n"
            f"{tools}\nExcerpt:\n{marked}",
        },
    ]
