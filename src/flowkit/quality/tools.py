"""Fix tools and which categories may use them (UC-120-002 ``category_tool_map``).

A tool edits one range of the manuscript. The category map names the tools recommended per
category; only those also registered are offered to the LLM. A recommended tool that is not
registered, or an answer naming a tool that was not offered, is QC-012
(``ToolUnavailableError``): the issue is left for a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from .errors import ToolUnavailableError
from .models import TextRange

__all__ = [
    "DEFAULT_CATEGORY_TOOLS",
    "DEFAULT_TOOLS",
    "Edit",
    "FixTool",
    "Toolbox",
    "apply_edits",
]


@dataclass(frozen=True)
class FixTool:
    """A named edit: ``apply(range_text, replacement)`` -> the new text of the range."""

    name: str
    description: str
    apply: Callable[[str, str], str]


DEFAULT_TOOLS: Final[tuple[FixTool, ...]] = (
    FixTool("replace_text", "replace the marked text with `replacement`", lambda _, new: new),
    FixTool("delete_text", "delete the marked text (a doubled word, a stray character)",
            lambda _, __: ""),
)  # fmt: skip

#: Category -> recommended tools. ``polish_manuscript`` (a whole-passage rewrite in the origin)
#: is recommended for structure but not registered by default: such issues are QC-012.
DEFAULT_CATEGORY_TOOLS: Final[Mapping[str, tuple[str, ...]]] = {
    "typo": ("replace_text", "delete_text"),
    "notation": ("replace_text",),
    "style": ("replace_text", "delete_text"),
    "structure": ("polish_manuscript",),
}


@dataclass(frozen=True)
class Edit:
    """One planned change: replace ``range`` with ``text``."""

    issue_id: str
    range: TextRange
    text: str


class Toolbox:
    """The registered tools and the category map."""

    def __init__(
        self,
        tools: Sequence[FixTool] = DEFAULT_TOOLS,
        category_tools: Mapping[str, Sequence[str]] = DEFAULT_CATEGORY_TOOLS,
        *,
        fallback: Sequence[str] = ("replace_text",),
    ) -> None:
        self.tools = {t.name: t for t in tools}
        self.category_tools = {k: tuple(v) for k, v in category_tools.items()}
        self.fallback = tuple(fallback)

    def recommended(self, category: str) -> tuple[str, ...]:
        return self.category_tools.get(category, self.fallback)

    def available(self, category: str) -> tuple[str, ...]:
        """The recommended tools that are registered; ``ToolUnavailableError`` when none."""
        offered = tuple(t for t in self.recommended(category) if t in self.tools)
        if not offered:
            missing = ", ".join(self.recommended(category)) or "none"
            raise ToolUnavailableError(
                f"No tool for category {category!r} is available (recommended: {missing}); "
                "fix it by hand or register the tool.",
                tool=missing,
                category=category,
            )
        return offered

    def choose(self, category: str, tool: str) -> FixTool:
        """The tool the LLM chose, if it was offered for ``category``."""
        if tool not in self.available(category):
            raise ToolUnavailableError(
                f"The plan uses {tool!r}, which is not offered for {category!r}.",
                tool=tool,
                category=category,
            )
        return self.tools[tool]


def apply_edits(text: str, edits: Sequence[Edit]) -> tuple[str, list[Edit], list[Edit]]:
    """``text`` with ``edits`` applied from the end backwards, so earlier offsets stay valid;
    an edit overlapping one already applied is skipped. Returns (text, applied, skipped)."""
    applied: list[Edit] = []
    skipped: list[Edit] = []
    floor = len(text) + 1
    for edit in sorted(edits, key=lambda e: (e.range.start_char, e.range.end_char), reverse=True):
        if edit.range.end_char > floor or edit.range.end_char > len(text):
            skipped.append(edit)
            continue
        text = text[: edit.range.start_char] + edit.text + text[edit.range.end_char :]
        floor = edit.range.start_char
        applied.append(edit)
    return text, applied[::-1], skipped
