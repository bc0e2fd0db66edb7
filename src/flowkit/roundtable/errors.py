"""The roundtable's own error: a configuration with problems, every one listed at once."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import FlowkitError
from ..errors._base import listed_problems

__all__ = ["RoundtableConfigError"]


class RoundtableConfigError(FlowkitError):
    """A roundtable configuration is invalid or unreadable.

    ``problems`` lists each one as ``"line N: where: what is wrong and what to do"`` (the line
    when the configuration came from a file); ``path`` is the file, when there is one.
    """

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.path = path
        self.problems = list(problems)
        subject = path or "The roundtable configuration"
        super().__init__(listed_problems(subject, self.problems, "load it again"))
