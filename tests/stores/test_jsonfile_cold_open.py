"""Opening a thread costs its snapshot and the records after it, never its history.

A new ``JsonFileStore`` object (a new process, as far as the store knows) loads a long thread
once, seeks to the byte after the snapshot's record, and parses only the records after it; a
resume adds no second load. Snapshots are a cache: written without fsync, and one torn by a
crash is ignored (the journal is replayed). ``snapshots.jsonl`` keeps every snapshot, so a
page of history replays from the one before it; a torn line there is skipped too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, Route, RouteTable, Runner, when
from flowkit.errors import StoreError
from flowkit.stores import JsonFileStore, jsonfile
from flowkit.stores import _jsonl as jsonl
from flowkit.stores._jsonfile_reader import JsonFileReader

from .conftest import StoreFiles

CounterRunner = Callable[..., Runner[Any]]


class Steady(BaseModel):
    limit: int = 10
    count: int = 0


#: ``step`` counts to ``limit``: many small records, a state that does not grow with them.
COUNTER = Flow(
    name="steady",
    state=Steady,
    start="step",
    nodes={"step": lambda s: {"count": s.count + 1}},
    routes={
        "step": RouteTable(
            "loop", [Route(when("reached", lambda s: s.count >= s.limit), END)], default="step"
        )
    },
)


@pytest.fixture
def counter(open_store: Callable[..., JsonFileStore]) -> CounterRunner:
    """``counter(**store_options)``: a Runner of ``COUNTER`` on a fresh store object."""
    return lambda **options: Runner(COUNTER, store=open_store(**options))


#: Many small records, the default snapshot policy (so at least one every 64 records).
OPTIONS: dict[str, Any] = {"fsync": False}


class Reads:
    """What a store read: journal bytes, records parsed, ``load`` calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        self.records = 0
        self.loads = 0  # full ones (``after=None``): an incremental load reads what is new
        read_from, read_record, load = (
            JsonFileReader._read_from, jsonl._read_record, JsonFileReader.load,
        )  # fmt: skip

        def counted_read(reader: Any, thread_id: str, offset: int, *, limit: int = -1) -> bytes:
            data = read_from(reader, thread_id, offset, limit=limit)
            self.bytes += len(data.rstrip(b"\0"))
            return data

        def counted_record(raw: bytes) -> Any:
            self.records += 1
            return read_record(raw)

        def counted_load(reader: Any, thread_id: str, *, after: int | None = None) -> Any:
            self.loads += after is None
            return load(reader, thread_id, after=after)

        monkeypatch.setattr(JsonFileReader, "_read_from", counted_read)
        monkeypatch.setattr(jsonl, "_read_record", counted_record)
        monkeypatch.setattr(JsonFileReader, "load", counted_load)


def long_thread(counter: CounterRunner, files: StoreFiles, steps: int = 1000) -> int:
    """Thread ``t``, done after ``steps`` steps; its journal's size in bytes."""
    assert counter(**OPTIONS).start("t", {"limit": steps}).status == "done"
    return len(files.data("t"))


