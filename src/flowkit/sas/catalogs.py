"""The block catalog a run uses: the shipped one, plus the user's own file when configured."""

from __future__ import annotations

from functools import cache

from ..robot.catalog import Catalog, default_catalog, load_catalog
from .state import SasConfig

__all__ = ["catalog_for", "catalog_from_file"]


@cache
def _merged(path: str) -> Catalog:
    return default_catalog().merge(load_catalog(path))


def catalog_for(config: SasConfig) -> Catalog:
    """The catalog for a run's config (cached per file; catalogs are immutable)."""
    return catalog_from_file(config.catalog_file)


def catalog_from_file(path: str | None) -> Catalog:
    """The shipped catalog merged with your own file (``--catalog``), or alone without one.

    Raises:
        CatalogError: the file is not a valid block catalog.
    """
    return _merged(path) if path else default_catalog()
