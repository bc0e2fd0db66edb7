"""``PostgresWorkflowStateStore``: the workflow state store on PostgreSQL (psycopg 3).

A commit is one transaction: the session row is locked (``FOR UPDATE``), its
``state_version`` checked, then the unit's rows upserted; any failure rolls the transaction
back, so nothing of the unit is visible. Episode locks are session-level advisory locks on a
connection of their own: PostgreSQL drops them when the connection ends, so a killed process
never leaves an episode locked. Records are kept as JSONB beside the columns queries use.

Needs ``pip install 'flowkit-workflows[postgres]'``; ``import flowkit`` never imports psycopg.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ...foundation._distribution import install_hint
from ..errors import StatePersistenceError
from ..models import Issue, IssueResolution, ManuscriptFetchLog, Session, StepExecution
from ._corrupt import corrupt_state
from ._staged import StagedStore, Unit, stale

__all__ = ["SCHEMA", "PostgresWorkflowStateStore"]

_Model = TypeVar("_Model", bound=BaseModel)
_PG_FIX = "restore its rows from a backup, or delete the session's row to drop the session."

#: First key of the two-key advisory locks this store takes (the second is the episode).
_LOCK_SPACE = 0x51C0

SCHEMA = """
CREATE TABLE IF NOT EXISTS quality_sessions (
    session_id text PRIMARY KEY,
    episode_number integer NOT NULL,
    initiator text NOT NULL,
    created_at timestamptz NOT NULL,
    current_status text NOT NULL,
    state_version integer NOT NULL,
    record jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS quality_sessions_episode ON quality_sessions (episode_number);
CREATE TABLE IF NOT EXISTS quality_issues (
    issue_id text PRIMARY KEY,
    session_id text NOT NULL REFERENCES quality_sessions ON DELETE CASCADE,
    seq bigserial,
    record jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS quality_issues_session ON quality_issues (session_id);
CREATE TABLE IF NOT EXISTS quality_issue_resolutions (
    issue_id text NOT NULL,
    resolution_attempt integer NOT NULL,
    session_id text NOT NULL REFERENCES quality_sessions ON DELETE CASCADE,
    seq bigserial,
    record jsonb NOT NULL,
    PRIMARY KEY (issue_id, resolution_attempt)
);
CREATE TABLE IF NOT EXISTS quality_step_executions (
    session_id text NOT NULL REFERENCES quality_sessions ON DELETE CASCADE,
    step_id integer NOT NULL,
    attempt integer NOT NULL,
    seq bigserial,
    record jsonb NOT NULL,
    PRIMARY KEY (session_id, step_id, attempt)
);
CREATE TABLE IF NOT EXISTS quality_fetch_log (
    fetch_id text PRIMARY KEY,
    session_id text NOT NULL REFERENCES quality_sessions ON DELETE CASCADE,
    seq bigserial,
    record jsonb NOT NULL
);
"""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise StatePersistenceError(
            f"The PostgreSQL store needs psycopg: {install_hint('postgres')}."
        ) from exc
    return psycopg


class PostgresWorkflowStateStore(StagedStore):
    """A ``WorkflowStateStore`` in the PostgreSQL database ``dsn`` names (tables created)."""

    def __init__(self, dsn: str, *, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(clock=clock)
        psycopg = _psycopg()
        self._errors = psycopg.Error
        try:
            self._conn = psycopg.connect(dsn, autocommit=True)
            self._lock_conn = psycopg.connect(dsn, autocommit=True)
            with self._conn.transaction():
                self._conn.execute(SCHEMA)
        except psycopg.Error as exc:
            raise StatePersistenceError(
                f"Cannot use PostgreSQL ({type(exc).__name__}: {exc}); check that the server "
                "runs and the connection string is right."
            ) from exc
        self._locked: set[int] = set()

    def __repr__(self) -> str:
        return "PostgresWorkflowStateStore(...)"

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._lock_conn.close()
            self._conn.close()

    # -- reads ---------------------------------------------------------------------------------

    def _rows(self, sql: str, *params: Any) -> list[Any]:
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        except self._errors as exc:
            raise _persist_error(exc) from exc

    def _read_session(self, session_id: str) -> Session | None:
        rows = self._rows("SELECT record FROM quality_sessions WHERE session_id = %s", session_id)
        return _read(Session, rows[0][0], session_id, "quality_sessions") if rows else None

    def _session_ids(self, episode_number: int | None) -> list[str]:
        if episode_number is None:
            rows = self._rows("SELECT session_id FROM quality_sessions ORDER BY session_id")
        else:
            rows = self._rows(
                "SELECT session_id FROM quality_sessions WHERE episode_number = %s "
                "ORDER BY session_id",
                episode_number,
            )
        return [r[0] for r in rows]

    def _records(self, model: type[_Model], table: str, session_id: str) -> list[_Model]:
        rows = self._rows(
            f"SELECT record FROM {table} WHERE session_id = %s ORDER BY seq",
            session_id,
        )
        return [_read(model, r[0], session_id, table) for r in rows]

    def _read_issues(self, session_id: str) -> list[Issue]:
        return self._records(Issue, "quality_issues", session_id)

    def _read_resolutions(self, session_id: str) -> list[IssueResolution]:
        return self._records(IssueResolution, "quality_issue_resolutions", session_id)

    def _read_steps(self, session_id: str) -> list[StepExecution]:
        return self._records(StepExecution, "quality_step_executions", session_id)

    def _read_fetch(self, session_id: str) -> list[ManuscriptFetchLog]:
        return self._records(ManuscriptFetchLog, "quality_fetch_log", session_id)

    def _read_issue(self, issue_id: str) -> tuple[Issue, Session] | None:
        rows = self._rows(
            "SELECT i.session_id, i.record, s.record FROM quality_issues i "
            "JOIN quality_sessions s USING (session_id) WHERE i.issue_id = %s",
            issue_id,
        )
        if not rows:
            return None
        sid, issue, session = rows[0]
        return _read(Issue, issue, sid, "quality_issues"), _read(
            Session, session, sid, "quality_sessions"
        )

    def _issue_session(self, issue_id: str) -> str | None:
        rows = self._rows("SELECT session_id FROM quality_issues WHERE issue_id = %s", issue_id)
        return rows[0][0] if rows else None

    # -- the unit ------------------------------------------------------------------------------

    def _apply(self, unit: Unit, session: Session) -> None:
        assert unit.session_id is not None
        sid = unit.session_id
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.execute(
                    "SELECT state_version, record FROM quality_sessions WHERE session_id = %s "
                    "FOR UPDATE",
                    (sid,),
                )
                row = cur.fetchone()
                stored = row[0] if row else None
                if row is not None:  # a damaged row is reported, never silently overwritten
                    _check_row(sid, row[0], row[1])
                if stored != unit.expected:
                    raise stale(sid, unit.expected, stored)
                cur.execute(
                    "INSERT INTO quality_sessions (session_id, episode_number, initiator, "
                    "created_at, current_status, state_version, record) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
                    "current_status = EXCLUDED.current_status, "
                    "state_version = EXCLUDED.state_version, record = EXCLUDED.record",
                    (
                        sid,
                        session.episode_number,
                        session.initiator,
                        session.created_at,
                        session.current_status,
                        session.state_version,
                        _json(session),
                    ),
                )
                # executemany sends each table's rows in one pipeline, not a round trip each
                cur.executemany(
                    "INSERT INTO quality_issues (issue_id, session_id, record) "
                    "VALUES (%s, %s, %s) ON CONFLICT (issue_id) DO UPDATE SET "
                    "record = EXCLUDED.record",
                    [(i.issue_id, sid, _json(i)) for i in unit.issues.values()],
                )
                cur.executemany(
                    "INSERT INTO quality_issue_resolutions (issue_id, resolution_attempt, "
                    "session_id, record) VALUES (%s, %s, %s, %s) ON CONFLICT "
                    "(issue_id, resolution_attempt) DO UPDATE SET record = EXCLUDED.record",
                    [(r.issue_id, r.resolution_attempt, sid, _json(r))
                     for r in unit.resolutions.values()],
                )  # fmt: skip
                cur.executemany(
                    "INSERT INTO quality_step_executions (session_id, step_id, attempt, "
                    "record) VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, step_id, "
                    "attempt) DO UPDATE SET record = EXCLUDED.record",
                    [(sid, s.step_id, s.attempt, _json(s)) for s in unit.steps.values()],
                )
                cur.executemany(
                    "INSERT INTO quality_fetch_log (fetch_id, session_id, record) "
                    "VALUES (%s, %s, %s)",
                    [(log.fetch_id, sid, _json(log)) for log in unit.fetch],
                )
        except self._errors as exc:
            raise _persist_error(exc) from exc

    # -- episode locks -------------------------------------------------------------------------

    def _try_lock(self, episode_number: int) -> bool:
        if episode_number in self._locked:
            return False
        try:
            row = self._lock_conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_SPACE, episode_number)
            ).fetchone()
        except self._errors as exc:
            raise _persist_error(exc) from exc
        if row and row[0]:
            self._locked.add(episode_number)
            return True
        return False

    def _unlock(self, episode_number: int) -> None:
        if episode_number in self._locked:
            self._locked.discard(episode_number)
            try:
                self._lock_conn.execute(
                    "SELECT pg_advisory_unlock(%s, %s)", (_LOCK_SPACE, episode_number)
                )
            except self._errors as exc:
                raise _persist_error(exc) from exc


def _read(model: type[_Model], record: Any, session_id: str, table: str) -> _Model:
    """A stored record as ``model``; a row of the wrong shape is the session's corruption."""
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        raise corrupt_state(
            session_id,
            store="postgres",
            where=f"table {table}",
            fix=_PG_FIX,
            cause=exc,
        ) from exc


def _check_row(session_id: str, version: int, record: Any) -> None:
    """The session row agrees with itself: its record is readable and has its version."""
    session = _read(Session, record, session_id, "quality_sessions")
    if session.state_version != version:
        problem = ValueError(
            f"the record has state_version {session.state_version}, the row {version}"
        )
        raise corrupt_state(
            session_id,
            store="postgres",
            where="table quality_sessions",
            fix=_PG_FIX,
            cause=problem,
        )


def _json(model: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(json.loads(model.model_dump_json()))


def _persist_error(exc: BaseException) -> StatePersistenceError:
    return StatePersistenceError(
        f"PostgreSQL failed ({type(exc).__name__}: {exc}); nothing of the unit was written. "
        "Check the server, then retry."
    )
