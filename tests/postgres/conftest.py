"""Postgres fixtures: each test gets its own migrated schema in the run's database."""

from __future__ import annotations

from _pg_fixtures import open_pg, pg

__all__ = ["open_pg", "pg"]
