"""The folder a file-backed store keeps its data in, created when the store is opened.

Shared by the thread store and the memory store, whose folders fail the same way (a path
that is read-only, or a file) and must say so the same way: a ``StoreError`` naming the path.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError

__all__ = ["create_store_folder"]


def create_store_folder(path: Path, *, what: str) -> None:
    """Create ``path`` and its parents; a failure is a ``StoreError`` naming ``what`` folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"Cannot create the {what} folder {path}: {exc.strerror}; pick a writable path.",
            path=str(path),
        ) from exc
