"""What a node's cache keeps and for how long (``@node(reads=..., cache=CachePolicy(...))``).

The cache itself, its keys and entries, is the execution core's (``flowkit.execution._cache``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

__all__ = ["CachePolicy"]


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Reuse a node's update while the fields it reads are unchanged.

    ``ttl``: how long an entry stays good (seconds or a ``timedelta``; ``None``: until the
    cache is cleared). ``version``: part of the key; change it when the node's code changes
    so old entries stop matching. The node must declare ``reads``: they are the key, so a
    node that also depends on anything else (``ctx.deps``, the LLM, the clock) gets the
    first answer for the same reads.
    """

    ttl: float | timedelta | None = None
    version: str = ""

    def __post_init__(self) -> None:
        ttl = self.ttl
        if isinstance(ttl, timedelta):
            ttl = ttl.total_seconds()
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0
        ):
            raise ValueError("CachePolicy ttl is a positive number of seconds, a timedelta or None")
        object.__setattr__(self, "ttl", None if ttl is None else float(ttl))
        if not isinstance(self.version, str):
            raise TypeError("CachePolicy version is a string")

    @property
    def seconds(self) -> float | None:
        assert self.ttl is None or isinstance(self.ttl, float)
        return self.ttl