def test_a_fresh_store_reads_only_the_records_after_the_snapshot(
    counter: CounterRunner,
    files: StoreFiles,
    open_store: Callable[..., JsonFileStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal = long_thread(counter, files)
    reads = Reads(monkeypatch)
    log = open_store(**OPTIONS).load("t")
    assert log.snapshot is not None and log.snapshot.state["count"] + len(log.records) == 1000
    assert reads.records == len(log.records) <= 64
    assert reads.bytes < journal / 10  # the snapshot's record and what follows, not the rest


def test_a_fresh_runner_resumes_with_one_load_and_one_pass_over_the_records(
    tally: Callable[..., Runner[Any]],
    open_store: Callable[..., JsonFileStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = tally(**OPTIONS)
    runner.start("t")
    for value in range(1, 41):
        runner.resume("t", {"value": value})
    store = open_store(**OPTIONS)
    after = len(store.load("t").records)
    store.close()
    reads = Reads(monkeypatch)
    fresh = tally(**OPTIONS)  # a new store object: a new process, as far as it knows
    assert fresh.resume("t", {"value": 41}).state.total == sum(range(42))
    assert reads.loads == 1  # writing needs no second full load (issue 25: a resume did 3)
    assert reads.records == after  # each record parsed once (they were parsed twice)


def test_verify_on_open_checks_the_bytes_before_the_snapshot_once(
    counter: CounterRunner,
    files: StoreFiles,
    open_store: Callable[..., JsonFileStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal = long_thread(counter, files)
    reads = Reads(monkeypatch)
    store = open_store(verify_on_open=True, **OPTIONS)
    store.load("t")
    assert reads.bytes >= journal * 0.9  # one checksum over them, no record parsed
    assert reads.records <= 64
    store.load("t")  # a second load of the same store object reads only what is new
    assert reads.bytes < journal * 1.1


def test_a_snapshot_is_written_without_fsync(
    counter: CounterRunner, files: StoreFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[bool] = []
    write = jsonfile.write_file_atomically

    def noted(path: Path, data: bytes, *, fsync: bool, thread_id: str, what: str) -> None:
        if path.name == "snapshot.json":
            written.append(fsync)
        write(path, data, fsync=fsync, thread_id=thread_id, what=what)

    monkeypatch.setattr(jsonfile, "write_file_atomically", noted)
    counter(fsync=True).start("t", {"limit": 200})
    assert written and not any(written)


def test_a_torn_snapshot_is_ignored_and_the_journal_gives_the_exact_state(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    expected = counter(**OPTIONS).start("t", {"limit": 200}).state
    data = files.snapshot("t").read_bytes()
    files.snapshot("t").write_bytes(data[: len(data) // 2])  # what a crash may leave, unsynced
    with capture_logs() as logs:
        assert Runner(COUNTER, store=open_store(**OPTIONS)).get_state("t").state == expected
    assert "snapshot_ignored" in [e["event"] for e in logs]


def test_finding_the_line_of_a_long_last_record_reads_it_about_once(
    open_store: Callable[..., JsonFileStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowkit.records._records import Snapshot, StartRecord

    store = open_store(**OPTIONS)
    big = {"text": "x" * 2_000_000}  # one journal line of 2 MB
    start = StartRecord(version=0, ts=1.0, next="a", status="pending", flow="f", state=big)
    store.create("t", start)
    line = len(store._read_from("t", 0).rstrip(b"\0"))
    reads = Reads(monkeypatch)
    store.write_snapshot(
        "t", Snapshot(version=0, ts=1.0, next="a", status="pending", flow="f", state=big)
    )
    assert reads.bytes <= 2 * line  # it was read again for every 64 KiB stepped back


def test_snapshot_every_must_be_a_count(open_store: Callable[..., JsonFileStore]) -> None:
    for bad in (0, -3, True, 2.5, "64"):
        with pytest.raises(StoreError, match="snapshot_every"):
            open_store(snapshot_every=bad)
    assert open_store(snapshot_every=1).snapshot_due("t") is False


def test_a_page_of_history_replays_from_the_snapshot_trail_and_skips_a_torn_line(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    long_thread(counter, files)
    whole = Runner(COUNTER, store=open_store(**OPTIONS)).history("t")
    trail = files.snapshot("t").with_name("snapshots.jsonl")
    lines = trail.read_bytes().splitlines(keepends=True)
    versions = [int(re.search(rb'"version":(\d+)', line)[1]) for line in lines]  # type: ignore[index]
    assert len(lines) >= 5 and versions == sorted(versions)
    # A page replays from the last snapshot before it, not from the journal's start.
    snapshot = open_store(**OPTIONS).snapshot_before("t", versions[-3] + 1)
    assert snapshot is not None and snapshot.version == versions[-3]
    # Its last line lost, the one before torn by a crash, the one before that damaged: an
    # older line serves instead.
    lines = lines[:-1]
    lines[-2] = lines[-2].replace(b'"count":', b'"count":9', 1)
    trail.write_bytes(b"".join(lines)[:-40])
    fresh = Runner(COUNTER, store=open_store(**OPTIONS))
    before = versions[-2] + 31
    assert fresh.history("t", limit=30, before=before) == whole[before - 30 : before]
    assert fresh.history("t", limit=30) == whole[-30:]
    assert fresh.history("t", limit=30, before=500) == whole[470:500]


def test_a_compaction_drops_the_snapshot_trail(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    long_thread(counter, files, 300)
    runner = Runner(COUNTER, store=open_store(**OPTIONS))
    runner.compact("t", keep=20)
    assert not files.snapshot("t").with_name("snapshots.jsonl").exists()
    whole = runner.history("t")
    assert runner.history("t", limit=5) == whole[-5:]
