"""The state stores across processes: two processes begin a session on one episode (one
gets busy), a process killed with SIGKILL in the middle of a unit, or while committing
units, leaves every unit whole or absent and the episode unlocked (a JSON journal line half
written is skipped, then cut off by the next commit), and a process that met damaged state
does not keep other processes out of the episode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from flowkit.quality.errors import StatePersistenceError
from flowkit.quality.models import IterationPolicy, Principal
from flowkit.quality.stores import WorkflowStateStore

from ._damage import Backend
from ._pg import pg_database

CHILD = Path(__file__).with_name("_store_child.py")
AKI = Principal(user_id="aki")
pytestmark = pytest.mark.slow


@pytest.fixture(params=["json", "pg"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "json":
        yield "json", str(tmp_path / "store")
    else:
        with pg_database() as dsn:
            yield "pg", dsn


def _open(kind: str, where: str) -> WorkflowStateStore:
    if kind == "json":
        from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

        return JsonWorkflowStateStore(where, fsync=False)
    from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

    return PostgresWorkflowStateStore(where)


def _spawn(
    kind: str, where: str, command: str, folder: Path, *extra: str
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(CHILD.parent.parent)}
    return subprocess.Popen(
        [sys.executable, str(CHILD), kind, where, command, str(folder), *extra], env=env
    )


def _wait(path: Path, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert proc.poll() is None, f"child exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def test_two_processes_begin_a_session_on_one_episode_one_gets_busy(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    kind, where = backend
    _open(kind, where).close()  # create the layout / tables first
    folder = tmp_path / "race"
    folder.mkdir()
    procs = [_spawn(kind, where, "race", folder, name) for name in ("a", "b")]
    try:
        for name, proc in zip(("a", "b"), procs, strict=True):
            _wait(folder / f"{name}.ready", proc)  # both are up: they race for the episode
        (folder / "go").write_text("")
        for name, proc in zip(("a", "b"), procs, strict=True):
            _wait(folder / f"{name}.result", proc)
        results = sorted((folder / f"{n}.result").read_text() for n in ("a", "b"))
        assert results == ["busy", "ok"]
    finally:
        (folder / "stop").write_text("")
        for proc in procs:
            proc.wait(timeout=60)
    store = _open(kind, where)
    try:
        assert len(store.sessions(1, principal=AKI)) == 1
    finally:
        store.close()


def test_sigkill_mid_unit_leaves_nothing_of_it_and_frees_the_episode(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    kind, where = backend
    proc = _spawn(kind, where, "stage", tmp_path)
    _wait(tmp_path / "session", proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    session_id = (tmp_path / "session").read_text()
    store = _open(kind, where)
    try:
        assert store.issues(session_id, principal=AKI) == []
        assert store.get_session(session_id, principal=AKI).lock_status == "held"  # stale mark
        context = store.resume_session(session_id, principal=AKI)  # the lock is free again
        store.commit()
        assert store.get_session(session_id, principal=AKI).state_version == (
            context.session.state_version
        )
    finally:
        store.close()


@pytest.mark.parametrize("delay", [0.3, 0.7, 1.1])
def test_sigkill_while_committing_leaves_whole_units(
    backend: tuple[str, str], tmp_path: Path, delay: float
) -> None:
    kind, where = backend
    proc = _spawn(kind, where, "loop", tmp_path)
    _wait(tmp_path / "session", proc)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    session_id = (tmp_path / "session").read_text()
    store = _open(kind, where)
    try:
        issues = store.issues(session_id, principal=AKI)
        session = store.get_session(session_id, principal=AKI)
        assert len(issues) % 5 == 0
        assert session.state_version == len(issues) // 5  # one version per whole unit
        store.resume_session(session_id, principal=AKI)
        store.commit()
    finally:
        store.close()


def test_sigkill_halfway_through_a_journal_line_loses_that_unit_only(tmp_path: Path) -> None:
    where = str(tmp_path / "store")
    proc = _spawn("json", where, "torn", tmp_path)
    _wait(tmp_path / "session", proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    session_id = (tmp_path / "session").read_text()
    journal = Path(where) / "sessions" / f"{session_id}.jsonl"
    assert not journal.read_bytes().endswith(b"\n")  # the torn half line is there
    store = _open("json", where)
    try:
        assert len(store.issues(session_id, principal=AKI)) == 3  # the 4th unit: none of it
        assert store.get_session(session_id, principal=AKI).state_version == 3
        store.resume_session(session_id, principal=AKI)
        with structlog.testing.capture_logs() as logs:
            store.commit()
        assert [e["event"] for e in logs] == ["quality_store_torn_tail"]
    finally:
        store.close()
    assert journal.read_bytes().endswith(b"\n")
    again = _open("json", where)
    try:
        assert len(again.issues(session_id, principal=AKI)) == 3
        assert again.get_session(session_id, principal=AKI).state_version == 5  # resume, close
    finally:
        again.close()


def _begin_in_child(kind: str, where: str, folder: Path) -> str:
    result = folder / "begin.result"
    result.unlink(missing_ok=True)
    proc = _spawn(kind, where, "begin", folder)
    assert proc.wait(timeout=60) == 0
    return result.read_text()


def test_a_process_that_met_damaged_state_lets_others_begin_the_episode(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    damaged = Backend(*backend)
    try:
        first = damaged.open()
        session_id = first.begin_session(1, IterationPolicy(), principal=AKI).session_id
        first.commit()
        first.end_session(session_id, "completed")
        first.commit()
        damaged.damage(session_id)
        with pytest.raises(StatePersistenceError):
            first.begin_session(1, IterationPolicy(), principal=AKI)
        # This process stays up after the failure; another one is told the same, not busy.
        assert _begin_in_child(*backend, tmp_path) == "QC-009"
        damaged.repair(session_id)
        assert _begin_in_child(*backend, tmp_path) == "ok"
    finally:
        damaged.close()
