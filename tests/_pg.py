"""A real PostgreSQL for the tests that need one: throwaway databases and schemas.

The server is ``$FLOWKIT_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``,
a user allowed to create databases). ``require_postgres()`` skips a test (fails it under
``FLOWKIT_REQUIRE_EXTERNAL``) when the driver is missing or the server cannot be reached.
``session_database()`` is one database for the whole run, dropped at exit; ``fresh_schema``
gives each test its own migrated schema in it (much faster than a database per test);
``new_database()`` is a database of its own for tests that need one (workers, docs), and
``scratch_database()`` the same for one ``with`` block, its URL optionally carrying a password
(the test server trusts loopback and never checks it: tests watch that it is never printed).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import urlsplit

from _external import require

__all__ = [
    "drop_database",
    "fresh_schema",
    "new_database",
    "require_postgres",
    "scratch_database",
    "server_url",
    "session_database",
]

ENV = "FLOWKIT_PG_URL"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


@cache
def server_url() -> str:
    # Read once: the docs tests point $FLOWKIT_PG_URL at the page's own database.
    return os.environ.get(ENV) or DEFAULT


@cache
def _problem() -> str | None:
    """Why PostgreSQL cannot be used here, or None."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg and psycopg-pool (pip install 'flowkit-workflows[postgres]')"
    try:
        # Generous: a loaded machine may take seconds to connect, and the answer is cached
        # for the run (a slow probe would fail or skip every PostgreSQL test).
        with psycopg.connect(server_url(), autocommit=True, connect_timeout=30) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"a PostgreSQL server at ${ENV} or {DEFAULT} ({str(exc).strip()[:120]})"
    return None


def require_postgres() -> None:
    __tracebackhide__ = True
    problem = _problem()
    require(problem is None, problem or "")


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def new_database() -> str:
    """A new empty database (random name); its URL. Drop it with ``drop_database``."""
    import psycopg

    name = f"flowkit_test_{os.urandom(5).hex()}"
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_database(server_url(), name)


def drop_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    assert name.startswith("flowkit_test_"), name
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scratch_database(*, password: str | None = None, migrated: bool = False) -> Iterator[str]:
    """A new empty database for the block (``migrated``: with flowkit's schema), dropped after."""
    url = new_database()
    try:
        if migrated:
            from flowkit.stores.postgres import migrate

            migrate(url)
        if password is None:
            yield url
        else:
            parts = urlsplit(url)
            user = parts.username or "postgres"
            yield parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port}").geturl()
    finally:
        drop_database(url)


@cache
def session_database() -> str:
    """One database for this test run (with no schema yet), dropped when the run ends."""
    url = new_database()
    atexit.register(drop_database, url)
    return url


@contextmanager
def fresh_schema() -> Iterator[tuple[str, str]]:
    """``(url, schema)``: a schema migrated to the current version, dropped afterwards."""
    import psycopg

    from flowkit.stores.postgres import migrate

    url = session_database()
    schema = f"t_{os.urandom(5).hex()}"
    migrate(url, schema=schema)
    try:
        yield url, schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
