"""The contract every ``WorkflowStateStore`` passes: subclass ``WorkflowStateStoreContract``
in a test module and provide ``store`` (a fresh, empty store) and ``reopen`` (a *new* handle
over the same data, as another process would open it)::

    class TestMyStore(WorkflowStateStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path) as store:
                yield store

        @pytest.fixture
        def reopen(self, tmp_path):
            handles = []
            yield lambda: handles.append(MyStore(tmp_path)) or handles[-1]
            for handle in handles:
                handle.close()

Needs pytest (a dev dependency); nothing else imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from .errors import (
    AccessDeniedError,
    IssueNotFoundError,
    QualityInputError,
    SessionBusyError,
    SessionNotFoundError,
    StaleStateError,
)
from .ids import new_issue_id
from .models import (
    Issue,
    IssueResolution,
    IterationPolicy,
    ManuscriptFetchLog,
    Principal,
    StepExecution,
    TextRange,
    sha256_text,
)
from .stores import WorkflowStateStore

__all__ = ["ADMIN", "AKI", "BEN", "WorkflowStateStoreContract", "make_issue"]

AKI = Principal(user_id="aki")
BEN = Principal(user_id="ben")
ADMIN = Principal(user_id="root", admin=True)
TEXT = "吾輩は猫である。名前はまだ無い。"
HASH = sha256_text(TEXT)
Reopen = Callable[[], WorkflowStateStore]


def make_issue(session_id: str, n: int = 0, **changes: Any) -> Issue:
    """An issue on the first sentence of the contract's manuscript."""
    issue = Issue(
        issue_id=new_issue_id(datetime(2025, 9, 27, tzinfo=UTC), f"{n:08x}"),
        session_id=session_id,
        step_id=1,
        manuscript_hash=HASH,
        text_range=TextRange.of(TEXT, 0, 8),
        range_checksum=sha256_text(TEXT[:8]),
        category="typo",
        severity="low",
    )
    return issue.model_copy(update=changes) if changes else issue


def _fetch(session_id: str, n: int) -> ManuscriptFetchLog:
    return ManuscriptFetchLog(
        fetch_id=f"{n:032x}",
        session_id=session_id,
        manuscript_hash=HASH,
        tool_id="fetch_artifact",
        result="success",
        latency_ms=1,
        attempt_index=0,
    )


