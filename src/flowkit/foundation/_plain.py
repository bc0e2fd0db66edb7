"""Foreign errors in plain words: what a person reading a message should see of them.

pydantic's own text ("1 validation error for tagged-union[StartRecord,...]") names internals;
these helpers keep the field and the reason and drop the rest, and shorten values that came
from the user so a huge input is never echoed back whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["counted", "describe_validation_error", "shorten"]

#: The most characters of a user's value any message repeats.
ECHO_LIMIT = 200


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 fix`` / ``2 fixes``: a count with its noun in the right number (``plural`` for
    nouns that do not just add an ``s``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


#: The most parts of a field path a message shows.
_PATH_PARTS = 8


def describe_validation_error(exc: ValidationError, *, most: int = 5) -> str:
    """One line per problem (at most ``most``): ``field.path: reason``."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False)[:most]:
        # Union members' names (`StartRecord`, `function-after[...]`) are not the user's fields.
        parts = [str(part) for part in error["loc"] if not (isinstance(part, str) and "[" in part)]
        if len(parts) > _PATH_PARTS:  # a deeply nested value: where it starts and ends
            parts = [parts[0], "(...)", *parts[-(_PATH_PARTS - 2) :]]
        where = ".".join(parts)
        reason = shorten(str(error["msg"]))
        problems.append(f"{where}: {reason}" if where else reason)
    hidden = exc.error_count() - len(problems)
    if hidden > 0:
        problems.append(f"and {hidden} more")
    return "; ".join(problems) or "the data does not have the expected shape"
