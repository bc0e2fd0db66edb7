"""The JSON-file state store writes a commit as one journal line beside the session document
(O(change), not O(session)): lines fold into a new document as the journal grows, a torn last
line is skipped and cut off with a warning, damage anywhere else is QC-009, a document of the
previous layout is read and migrated, and a handle reads a session's document only once."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog

from flowkit.quality.errors import CorruptStateError, qc_code_for
from flowkit.quality.models import IssueResolution, IterationPolicy
from flowkit.quality.store_contract import AKI, make_issue
from flowkit.quality.stores import _session_files
from flowkit.quality.stores._session_data import Document
from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

DATA = Path(__file__).with_name("data")
#: Written by flowkit before the journal (layout 1): episode 3, three issues, one of them
#: InProgress with a resolution, a step, a fetch log entry, state_version 3, lock released.
LAYOUT_1 = DATA / "session_layout1.json"


def _clock() -> datetime:
    return datetime(2025, 9, 27, 9, 30, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JsonWorkflowStateStore]:
    opened = JsonWorkflowStateStore(tmp_path, fsync=False, clock=_clock)
    try:
        yield opened
    finally:
        opened.close()


def _session(store: JsonWorkflowStateStore, units: int = 0) -> str:
    """A session on episode 1 with ``units`` committed units of one issue each."""
    sid = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
    store.commit()
    for n in range(units):
        store.record_issue(make_issue(sid, n))
        store.commit()
    return sid


def _let_go(store: JsonWorkflowStateStore, sid: str) -> None:
    """Release the session's episode lock so another handle can resume it."""
    store.release_session(sid)
    store.commit()


def _files(store: JsonWorkflowStateStore, sid: str) -> tuple[Path, Path]:
    return store.root / "sessions" / f"{sid}.json", store.root / "sessions" / f"{sid}.jsonl"


def _fresh(store: JsonWorkflowStateStore) -> JsonWorkflowStateStore:
    return JsonWorkflowStateStore(store.root, fsync=False, clock=_clock)


def test_a_commit_appends_one_line_and_leaves_the_document_alone(
    store: JsonWorkflowStateStore,
) -> None:
    sid = _session(store)
    document, journal = _files(store, sid)
    before = document.read_bytes()
    for n in range(3):
        store.record_issue(make_issue(sid, n))
        store.commit()
    assert document.read_bytes() == before  # never rewritten by these commits
    lines = journal.read_bytes().splitlines()
    assert len(lines) == 3
    assert [json.loads(line)["session"]["state_version"] for line in lines] == [1, 2, 3]
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 3
        assert other.get_session(sid, principal=AKI).state_version == 3


def test_the_journal_folds_into_a_new_document_as_it_grows(
    store: JsonWorkflowStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_session_files, "COMPACT_AT_BYTES", 4096)
    sid = _session(store, units=40)
    document, journal = _files(store, sid)
    assert journal.stat().st_size < 2 * max(4096, document.stat().st_size)
    held = Document.model_validate_json(document.read_bytes())
    assert held.format_version == 2 and held.session.state_version > 1
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 40
        assert other.get_session(sid, principal=AKI).state_version == 40


def test_a_handle_follows_commits_and_compactions_of_another(
    store: JsonWorkflowStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_session_files, "COMPACT_AT_BYTES", 4096)
    sid = _session(store, units=2)
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 2  # cached by this handle now
        for n in range(2, 30):  # store compacts on the way
            store.record_issue(make_issue(sid, n))
            store.commit()
            assert len(other.issues(sid, principal=AKI)) == n + 1
        _let_go(store, sid)
        other.resume_session(sid, principal=AKI)  # the other handle writes on from there
        other.record_issue(make_issue(sid, 99))
        other.commit()
    assert len(store.issues(sid, principal=AKI)) == 31


