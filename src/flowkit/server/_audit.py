"""One audit line per answer: who resumed, patched, forked or deleted which thread, and when.

The line is the structlog event ``thread_answered`` (``principal``, ``action``,
``thread_id``, ``flow``, ``pause``, ``version``, ``at``): names and ids only, never a state
value, an input or a token. A patch and an answer are also journaled with their ``actor`` (the
principal), so the thread's history names who changed it and who answered each pause.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..foundation._logging import get_logger

__all__ = ["answered"]


def answered(
    principal: str | None,
    action: str,
    thread_id: str,
    *,
    flow: str,
    pause: str | None = None,
    version: int | None = None,
) -> None:
    """Log that ``principal`` did ``action`` to ``thread_id`` (answering ``pause``, when one
    was named; ``version``: the thread's version after it)."""
    get_logger().info(
        "thread_answered",
        principal=str(principal) if principal is not None else None,
        action=action,
        thread_id=thread_id,
        flow=flow,
        pause=pause,
        version=version,
        at=datetime.now(UTC).isoformat(timespec="milliseconds"),
    )
