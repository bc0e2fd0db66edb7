"""DBOS peer fixtures: PostgreSQL stores on a fresh schema of the test (the suite's own)."""

from __future__ import annotations

from _pg_fixtures import open_pg, pg

__all__ = ["open_pg", "pg"]
