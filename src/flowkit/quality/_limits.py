"""How many issues one check (or re-check) of a manuscript records at most: a setting
(``Workspace(max_issues=...)``, ``flowkit quality check --max-issues N``), so a runaway answer
cannot flood a session with issues, each of which costs an LLM call per round.

A module of its own so the CLI can show the default without importing the workflow.
"""

from __future__ import annotations

from typing import Final

from .errors import QualityInputError

__all__ = ["MAX_ISSUES", "check_max_issues"]

#: The default: past it, the most severe findings are recorded and the rest are reported.
MAX_ISSUES: Final = 200


def check_max_issues(value: object) -> int:
    """``value`` as a number of issues (1 or more), or a ``QualityInputError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QualityInputError(
            f"max_issues must be a whole number of issues, 1 or more (default {MAX_ISSUES}); "
            f"got {str(value)[:20]!r}."
        )
    return value
