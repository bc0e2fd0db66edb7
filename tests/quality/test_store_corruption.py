"""Seed 003 §6.3 on both state stores: a damaged session document (JSON file) or row
(PostgreSQL) met by a write rolls its unit back, lets go of the episode lock, raises QC-009
and logs one ``quality_store_corrupt`` error for the administrator, with no stored content."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from flowkit.quality.errors import (
    CorruptStateError,
    SessionBusyError,
    StatePersistenceError,
    qc_code_for,
)
from flowkit.quality.models import IterationPolicy
from flowkit.quality.store_contract import AKI, make_issue

from ._damage import CONTENT, Backend
from ._pg import pg_database


@pytest.fixture(params=["json", "pg"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "json":
        made = Backend("json", str(tmp_path / "store"))
        yield made
        made.close()
    else:
        with pg_database() as dsn:
            made = Backend("pg", dsn)
            yield made
            made.close()  # before the database is dropped


def _notices(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == "quality_store_corrupt"]


def _assert_one_notice(logs: list[dict[str, Any]], session_id: str) -> None:
    notices = _notices(logs)
    assert len(notices) == 1, logs
    assert notices[0]["log_level"] == "error"
    assert notices[0]["session_id"] == session_id
    assert CONTENT not in repr(logs)  # no stored content in any line


def _assert_qc_009(caught: pytest.ExceptionInfo[StatePersistenceError], session_id: str) -> None:
    assert isinstance(caught.value, CorruptStateError)
    assert caught.value.session_id == session_id
    assert qc_code_for(caught.value) == "QC-009"
    assert CONTENT not in str(caught.value)


def _finished_session(backend: Backend, episode: int = 1) -> str:
    store = backend.open()
    session_id = store.begin_session(episode, IterationPolicy(), principal=AKI).session_id
    store.commit()
    store.end_session(session_id, "completed")
    store.commit()
    return session_id


def test_begin_session_on_damaged_state_is_qc_009_and_frees_the_episode(
    backend: Backend,
) -> None:
    session_id = _finished_session(backend)
    backend.damage(session_id)
    store, other = backend.open(), backend.open()
    with (
        structlog.testing.capture_logs() as logs,
        pytest.raises(StatePersistenceError) as caught,
    ):
        store.begin_session(1, IterationPolicy(), principal=AKI)
    _assert_qc_009(caught, session_id)
    _assert_one_notice(logs, session_id)
    # The lock went with the failure: the same handle and another one get QC-009 again, not busy.
    for handle in (store, other):
        with pytest.raises(StatePersistenceError) as again:
            handle.begin_session(1, IterationPolicy(), principal=AKI)
        assert not isinstance(again.value, SessionBusyError)
        _assert_qc_009(again, session_id)
    backend.repair(session_id)
    fresh = store.begin_session(1, IterationPolicy(), principal=AKI)
    store.commit()
    assert fresh.session_id != session_id
    with pytest.raises(SessionBusyError):  # the lock works again
        other.begin_session(1, IterationPolicy(), principal=AKI)


def test_a_commit_meeting_damaged_state_rolls_back_and_frees_the_episode(
    backend: Backend,
) -> None:
    store = backend.open()
    session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
    store.commit()
    store.record_issue(make_issue(session_id))
    backend.damage(session_id)
    with structlog.testing.capture_logs() as logs:
        with pytest.raises(StatePersistenceError) as caught:
            store.commit()
        store.close()  # nothing left to report again
    _assert_qc_009(caught, session_id)
    _assert_one_notice(logs, session_id)
    backend.repair(session_id)
    store.commit()  # the failed unit is gone: nothing is written now
    reader = backend.open()
    assert reader.issues(session_id, principal=AKI) == []
    assert reader.get_session(session_id, principal=AKI).state_version == 0
    reader.resume_session(session_id, principal=AKI)  # the episode lock is free
    reader.commit()


def test_a_commit_keeps_nothing_staged_when_the_damage_stays(backend: Backend) -> None:
    store = backend.open()
    session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
    store.commit()
    store.update_session(session_id, iteration_policy=IterationPolicy(count=2))
    store.record_issue(make_issue(session_id))
    backend.damage(session_id)
    with pytest.raises(StatePersistenceError) as caught:
        store.commit()
    _assert_qc_009(caught, session_id)
    backend.repair(session_id)
    store.commit()
    assert store.issues(session_id, principal=AKI) == []
    assert backend.open().resume_session(session_id, principal=AKI).resumed  # not busy


def test_reading_damaged_state_is_qc_009_with_one_notice(backend: Backend) -> None:
    session_id = _finished_session(backend)
    backend.damage(session_id)
    store = backend.open()
    reads: list[Callable[[], object]] = [
        lambda: store.get_session(session_id, principal=AKI),
        lambda: store.issues(session_id, principal=AKI),
        lambda: store.sessions(1, principal=AKI),
    ]
    for read in reads:
        with (
            structlog.testing.capture_logs() as logs,
            pytest.raises(StatePersistenceError) as caught,
        ):
            read()
        _assert_qc_009(caught, session_id)
        _assert_one_notice(logs, session_id)


def _pg_store(dsn: str) -> Any:
    from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

    return PostgresWorkflowStateStore(dsn)


def test_a_damaged_record_row_in_postgres_is_qc_009() -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    with pg_database() as dsn:
        store = _pg_store(dsn)
        try:
            session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
            store.commit()
            store.record_issue(make_issue(session_id))
            store.commit()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("UPDATE quality_issues SET record = %s", (Jsonb([CONTENT]),))
            with (
                structlog.testing.capture_logs() as logs,
                pytest.raises(StatePersistenceError) as caught,
            ):
                store.issues(session_id, principal=AKI)
            _assert_qc_009(caught, session_id)
            _assert_one_notice(logs, session_id)
        finally:
            store.close()


def test_a_postgres_row_disagreeing_with_its_record_is_qc_009_not_stale_forever() -> None:
    import psycopg

    with pg_database() as dsn:
        store = _pg_store(dsn)
        try:
            session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
            store.commit()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("UPDATE quality_sessions SET state_version = 7")
            store.record_issue(make_issue(session_id))
            with pytest.raises(StatePersistenceError) as caught:
                store.commit()
            _assert_qc_009(caught, session_id)
            store.commit()  # rolled back: nothing left to write
            assert store.issues(session_id, principal=AKI) == []
        finally:
            store.close()


def test_one_damaged_session_does_not_hide_the_others(backend: Backend) -> None:
    """Damage stays with its session and its episode: another episode's issue is read by id,
    and the listing of every session shows the readable ones (with a warning for the
    damaged one), while the damaged episode's own listing still raises QC-009."""
    damaged = _finished_session(backend, episode=1)
    store = backend.open()
    healthy = store.begin_session(2, IterationPolicy(), principal=AKI).session_id
    store.commit()
    issue = make_issue(healthy)
    store.record_issue(issue)
    store.commit()
    backend.damage(damaged)
    fresh = backend.open()  # nothing read yet, as in a new process
    assert fresh.issue(issue.issue_id, principal=AKI).issue_id == issue.issue_id
    with structlog.testing.capture_logs() as logs:
        listed = backend.open().sessions(principal=AKI)
    assert [s.session_id for s in listed] == [healthy]
    unreadable = [e for e in logs if e["event"] == "quality_session_unreadable"]
    assert [e["session_id"] for e in unreadable] == [damaged]
    assert CONTENT not in repr(logs)
    with pytest.raises(StatePersistenceError) as caught:
        backend.open().sessions(1, principal=AKI)
    _assert_qc_009(caught, damaged)


def test_an_issue_missing_beside_a_damaged_json_session_is_not_called_missing(
    tmp_path: Path,
) -> None:
    """The issue asked for may be in the damaged document: QC-009, not "no such issue"."""
    backend = Backend("json", str(tmp_path / "store"))
    damaged = _finished_session(backend)
    backend.damage(damaged)
    with pytest.raises(StatePersistenceError) as caught:
        backend.open().issue(make_issue(damaged).issue_id, principal=AKI)
    _assert_qc_009(caught, damaged)
    backend.close()


def test_a_copy_beside_the_session_documents_is_no_session(tmp_path: Path) -> None:
    backend = Backend("json", str(tmp_path / "store"))
    session_id = _finished_session(backend)
    sessions = tmp_path / "store" / "sessions"
    copy = sessions / f"{session_id}_backup.json"
    copy.write_bytes((sessions / f"{session_id}.json").read_bytes())
    listed = backend.open().sessions(principal=AKI)
    assert [s.session_id for s in listed] == [session_id]
    backend.close()
