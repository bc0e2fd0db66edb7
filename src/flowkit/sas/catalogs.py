"""The block catalog a run uses: the shipped one, plus the user's own file when configured."""

from __future__ import annotations

from functools import cache

from ..robot.catalog import Catalog, default_catalog, load_catalog
from .state import SasConfig

__all__ = ["catalog_for"]


@cache
def _merged(path: str) -> Catalog:
    return default_catalog().merge(load_catalog(path))


def catalog_for(config: SasConfig) -> Catalog:
    """The catalog for a run's config (cached per file; catalogs are immutable)."""
    if config.catalog_file:
        return _merged(config.catalog_file)
    return default_catalog()
