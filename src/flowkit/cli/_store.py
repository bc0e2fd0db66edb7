"""The one ``--store`` option every command shares, and how commands open the store it names.

Default: ``$FLOWKIT_STORE`` when set, else ``./.flowkit``. Commands that only read open the
store with :func:`open_for_reading`, which never creates a file or folder: a missing store is
an error (exit 2) and a store with no threads yet is ``None``. Commands that run flows open it
with :func:`open_for_writing`, which creates it.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..stores.jsonfile import JsonFileStore

__all__ = ["DEFAULT_STORE", "add_store_option", "open_for_reading", "open_for_writing"]

DEFAULT_STORE = ".flowkit"
_ENV = "FLOWKIT_STORE"


def default_store() -> str:
    """``$FLOWKIT_STORE`` when set and not empty, else ``.flowkit`` (relative to the cwd)."""
    return os.environ.get(_ENV) or DEFAULT_STORE


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--store DIR`` with the shared default and help text."""
    parser.add_argument(
        "--store",
        metavar="DIR",
        default=None,
        help=f"JSON-file store folder (default: ${_ENV}, else ./{DEFAULT_STORE})",
    )


def store_path(args: argparse.Namespace) -> str:
    """The store folder a parsed command line names (its ``--store`` or the default)."""
    given: str | None = getattr(args, "store", None)
    return given if given else default_store()


def open_for_reading(directory: str) -> JsonFileStore | None:
    """The store at ``directory``, or None when it holds no threads yet. Never creates anything.

    A path that is not a folder ends the command with exit 2 and a message naming it.
    """
    from pathlib import Path

    from ._errors import CommandError

    root = Path(directory)
    if not root.is_dir():
        raise CommandError(
            f"No store at `{directory}`: it is not a folder. Pass --store DIR or set {_ENV}.",
            code=2,
        )
    if not (root / "threads").is_dir():
        return None
    from ..stores.jsonfile import JsonFileStore

    return JsonFileStore(root)


def open_for_writing(directory: str) -> JsonFileStore:
    """The store at ``directory``, created if needed (for commands that run flows)."""
    from ..stores.jsonfile import JsonFileStore

    return JsonFileStore(directory)
