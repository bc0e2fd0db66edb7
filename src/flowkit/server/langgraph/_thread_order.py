"""The order ``threads.search`` answers in: LangGraph's ``sort_by`` (``thread_id``,
``status``, ``created_at``, ``updated_at``) and ``sort_order`` (``asc``, ``desc``), by
default the most recently updated first. Ties go by thread id, so a page follows the last."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Literal

__all__ = ["SortBy", "SortOrder", "by_default", "newest_first", "ordered"]

SortBy = Literal["thread_id", "status", "created_at", "updated_at"]
SortOrder = Literal["asc", "desc"]


def by_default(sort_by: SortBy | None, sort_order: SortOrder | None) -> bool:
    """Whether the order asked for is the default: the most recently updated first."""
    return (sort_by or "updated_at", sort_order or "desc") == ("updated_at", "desc")


def newest_first(*runs: Iterable[tuple[float, str]]) -> Iterator[str]:
    """The thread ids of ``runs`` (each ``(updated, thread_id)``, most recent first) merged
    into one run, most recent first; read lazily, as far as the caller reads."""
    for _, thread_id in heapq.merge(*runs, key=lambda row: row[0], reverse=True):
        yield thread_id


def ordered(
    threads: Iterable[dict[str, Any]], sort_by: SortBy | None, sort_order: SortOrder | None
) -> list[dict[str, Any]]:
    """``threads`` (LangGraph ``Thread`` documents) in the order asked for."""
    key = _KEYS[sort_by or "updated_at"]
    return sorted(
        threads,
        key=lambda thread: (key(thread), thread["thread_id"]),
        reverse=(sort_order or "desc") == "desc",
    )


def _time(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda thread: datetime.fromisoformat(thread[field])


_KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "thread_id": lambda thread: thread["thread_id"],
    "status": lambda thread: thread["status"],
    "created_at": _time("created_at"),
    "updated_at": _time("updated_at"),
}
