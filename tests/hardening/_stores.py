"""Where a case keeps its threads: a JSON-file store in its own directory, or PostgreSQL.

PostgreSQL cases share one migrated schema for the whole run (a schema per case would cost
a fifth of a second each); each case uses thread ids of its own there (``new_id``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from flowkit.stores import JsonFileStore, Store

__all__ = ["KINDS", "Opener", "new_id", "opener", "pg_rows", "shared_schema"]

#: The stores every store case runs against.
KINDS = ("jsonfile", "postgres")

#: ``open()`` gives a new store object over the same place (close it after use).
Opener = Callable[[], Any]


def new_id(prefix: str = "t") -> str:
    """A thread id no other case uses (PostgreSQL cases share one schema)."""
    return f"{prefix}{os.urandom(6).hex()}"


@cache
def shared_schema() -> tuple[str, str]:
    """``(url, schema)``: one migrated schema for this process's cases, in the run's database
    (which ``_pg`` drops at exit)."""
    from _pg import session_database

    from flowkit.stores.postgres import migrate

    url = session_database()
    schema = f"hardening_{os.urandom(4).hex()}"
    migrate(url, schema=schema)
    return url, schema


def opener(kind: str, tmp: Path, **options: Any) -> Opener:
    """New store objects of ``kind`` over one place: ``tmp/store``, or the shared schema."""
    if kind == "jsonfile":
        root = tmp / "store"
        options.setdefault("fsync", False)
        return lambda: JsonFileStore(root, **options)
    if kind == "postgres":
        from flowkit.stores.postgres import PostgresStore

        url, schema = shared_schema()
        options.setdefault("pool_size", 2)

        def open_pg() -> Store:
            return PostgresStore(url, schema=schema, **options)

        return open_pg
    raise ValueError(f"no store kind {kind!r}")


def pg_rows(sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Run ``sql`` (``{s}`` standing for the shared schema) on its own connection."""
    import psycopg

    url, schema = shared_schema()
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql.format(s=schema), params)
        return cursor.fetchall() if cursor.description else []
