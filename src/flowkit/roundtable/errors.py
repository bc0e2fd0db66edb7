"""The roundtable's own error: a configuration with problems, every one listed at once."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import FlowkitError

__all__ = ["RoundtableConfigError"]


class RoundtableConfigError(FlowkitError):
    """A roundtable configuration is invalid or unreadable.

    ``problems`` lists each one as ``"line N: where: what is wrong and what to do"`` (the line
    when the configuration came from a file); ``path`` is the file, when there is one.
    """

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.path = path
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{path or 'The roundtable configuration'} has {count} "
            f"problem{'s' if count != 1 else ''}; fix {'them' if count != 1 else 'it'} and "
            f"load it again:\n{lines}"
        )
