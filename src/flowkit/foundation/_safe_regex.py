"""Regular expressions that come from data files (domain entities and slot rules, catalog
field rules) run on RE2, a backtracking-free engine: matching is linear in the text, so a
pattern like ``(a+)+$`` cannot stall a turn. A pattern RE2 cannot run (backreferences,
lookaround) is refused when its file loads, with ``UnsafePatternError``.

RE2's ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII; write ``[0-9０-９]`` or a Unicode class
such as ``\\p{N}`` for digits of other scripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Protocol

from ..errors import UnsafePatternError

__all__ = ["MAX_PATTERN_LENGTH", "SafePattern", "compile_pattern"]

#: A longer pattern is refused (RE2 builds an automaton in memory proportional to it).
MAX_PATTERN_LENGTH = 2000


class SafePattern(Protocol):
    """The part of a compiled pattern flowkit uses (RE2's mirrors ``re.Pattern``)."""

    @property
    def pattern(self) -> str: ...
    @property
    def groupindex(self) -> dict[str, int]: ...
    def search(self, text: str) -> Any: ...
    def fullmatch(self, text: str) -> Any: ...
    def finditer(self, text: str) -> Iterator[Any]: ...


def compile_pattern(pattern: str, *, what: str, ignore_case: bool = False) -> SafePattern:
    """``pattern`` compiled on RE2 (cached).

    Raises:
        UnsafePatternError: not a string, too long, not a valid regex, or using a feature
            RE2 refuses because it needs backtracking (the message says which).
    """
    if not isinstance(pattern, str):
        raise UnsafePatternError(
            f"the {what} must be a string, not {type(pattern).__name__}", what=what
        )
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsafePatternError(
            f"the {what} is {len(pattern)} characters, over {MAX_PATTERN_LENGTH}; shorten it",
            what=what,
            limit=MAX_PATTERN_LENGTH,
        )
    return _compile(pattern, what, ignore_case)


@lru_cache(maxsize=512)
def _compile(pattern: str, what: str, ignore_case: bool) -> SafePattern:
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print to stderr; the error says it instead
    options.case_sensitive = not ignore_case
    try:
        compiled: SafePattern = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        try:
            re.compile(pattern)
        except re.error as syntax:
            raise UnsafePatternError(
                f"the {what} `{pattern:.80}` is not a valid regex ({syntax}); fix it", what=what
            ) from exc
        raise UnsafePatternError(
            f"the {what} `{pattern:.80}` uses a feature that needs backtracking ({reason}); "
            "flowkit runs patterns on RE2, which has no backreferences or lookaround, so "
            "matching stays linear. Rewrite it without them",
            what=what,
        ) from exc
    return compiled
