"""What only the JSON-file state store shows: its files hold hashes, never manuscript text;
they are private; a damaged document is a QC-009 error that says what to do."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from flowkit.quality.errors import StatePersistenceError, qc_code_for
from flowkit.quality.models import IterationPolicy
from flowkit.quality.store_contract import AKI, TEXT, make_issue
from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore


def test_files_hold_hashes_never_text_and_are_private(tmp_path: Path) -> None:
    with JsonWorkflowStateStore(tmp_path) as store:
        session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
        store.commit()
        store.record_issue(make_issue(session_id))
        store.commit()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert TEXT[:8] not in path.read_text(encoding="utf-8", errors="replace")
    document = tmp_path / "sessions" / f"{session_id}.json"
    assert stat.S_IMODE(document.stat().st_mode) == 0o600
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_damaged_document_is_qc_009(tmp_path: Path) -> None:
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
        store.commit()
    (tmp_path / "sessions" / f"{session_id}.json").write_text("{half a docu")
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        with pytest.raises(StatePersistenceError, match="restore the file") as caught:
            store.get_session(session_id, principal=AKI)
        assert qc_code_for(caught.value) == "QC-009"


def test_an_unwritable_folder_is_qc_009(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StatePersistenceError, match="Cannot create"):
        JsonWorkflowStateStore(blocker / "store")