class WorkflowStateStoreContract:
    """Every clause of the ``WorkflowStateStore`` protocol, as tests."""

    @pytest.fixture
    def store(self) -> WorkflowStateStore:
        pytest.fail(
            "Subclass WorkflowStateStoreContract and define a `store` fixture returning a "
            "fresh store."
        )

    @pytest.fixture
    def reopen(self) -> Reopen:
        pytest.fail(
            "Subclass WorkflowStateStoreContract and define a `reopen` fixture returning a "
            "function that opens a new store over the same data."
        )

    def _begun(self, store: WorkflowStateStore, episode: int = 1) -> str:
        context = store.begin_session(episode, IterationPolicy(count=2), principal=AKI)
        store.commit()
        return context.session_id

    # -- sessions and locks --------------------------------------------------------------------

    def test_UNIT_QUALITY_120_001_begin_session_locks_and_starts_at_version_0(  # noqa: N802
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        context = store.begin_session(1, IterationPolicy(count=2), principal=AKI)
        session = context.session
        assert (session.state_version, session.lock_status, session.current_status) == (
            0,
            "held",
            "active",
        )
        assert session.session_id.startswith("QC_EP001_")
        other = reopen()
        assert other.sessions(1, principal=AKI) == []  # not visible before commit
        store.commit()
        stored = other.get_session(session.session_id, principal=AKI)
        assert stored == session
        with pytest.raises(SessionBusyError):
            other.begin_session(1, IterationPolicy(), principal=AKI)
        with pytest.raises(SessionBusyError):
            store.begin_session(1, IterationPolicy(), principal=AKI)
        other.begin_session(2, IterationPolicy(), principal=BEN)  # another episode is free
        other.rollback()

    def test_rollback_of_begin_releases_the_lock_and_leaves_nothing(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        store.begin_session(3, IterationPolicy(), principal=AKI)
        store.rollback()
        assert store.sessions(3, principal=ADMIN) == []
        other = reopen()
        other.begin_session(3, IterationPolicy(), principal=AKI)
        other.commit()
        assert len(store.sessions(3, principal=AKI)) == 1

    def test_an_active_unlocked_session_is_resumed_not_begun_again(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        session_id = self._begun(store)
        store.close()  # the process went away: the lock goes, the session stays active
        other = reopen()
        assert other.get_session(session_id, principal=AKI).lock_status == "released"
        with pytest.raises(SessionBusyError, match="resume it"):
            other.begin_session(1, IterationPolicy(), principal=AKI)
        context = other.resume_session(session_id, principal=AKI)
        assert context.resumed and context.session.state_version == 2
        other.commit()
        assert other.get_session(session_id, principal=AKI).lock_status == "held"
        third = reopen()
        with pytest.raises(SessionBusyError):
            third.resume_session(session_id, principal=AKI)

    def test_end_session_releases_and_a_new_session_becomes_latest(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        first = self._begun(store)
        store.end_session(first, "completed")
        store.commit()
        ended = store.get_session(first, principal=AKI)
        assert (ended.current_status, ended.lock_status) == ("completed", "released")
        other = reopen()
        second = other.begin_session(1, IterationPolicy(count=1), principal=AKI).session_id
        other.commit()
        assert second != first
        latest = store.latest_session(1, principal=AKI)
        assert latest is not None and latest.session_id == second
        with pytest.raises(QualityInputError, match="completed"):
            store.resume_session(first, principal=AKI)
        with pytest.raises(QualityInputError):
            store.end_session(second, "paused")  # type: ignore[arg-type]

    def test_update_session_keeps_the_policy_history(self, store: WorkflowStateStore) -> None:
        session_id = self._begun(store)
        store.update_session(session_id, iteration_policy=IterationPolicy(count=5))
        store.update_session(session_id, manuscript_hash=sha256_text("new"))
        store.commit()
        session = store.get_session(session_id, principal=AKI)
        assert [p.count for p in session.policy_history] == [2, 5]
        assert session.iteration_policy.count == 5
        assert session.manuscript_hash == sha256_text("new")

    def test_a_malformed_manuscript_hash_is_refused_and_locks_nothing(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        secret = "the opening line of chapter 3"
        with pytest.raises(QualityInputError) as refused:
            store.begin_session(4, IterationPolicy(), principal=AKI, manuscript_hash=secret)
        assert secret not in str(refused.value)  # the value may be manuscript text
        store.rollback()
        other = reopen()  # the episode is free, for another handle as for this one
        other.begin_session(4, IterationPolicy(), principal=AKI)
        other.rollback()
        session_id = self._begun(store)
        with pytest.raises(QualityInputError) as refused:
            store.update_session(session_id, manuscript_hash=secret)
        assert secret not in str(refused.value)
        with pytest.raises(QualityInputError):
            store.update_session(session_id, iteration_policy={"count": 3})  # type: ignore[arg-type]
        store.commit()
        assert store.get_session(session_id, principal=AKI).iteration_policy.count == 2

    # -- units ---------------------------------------------------------------------------------

    def test_a_unit_is_all_or_nothing_and_bumps_the_version(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        session_id = self._begun(store)
        issue = make_issue(session_id)
        store.record_issue(issue)
        store.record_issue_resolution(
            IssueResolution(issue_id=issue.issue_id, resolution_attempt=1, tool_used="replace")
        )
        store.record_step_execution(StepExecution(session_id=session_id, step_id=1, name="check"))
        store.append_fetch_log(_fetch(session_id, 1))
        other = reopen()
        assert other.issues(session_id, principal=AKI) == []
        store.rollback()
        assert other.issues(session_id, principal=AKI) == []
        assert other.fetch_log(session_id, principal=AKI) == []
        store.record_issue(issue)
        store.record_issue_resolution(
            IssueResolution(issue_id=issue.issue_id, resolution_attempt=1, tool_used="replace")
        )
        store.record_step_execution(StepExecution(session_id=session_id, step_id=1, name="check"))
        store.append_fetch_log(_fetch(session_id, 1))
        store.commit()
        assert other.issues(session_id, principal=AKI) == [issue]
        assert len(other.resolutions(session_id, principal=AKI)) == 1
        assert len(other.step_executions(session_id, principal=AKI)) == 1
        assert len(other.fetch_log(session_id, principal=AKI)) == 1
        assert other.get_session(session_id, principal=AKI).state_version == 1
        store.commit()  # an empty unit writes nothing
        assert other.get_session(session_id, principal=AKI).state_version == 1

    def test_records_are_upserted_by_their_keys(self, store: WorkflowStateStore) -> None:
        session_id = self._begun(store)
        issue = make_issue(session_id)
        store.record_issue(issue)
        store.record_issue(make_issue(session_id, 1))
        store.commit()
        store.record_issue(issue.model_copy(update={"state": "InProgress"}))
        res = IssueResolution(issue_id=issue.issue_id, resolution_attempt=1)
        store.record_issue_resolution(res)
        store.record_step_execution(StepExecution(session_id=session_id, step_id=1, name="a"))
        store.commit()
        store.record_issue_resolution(res.model_copy(update={"verification_status": "passed"}))
        store.record_step_execution(StepExecution(session_id=session_id, step_id=1, name="b"))
        store.record_step_execution(
            StepExecution(session_id=session_id, step_id=1, attempt=2, name="c")
        )
        store.commit()
        issues = {i.issue_id: i for i in store.issues(session_id, principal=AKI)}
        assert len(issues) == 2 and issues[issue.issue_id].state == "InProgress"
        assert [r.verification_status for r in store.resolutions(session_id, principal=AKI)] == [
            "passed"
        ]
        assert [s.name for s in store.step_executions(session_id, principal=AKI)] == ["b", "c"]
        assert store.issue(issue.issue_id, principal=AKI).state == "InProgress"

    def test_a_stale_writer_is_refused_and_writes_nothing(
        self, store: WorkflowStateStore, reopen: Reopen
    ) -> None:
        session_id = self._begun(store)
        other = reopen()  # another writer (failover) moves the session on
        other.record_issue(make_issue(session_id, 1))
        other.commit()
        store.record_issue(make_issue(session_id, 2))
        with pytest.raises(StaleStateError) as caught:
            store.commit()
        assert (caught.value.expected, caught.value.actual) == (0, 1)
        ids = [i.issue_id for i in store.issues(session_id, principal=AKI)]
        assert ids == [make_issue(session_id, 1).issue_id]
        assert store.get_session(session_id, principal=AKI).state_version == 1

    def test_a_unit_writes_one_session(self, store: WorkflowStateStore, reopen: Reopen) -> None:
        first = self._begun(store, 1)
        other = reopen()
        second = self._begun(other, 2)
        store.record_issue(make_issue(first))
        with pytest.raises(QualityInputError, match="one session"):
            store.record_issue(make_issue(second, 1))
        with pytest.raises(QualityInputError, match="commit or roll back"):
            store.begin_session(4, IterationPolicy(), principal=AKI)
        store.commit()

    # -- reads ---------------------------------------------------------------------------------

    def test_history_is_readable_by_its_initiator_and_admins_only(
        self, store: WorkflowStateStore
    ) -> None:
        session_id = self._begun(store)
        store.record_issue(make_issue(session_id))
        store.commit()
        assert store.get_session(session_id, principal=ADMIN).initiator == "aki"
        assert len(store.issues(session_id, principal=ADMIN)) == 1
        for read in (store.get_session, store.issues, store.resolutions, store.fetch_log):
            with pytest.raises(AccessDeniedError):
                read(session_id, principal=BEN)
            with pytest.raises(AccessDeniedError):
                read(session_id, principal=None)  # type: ignore[arg-type]
        with pytest.raises(AccessDeniedError):
            store.issue(make_issue(session_id).issue_id, principal=BEN)
        assert store.sessions(principal=BEN) == []
        assert store.latest_session(1, principal=BEN) is None
        assert [s.session_id for s in store.sessions(principal=ADMIN)] == [session_id]

    @pytest.mark.parametrize("bad", ["../etc/passwd", "", "QC_EP001", 7])
    def test_bad_session_ids_are_refused(self, store: WorkflowStateStore, bad: Any) -> None:
        with pytest.raises(QualityInputError):
            store.get_session(bad, principal=ADMIN)

    def test_missing_things_are_typed_errors(self, store: WorkflowStateStore) -> None:
        with pytest.raises(SessionNotFoundError):
            store.get_session("QC_EP001_20250101_0000", principal=ADMIN)
        with pytest.raises(SessionNotFoundError):
            store.record_issue(make_issue("QC_EP001_20250101_0000"))
        store.rollback()
        with pytest.raises(IssueNotFoundError):
            store.record_issue_resolution(
                IssueResolution(issue_id=make_issue("x").issue_id, resolution_attempt=1)
            )
        with pytest.raises(IssueNotFoundError):
            store.issue(make_issue("x").issue_id, principal=ADMIN)
        with pytest.raises(QualityInputError):
            store.issue("EXPR-002", principal=ADMIN)
        with pytest.raises(QualityInputError):
            store.record_issue({"issue_id": "x"})  # type: ignore[arg-type]
        with pytest.raises(QualityInputError):
            store.begin_session(0, IterationPolicy(), principal=AKI)
        with pytest.raises(AccessDeniedError):
            store.begin_session(1, IterationPolicy(), principal="aki")  # type: ignore[arg-type]
