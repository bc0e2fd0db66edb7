"""The quality package: lazy, quiet, no optional driver imported by default, its audit
archive, and the flow on the PostgreSQL store."""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog

from flowkit.quality.app import QualityChecker
from flowkit.quality.audit import AuditLog, ChecksLog
from flowkit.quality.demo import demo_file, editor_llm
from flowkit.quality.errors import QualityInputError
from flowkit.quality.models import IterationPolicy

from ._pg import pg_database
from .conftest import AKI


def test_importing_flowkit_and_the_json_store_never_imports_psycopg() -> None:
    code = (
        "import sys, flowkit, flowkit.quality, flowkit.quality.stores, flowkit.quality.app\n"
        "from flowkit.quality.stores import JsonWorkflowStateStore\n"
        "assert 'psycopg' not in sys.modules, 'psycopg imported'\n"
        "assert 'diff_match_patch' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    bare = subprocess.run(
        [sys.executable, "-c", "import sys, flowkit; assert 'flowkit.quality' not in sys.modules"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bare.returncode == 0, bare.stderr


def test_a_check_logs_nothing_at_info_with_manuscript_text(
    make_checker: Callable[..., QualityChecker], episode_ja: Path
) -> None:
    with structlog.testing.capture_logs() as logs:
        make_checker().check(episode_ja, episode=1, policy=IterationPolicy(count=1))
    text = episode_ja.read_text(encoding="utf-8")
    for entry in logs:
        assert not any(isinstance(v, str) and len(v) > 8 and v in text for v in entry.values())


def test_audit_months_older_than_90_days_are_archived(tmp_path: Path) -> None:
    now = [datetime(2025, 5, 10, tzinfo=UTC)]
    audit = AuditLog(tmp_path, clock=lambda: now[0])
    audit.record("session_started", session_id="QC_EP001_20250510_0900", performed_by="aki")
    now[0] = datetime(2025, 9, 27, tzinfo=UTC)
    audit.record("session_started", session_id="QC_EP001_20250927_0900", performed_by="aki")
    assert [e.timestamp.month for e in audit.entries()] == [5, 9]
    archived = audit.archive(now=datetime(2025, 9, 27, tzinfo=UTC))
    assert [p.name for p in archived] == ["202505.log.gz"]
    assert b"QC_EP001_20250510_0900" in gzip.decompress(archived[0].read_bytes())
    assert [e.timestamp.month for e in audit.entries()] == [9]
    assert audit.archive(now=datetime(2025, 9, 27, tzinfo=UTC)) == []
    with pytest.raises(QualityInputError):
        audit.entries("2025-05")


def test_checks_log_refuses_bad_names(tmp_path: Path) -> None:
    log = ChecksLog(tmp_path, fsync=False)
    with pytest.raises(QualityInputError):
        log.write("../etc", "check", "input", {})
    with pytest.raises(QualityInputError):
        log.write("QC_EP001_20250101_0000", "../x", "input", {})
    with pytest.raises(QualityInputError):
        log.write("QC_EP001_20250101_0000", "check", "other", {})


def test_the_flow_runs_on_the_postgres_store(tmp_path: Path) -> None:
    from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

    with pg_database() as dsn:
        store = PostgresWorkflowStateStore(dsn)
        with QualityChecker(
            tmp_path / "ws", principal=AKI, llm=editor_llm(), store=store
        ) as checker:
            outcome = checker.check(demo_file("episode_en.txt"), episode=2,
                                    policy=IterationPolicy(count=2))  # fmt: skip
            assert outcome.result.done
            issues = checker.store.issues(outcome.session_id, principal=AKI)
            assert sorted(i.state for i in issues) == [
                "New", "Recurrence", "Resolved", "Resolved", "Resolved"]  # fmt: skip
        assert not (tmp_path / "ws" / "state").exists()  # nothing went to the JSON store


def test_the_flow_without_services_as_deps_says_how_to_run_it() -> None:
    from flowkit import Runner
    from flowkit.quality.workflow import flow

    result = Runner(flow).start("QC_EP001_20250101_0000", {"session_id": "QC_EP001_20250101_0000"})
    assert result.status == "failed" and result.node == "begin_session"
    assert result.error is not None and "deps" in result.error.message
