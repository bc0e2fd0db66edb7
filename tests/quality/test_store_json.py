"""What only the JSON-file state store shows: its files hold hashes, never manuscript text;
they are private; a damaged document is a QC-009 error that says what to do."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _edited(change: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def edit(raw: bytes) -> bytes:
        document = json.loads(raw)
        change(document)
        return json.dumps(document).encode()

    return edit


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "cut short": lambda raw: raw[: len(raw) // 2],
    "not UTF-8": lambda raw: b"\xff\xfe" + raw,
    "nested too deeply": lambda _: b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "a JSON list": lambda _: b"[]",
    "no session": _edited(lambda d: d.pop("session")),
    "a session of the wrong shape": _edited(lambda d: d.update(session={"x": 1})),
    "issues as a list": _edited(lambda d: d.update(issues=[1, 2])),
    "an issue of the wrong shape": _edited(lambda d: d.update(issues={"ISSUE-1": {"x": 1}})),
    "steps as a dict": _edited(lambda d: d.update(steps={"a": 1})),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
def test_a_damaged_document_is_qc_009(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        session_id = store.begin_session(1, IterationPolicy(), principal=AKI).session_id
        store.commit()
        store.record_issue(make_issue(session_id))
        store.commit()
        other = store.begin_session(2, IterationPolicy(), principal=AKI).session_id
        store.commit()
    path = tmp_path / "sessions" / f"{session_id}.json"
    path.write_bytes(damage(path.read_bytes()))
    with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
        for read in (
            lambda: store.get_session(session_id, principal=AKI),
            lambda: store.issues(session_id, principal=AKI),
            lambda: store.sessions(1, principal=AKI),
        ):
            with pytest.raises(StatePersistenceError, match="restore the file") as caught:
                read()
            assert qc_code_for(caught.value) == "QC-009"
        assert store.get_session(other, principal=AKI) is not None  # only that session
        # Listing every episode shows the readable ones (the damaged one is logged).
        assert [s.session_id for s in store.sessions(None, principal=AKI)] == [other]


def test_an_unwritable_folder_is_qc_009(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StatePersistenceError, match="Cannot create"):
        JsonWorkflowStateStore(blocker / "store")