def test_lines_left_by_a_compaction_cut_short_are_skipped(
    store: JsonWorkflowStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _session(store, units=3)
    _, journal = _files(store, sid)
    left = journal.read_bytes()  # what the journal held when the compaction began
    monkeypatch.setattr(_session_files, "COMPACT_AT_BYTES", 0)
    store.record_issue(make_issue(sid, 3))
    store.release_session(sid)
    store.commit()  # folds lines 1-3 and this unit into the document
    assert journal.read_bytes() == b""
    journal.write_bytes(left)  # as if the process died before emptying the journal
    monkeypatch.setattr(_session_files, "COMPACT_AT_BYTES", 1 << 30)
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 4
        assert other.get_session(sid, principal=AKI).state_version == 4
        other.resume_session(sid, principal=AKI)
        other.record_issue(make_issue(sid, 4))
        other.commit()  # appended after the skipped lines
    with _fresh(store) as third:
        assert len(third.issues(sid, principal=AKI)) == 5
        assert third.get_session(sid, principal=AKI).state_version == 6  # closing released it


def test_a_torn_last_line_is_skipped_then_cut_off_with_a_warning(
    store: JsonWorkflowStateStore,
) -> None:
    sid = _session(store, units=1)
    store.release_session(sid)
    store.commit()
    _, journal = _files(store, sid)
    whole = journal.read_bytes()
    store.record_issue(make_issue(sid, 2))
    store.commit()
    third = journal.read_bytes()[len(whole) :]
    journal.write_bytes(whole + third[: len(third) // 2])  # the crash cut line 3 short
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 1  # never a wrong state
        assert other.get_session(sid, principal=AKI).state_version == 2
        other.resume_session(sid, principal=AKI)
        other.record_issue(make_issue(sid, 7))
        with structlog.testing.capture_logs() as logs:
            other.commit()
    torn = [e for e in logs if e["event"] == "quality_store_torn_tail"]
    assert torn == [
        {"event": "quality_store_torn_tail", "log_level": "warning", "session_id": sid,
         "line": 3, "bytes": len(third) // 2}
    ]  # fmt: skip
    assert journal.read_bytes().endswith(b"\n")
    with _fresh(store) as reader:
        ids = {i.issue_id for i in reader.issues(sid, principal=AKI)}
    assert ids == {make_issue(sid, n).issue_id for n in (0, 7)}


def _damaged(store: JsonWorkflowStateStore, sid: str, edit: object) -> None:
    _, journal = _files(store, sid)
    lines = journal.read_bytes().splitlines(keepends=True)
    assert callable(edit)
    journal.write_bytes(b"".join(edit(lines)))


@pytest.mark.parametrize(
    "edit",
    [
        lambda lines: [lines[0], lines[1].replace(b'"low"', b'"high"'), lines[2]],  # checksum
        lambda lines: [lines[0], lines[1][:40] + b"\n", lines[2]],  # cut short, not last
        lambda lines: [lines[0], lines[0], lines[1], lines[2]],  # a version twice
        lambda lines: [lines[0], lines[2]],  # a version missing
        lambda lines: [lines[0], lines[1], lines[2].rstrip(b"\n") + b"{}\n"],  # run together
    ],
    ids=["checksum", "cut-in-the-middle", "repeated", "missing", "run-together"],
)
def test_a_damaged_journal_line_is_qc_009(store: JsonWorkflowStateStore, edit: object) -> None:
    sid = _session(store, units=3)
    _damaged(store, sid, edit)
    with _fresh(store) as other, structlog.testing.capture_logs() as logs:
        with pytest.raises(CorruptStateError, match=r"\.jsonl:\d") as caught:
            other.issues(sid, principal=AKI)
        assert qc_code_for(caught.value) == "QC-009"
        assert caught.value.session_id == sid
    assert [e["event"] for e in logs] == ["quality_store_corrupt"]


def test_a_document_of_the_previous_layout_is_read_and_migrated(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    sid = "QC_EP003_20250927_0930"
    shutil.copy(LAYOUT_1, sessions / f"{sid}.json")
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        session = store.get_session(sid, principal=AKI)
        assert (session.state_version, session.lock_status) == (3, "released")
        issues = store.issues(sid, principal=AKI)
        assert [i.state for i in issues] == ["New", "InProgress", "New"]
        assert [r.tool_used for r in store.resolutions(sid, principal=AKI)] == ["replace_text"]
        assert len(store.step_executions(sid, principal=AKI)) == 1
        assert len(store.fetch_log(sid, principal=AKI)) == 1
        assert store.issue(issues[1].issue_id, principal=AKI) == issues[1]
        store.resume_session(sid, principal=AKI)
        store.record_issue_resolution(
            IssueResolution(issue_id=issues[1].issue_id, resolution_attempt=2)
        )
        store.commit()  # the first commit rewrites the document in the new layout
    held = json.loads((sessions / f"{sid}.json").read_bytes())
    assert held["format_version"] == 2 and held["session"]["state_version"] == 4
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        assert [r.resolution_attempt for r in store.resolutions(sid, principal=AKI)] == [1, 2]
        assert store.issues(sid, principal=AKI) == issues


def test_a_journal_left_by_a_removed_session_is_not_read_as_a_new_one(
    store: JsonWorkflowStateStore,
) -> None:
    sid = _session(store, units=2)
    store.end_session(sid, "failed")
    store.commit()
    document, journal = _files(store, sid)
    document.unlink()  # the session dropped by hand, its journal forgotten
    assert journal.exists()
    again = _session(store)
    assert again == sid  # same episode, same clock: the same id
    assert store.issues(sid, principal=AKI) == []
    with _fresh(store) as other:
        assert other.issues(sid, principal=AKI) == []
        assert other.get_session(sid, principal=AKI).state_version == 0


def test_a_handle_reads_a_sessions_document_once_then_only_new_lines(
    store: JsonWorkflowStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _session(store, units=50)
    reads: list[bytes] = []
    parse = Document.model_validate_json

    def counted(raw: bytes) -> Document:
        reads.append(raw)
        return parse(raw)

    monkeypatch.setattr(Document, "model_validate_json", counted)
    with _fresh(store) as other:
        for issue in other.issues(sid, principal=AKI):  # a plan or verdict per issue
            assert other.issue(issue.issue_id, principal=AKI) == issue
            other.get_session(sid, principal=AKI)
        store.record_issue(make_issue(sid, 50))
        store.commit()
        assert len(other.issues(sid, principal=AKI)) == 51
    assert len(reads) == 1


def test_a_last_line_missing_only_its_newline_is_kept(store: JsonWorkflowStateStore) -> None:
    sid = _session(store, units=2)
    _let_go(store, sid)
    _, journal = _files(store, sid)
    journal.write_bytes(journal.read_bytes()[:-1])  # the write stopped at its last byte
    with _fresh(store) as other:
        assert len(other.issues(sid, principal=AKI)) == 2  # whole and intact: committed
        other.resume_session(sid, principal=AKI)
        other.record_issue(make_issue(sid, 2))
        with structlog.testing.capture_logs() as logs:
            other.commit()  # writes the missing newline first
        assert logs == []
    assert journal.read_bytes().endswith(b"\n")
    with _fresh(store) as reader:
        assert len(reader.issues(sid, principal=AKI)) == 3
        assert len(journal.read_bytes().splitlines()) == 5  # 2 units, release, resume, close
