"""A throw-away PostgreSQL database per test (skipped where no server answers)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator

from _external import require

#: The server the tests use: $FLOWKIT_PG_URL, else a local trust-auth server.
SERVER = os.environ.get("FLOWKIT_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def _server_answers() -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        # Generous: a loaded machine may take seconds to connect, and a failed probe here
        # fails (or skips) every test that needs the server.
        psycopg.connect(SERVER, connect_timeout=30).close()
    except psycopg.Error:
        return False
    return True


@contextlib.contextmanager
def pg_database() -> Iterator[str]:
    """Create a database, yield its URL, drop it (with anything still connected)."""
    require(_server_answers(), f"PostgreSQL at {SERVER} ($FLOWKIT_PG_URL) and psycopg")
    import psycopg

    name = f"flowkit_quality_{secrets.token_hex(4)}"
    with psycopg.connect(SERVER, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = SERVER.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
