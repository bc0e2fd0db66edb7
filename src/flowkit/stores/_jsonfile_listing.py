"""``JsonFileStore``'s thread listings (the ``ThreadIndex`` capability) and ``reindex``, read
from its thread index (``_thread_index``) instead of its journals."""

from __future__ import annotations

from ..foundation._progress import OnProgress
from ._listing import QueriedListing, ThreadPage, ThreadQuery
from ._thread_index import JsonThreadIndex

__all__ = ["IndexedListing"]


class IndexedListing(QueriedListing):
    """Mixed into ``JsonFileStore``: listings from its ``_index``."""

    _index: JsonThreadIndex

    def _page(self, query: ThreadQuery) -> ThreadPage:
        return self._index.page(query)

    def _count(self, query: ThreadQuery) -> int:
        return self._index.count(query)

    def reindex(self, *, on_progress: OnProgress | None = None) -> int:
        """Rebuild the thread index from the journals; how many threads it holds (those
        that cannot be read included, listed as ``unreadable``).

        Listings keep the index right by themselves, after crashes and damage too; this is
        for journal files changed by hand (restored from a backup, edited, copied in), which
        nothing notices. ``StoreError`` if the index folder cannot be written.
        """
        return self._index.reindex(on_progress)
