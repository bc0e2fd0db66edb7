"""The root of every error flowkit raises."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["FlowkitError", "listed_problems"]


class FlowkitError(Exception):
    """Root of every error flowkit raises."""

    #: Whether retrying the same operation may succeed (used by node retry policies).
    retryable: bool = False


def listed_problems(subject: str, problems: Sequence[object], then: str) -> str:
    """``"<subject> has N problem(s); fix them and <then>:"`` and one bulleted line each: the
    message of an error that reports every problem of a file at once."""
    count = len(problems)
    lines = "\n".join(f"  - {p}" for p in problems)
    return (
        f"{subject} has {count} problem{'s' if count != 1 else ''}; "
        f"fix {'them' if count != 1 else 'it'} and {then}:\n{lines}"
    )
