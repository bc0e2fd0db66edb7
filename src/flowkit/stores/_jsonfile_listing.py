"""``JsonFileStore``'s thread listings (the ``ThreadIndex`` capability) and ``reindex``, read
from its thread index (``_thread_index``) instead of its journals."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from ..foundation._progress import OnProgress
from ._listing import DEFAULT_LIMIT, ThreadPage, thread_query
from ._thread_index import JsonThreadIndex

__all__ = ["IndexedListing"]


class IndexedListing:
    """Mixed into ``JsonFileStore``: listings from its ``_index``."""

    _index: JsonThreadIndex

    def list_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        order: str = "updated",
    ) -> ThreadPage:
        query = thread_query(
            status=status,
            flow=flow,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=limit,
            cursor=cursor,
            order=order,
        )
        return self._index.page(query)

    def count_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
    ) -> int:
        query = thread_query(
            status=status, flow=flow, updated_before=updated_before, updated_after=updated_after
        )
        return self._index.count(query)

    def reindex(self, *, on_progress: OnProgress | None = None) -> int:
        """Rebuild the thread index from the journals; how many threads it holds (those
        that cannot be read included, listed as ``unreadable``).

        Listings keep the index right by themselves, after crashes and damage too; this is
        for journal files changed by hand (restored from a backup, edited, copied in), which
        nothing notices. ``StoreError`` if the index folder cannot be written.
        """
        return self._index.reindex(on_progress)
