"""The root of every error flowkit raises."""

from __future__ import annotations

__all__ = ["FlowkitError"]


class FlowkitError(Exception):
    """Root of every error flowkit raises."""

    #: Whether retrying the same operation may succeed (used by node retry policies).
    retryable: bool = False
