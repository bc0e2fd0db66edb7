"""The one ``--store`` option every command shares, and how commands open the store it names.

``--store`` (default: ``$FLOWKIT_STORE`` when set, else ``./.flowkit``) is a JSON-file store
folder or a PostgreSQL database (a ``postgresql://`` or ``postgres://`` URL, schema
``flowkit``); this module is the one place that tells them apart. Commands that only read
open the store with :func:`open_for_reading`, which never creates anything: a missing folder
is an error (exit 2), a folder with no threads yet is ``None``, and a database without
flowkit's schema says to run ``flowkit store init URL``. Commands that run flows open it with
:func:`open_for_writing`, which creates a folder (never a schema). A URL's password never
reaches output: commands print the store as :func:`shown` gives it.

Stores opened while :func:`closing_stores` is active (``main`` runs every command in it) are
closed when the command ends, which gives a database's connections and leases back.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from .errors import CommandError

if TYPE_CHECKING:
    from ..stores import Store
    from ..stores.postgres import PostgresStore

_S = TypeVar("_S")

__all__ = [
    "DEFAULT_STORE",
    "add_store_option",
    "closing_stores",
    "default_store",
    "folder_argument",
    "is_database_url",
    "open_database",
    "open_for_reading",
    "open_for_writing",
    "shown",
    "store_location",
    "store_path",
    "store_words",
]

DEFAULT_STORE = ".flowkit"
_ENV = "FLOWKIT_STORE"
_URL_FORM = "postgresql://USER@HOST:PORT/DATABASE"

#: The stores the running command opened, closed when it ends (see ``closing_stores``).
_opened: ContextVar[ExitStack | None] = ContextVar("flowkit_cli_opened_stores", default=None)


def default_store() -> str:
    """``$FLOWKIT_STORE`` when set and not empty, else ``.flowkit`` (relative to the cwd)."""
    return os.environ.get(_ENV) or DEFAULT_STORE


def is_database_url(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a folder."""
    return location.startswith(("postgresql://", "postgres://"))


def add_store_option(parser: argparse.ArgumentParser, *, folder_only: bool = False) -> None:
    """Add ``--store DIR|URL`` with the shared default and help text.

    ``folder_only``: ``--store DIR`` for a command that keeps files beside its threads (a
    booking ledger, a memory), which a database could not share between processes.
    """
    default = f"default: ${_ENV}, else ./{DEFAULT_STORE}"
    parser.add_argument(
        "--store",
        metavar="DIR" if folder_only else "DIR|URL",
        default=None,
        help=f"the store folder, with the files kept beside its threads ({default})"
        if folder_only
        else f"a JSON-file store folder or a PostgreSQL URL ({_URL_FORM}) ({default})",
    )


def store_location(args: argparse.Namespace) -> str:
    """The folder or database URL a parsed command line names (its ``--store`` or the default)."""
    given: str | None = getattr(args, "store", None)
    return given if given else default_store()


def store_path(args: argparse.Namespace) -> str:
    """The store *folder* of a command that keeps more than threads there (``folder_only``).

    A database URL ends the command with exit 2: such a command cannot keep its files in one.
    """
    location = store_location(args)
    if is_database_url(location):
        raise CommandError(
            f"This command keeps its data in a store folder, not in PostgreSQL "
            f"({shown(location)}); pass --store DIR.",
            code=2,
        )
    return location


def folder_argument(value: str) -> str:
    """An argparse ``type=`` for a ``--store`` that can only be a folder (the demos): a
    database URL is a usage error (exit 2), shown without its password."""
    if is_database_url(value):
        raise argparse.ArgumentTypeError(
            f"this command keeps its data in a store folder, not in PostgreSQL "
            f"({shown(value)}); pass a folder"
        )
    return value


#: ``password=...`` in a libpq keyword string (``host=... password=... dbname=...``), which
#: is no URL, so it is taken for a folder's name and quoted back.
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def shown(location: str) -> str:
    """``location`` as commands print it: a database URL without its password (and any
    ``password=`` in a string that only looks like a folder)."""
    if not is_database_url(location):
        return _KEYWORD_PASSWORD.sub(r"\1***", location)
    from ..stores.postgres._driver import redact

    return redact(location)


def store_words(args: argparse.Namespace) -> list[str]:
    """``["--store", LOCATION]`` for a hint that repeats an explicit ``--store``, else ``[]``."""
    given: str | None = getattr(args, "store", None)
    return ["--store", shown(given)] if given else []


@contextmanager
def closing_stores() -> Iterator[None]:
    """Close every store opened through this module inside the block when it ends."""
    with ExitStack() as stack:
        token = _opened.set(stack)
        try:
            yield
        finally:
            _opened.reset(token)


def _kept(store: _S) -> _S:
    stack = _opened.get()
    close = getattr(store, "close", None)
    if stack is not None and close is not None:
        stack.callback(close)
    return store


def open_for_reading(location: str, *, schema: str = "flowkit") -> Store | None:
    """The store at ``location``, or None when a folder holds no threads yet.

    Never creates anything. A path that is not a folder, or a database that cannot be used,
    ends the command with exit 2 and a message naming it (and what to run).
    """
    if is_database_url(location):
        return open_database(location, schema=schema)
    from pathlib import Path

    root = Path(location)
    if not root.is_dir():
        raise CommandError(
            f"No store at `{shown(location)}`: it is not a folder. Pass --store DIR|URL or set "
            f"{_ENV}.",
            code=2,
        )
    if not (root / "threads").is_dir():
        return None
    from ..stores.jsonfile import JsonFileStore

    return _kept(JsonFileStore(root))


def open_for_writing(location: str, *, schema: str = "flowkit", connections: int = 2) -> Store:
    """The store at ``location``, a folder created if needed (for commands that run flows).

    ``connections``: most database connections the command uses at once.
    """
    if is_database_url(location):
        return open_database(location, schema=schema, connections=connections)
    from ..stores.jsonfile import JsonFileStore

    return _kept(JsonFileStore(location))


def open_database(
    url: str, *, schema: str = "flowkit", connections: int = 2, lease_s: float = 30.0
) -> PostgresStore:
    """A ``PostgresStore`` on ``url``; anything that stops it from opening (no driver, a
    server that cannot be reached, no flowkit schema) ends the command with exit 2 and the
    store's own message, which hides the password and names what to install or run."""
    from ..errors import StoreError

    try:
        from ..stores.postgres import PostgresStore

        store = PostgresStore(url, schema=schema, pool_size=connections, lease_s=lease_s)
    except StoreError as exc:
        raise CommandError(str(exc), code=2) from exc
    return _kept(store)
