"""JsonFileStore commits from many threads of one process: a commit waiting for the disk holds
up nobody else, and commits to one thread still go one at a time.

A server runs each request on a worker thread over one store; were the store's lock held
through ``fdatasync``, sixteen clients got the disk one at a time and none of the batching a
file system gives syncs that arrive together (issue 25: half the pairs per second of a plain
FastAPI app doing the same syncs).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import ConflictError, StoreError
from flowkit.records._records import StartRecord, StepRecord
from flowkit.stores import JsonFileStore

#: How long a commit that should not be held up may take (generous: a loaded machine).
WITHIN_S = 30.0


def start() -> StartRecord:
    return StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state={"x": 1})


def step(version: int) -> StepRecord:
    return StepRecord(
        version=version, ts=0.0, next="n", status="pending", node="n", update={"x": version}
    )


class HeldSync:
    """``os.fdatasync`` that stops in the journal of ``thread_id`` until released."""

    def __init__(self, thread_id: str) -> None:
        self.marker = f"/threads/{thread_id}/"
        self.waiting = threading.Event()
        self.release = threading.Event()
        self.real = os.fdatasync

    def __call__(self, fd: int) -> None:
        if self.marker in os.readlink(f"/proc/self/fd/{fd}"):
            self.waiting.set()
            assert self.release.wait(WITHIN_S), "never released"
        self.real(fd)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], HeldSync]]:
    made: list[HeldSync] = []

    def hold(thread_id: str) -> HeldSync:
        sync = HeldSync(thread_id)
        monkeypatch.setattr(os, "fdatasync", sync)
        made.append(sync)
        return sync

    yield hold
    for sync in made:
        sync.release.set()


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """``call()`` on a new thread; the list gets its result or its exception."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_commit_waiting_for_the_disk_holds_up_no_other_thread(
    tmp_path: Path, held: Callable[[str], HeldSync]
) -> None:
    store = JsonFileStore(tmp_path, fsync=True)
    store.create("slow", start())
    sync = held("slow")
    slow, slow_outcome = in_thread(lambda: store.append("slow", [step(1)], expected_version=0))
    assert sync.waiting.wait(WITHIN_S)

    def others() -> int:
        store.create("quick", start())
        store.append("quick", [step(1)], expected_version=0)
        return store.load("quick").records[-1].version

    quick, quick_outcome = in_thread(others)
    quick.join(WITHIN_S)
    assert quick_outcome == [1]  # created, appended and read while "slow" waits for the disk
    assert slow.is_alive()

    sync.release.set()
    slow.join(WITHIN_S)
    assert slow_outcome == [None]
    fresh = JsonFileStore(tmp_path, fsync=False)
    assert [r.version for r in fresh.load("slow").records] == [0, 1]
    assert [r.version for r in fresh.load("quick").records] == [0, 1]


def test_commits_to_one_thread_still_go_one_at_a_time(
    tmp_path: Path, held: Callable[[str], HeldSync]
) -> None:
    store = JsonFileStore(tmp_path, fsync=True)
    store.create("t", start())
    sync = held("t")
    first, first_outcome = in_thread(lambda: store.append("t", [step(1)], expected_version=0))
    assert sync.waiting.wait(WITHIN_S)
    second, second_outcome = in_thread(lambda: store.append("t", [step(1)], expected_version=0))
    sync.release.set()
    first.join(WITHIN_S)
    second.join(WITHIN_S)

    assert first_outcome == [None]
    assert len(second_outcome) == 1 and isinstance(second_outcome[0], ConflictError)
    fresh = JsonFileStore(tmp_path, fsync=False)
    assert [r.version for r in fresh.load("t").records] == [0, 1]
    assert store.load("t", after=1).records == ()


def test_a_failed_sync_while_others_commit_leaves_its_journal_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonFileStore(tmp_path, fsync=True)
    store.create("broken", start())
    store.create("fine", start())
    journal = tmp_path / "threads" / "broken" / "journal.jsonl"
    before = journal.read_bytes().rstrip(b"\0")
    real = os.fdatasync
    reached = threading.Event()
    go_on = threading.Event()

    def failing(fd: int) -> None:
        if "/threads/broken/" in os.readlink(f"/proc/self/fd/{fd}"):
            reached.set()
            assert go_on.wait(WITHIN_S)
            raise OSError(5, os.strerror(5))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", failing)
    broken, broken_outcome = in_thread(
        lambda: store.append("broken", [step(1)], expected_version=0)
    )
    assert reached.wait(WITHIN_S)
    store.append("fine", [step(1)], expected_version=0)
    go_on.set()
    broken.join(WITHIN_S)

    assert len(broken_outcome) == 1 and isinstance(broken_outcome[0], StoreError)
    assert journal.read_bytes().rstrip(b"\0") == before
    monkeypatch.setattr(os, "fdatasync", real)
    store.append("broken", [step(1)], expected_version=0)  # the store knows where it stands
    fresh = JsonFileStore(tmp_path, fsync=False)
    assert [r.version for r in fresh.load("broken").records] == [0, 1]
    assert [r.version for r in fresh.load("fine").records] == [0, 1]
