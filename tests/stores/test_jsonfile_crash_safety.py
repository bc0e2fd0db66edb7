"""JsonFileStore after crashes and damage: torn tails, corrupt lines, unusable snapshots.

A torn last record (a crash mid-write) is skipped with a warning and cut off by the next
append; damage anywhere else fails only that thread with an error naming file and line; a
bad snapshot only costs time, because the journal alone rebuilds the thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import CorruptStoreError, ThreadNotFoundError
from flowkit.stores import JsonFileStore
from flowkit.stores._tears import SECTOR

TallyRunner = Callable[..., Runner[Any]]


def tally_thread(tally: TallyRunner) -> None:
    """Thread ``t`` at version 4, waiting at ``inbox`` with seen [1, 2] and total 3."""
    runner = tally()
    runner.start("t")
    runner.resume("t", {"value": 1})
    result = runner.resume("t", {"value": 2})
    assert (result.version, result.status, result.state.total) == (4, "waiting", 3)


def versions_on_disk(files: Any, thread_id: str) -> list[int]:
    return [record["version"] for record in files.records(thread_id)]


# -- torn last record ---------------------------------------------------------------------------


def cut_last_record_in_half(path: Path) -> None:
    raw = path.read_bytes()
    data = raw.rstrip(b"\0")  # the records, without the zeros preallocated after them
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = last_start + (len(data) - last_start) // 2
    path.write_bytes(raw[:cut] + bytes(len(raw) - cut))  # the zeros stay, as on disk


def append_bytes(extra: bytes) -> Callable[[Path], None]:
    """Write ``extra`` where the next record would go: after the records, over the zeros."""

    def damage(path: Path) -> None:
        raw = path.read_bytes()
        data = raw.rstrip(b"\0")
        path.write_bytes(data + extra + bytes(max(0, len(raw) - len(data) - len(extra))))

    return damage


def append_after_lost_sectors(start: bytes, rest: bytes) -> Callable[[Path], None]:
    """What a torn multi-sector write can leave: the record's first bytes (``start``, padded
    with digits to a disk-sector boundary, or none), whole sectors a power loss never wrote
    (zeros), then the ``rest`` of it."""

    def damage(path: Path) -> None:
        raw = path.read_bytes()
        data = raw.rstrip(b"\0")
        if start:
            room = -len(data) % SECTOR or SECTOR
            room += SECTOR if room < len(start) else 0
            data += start + b"1" * (room - len(start))
        written = data + b"\0" * (SECTOR - len(data) % SECTOR + SECTOR) + rest
        path.write_bytes(written + bytes(max(0, len(raw) - len(written))))

    return damage


TORN_TAILS = {
    "last record cut mid-line": (cut_last_record_in_half, 3),
    "garbage without newline": (append_bytes(b'{"v":1,"version":5,"ts":17'), 4),
    "zero bytes after a power loss": (append_bytes(b'{"v":2,"ver' + b"\x00" * 4096), 4),
    "a lost sector, then the rest with a newline": (
        append_after_lost_sectors(b"", b'"next":"x","crc":"0badf00d"}\n'),
        4,
    ),
    "a start, a lost sector, then the rest": (
        append_after_lost_sectors(
            b'{"v":2,"version":5,"ts":17', b'0,"next":"x","crc":"0badf00d"}\n'
        ),
        4,
    ),
}


@pytest.mark.parametrize(("damage", "good_version"), TORN_TAILS.values(), ids=list(TORN_TAILS))
def test_torn_last_record_is_skipped_with_a_warning_and_cut_off_by_the_next_append(
    tally: TallyRunner,
    files: Any,
    open_store: Callable[..., JsonFileStore],
    damage: Callable[[Path], None],
    good_version: int,
) -> None:
    tally_thread(tally)
    journal = files.journal("t")
    damage(journal)

    with capture_logs() as logs:
        log = open_store().load("t")
    assert [r.version for r in log.records] == list(range(good_version + 1))
    assert len(log.warnings) == 1 and f"{journal}:{good_version + 2}" in log.warnings[0]
    torn_events = [e for e in logs if e["event"] == "journal_torn_record_skipped"]
    assert torn_events and torn_events[0]["thread_id"] == "t"

    runner = tally()
    state = runner.get_state("t")
    assert state.version == good_version
    if state.status == "pending":  # the torn record was the `add` step: run it again
        state = runner.resume("t")
    assert (state.version, state.status, state.state.total) == (4, "waiting", 3)
    done = runner.resume("t", {"value": 4, "stop": True})

    assert (done.status, done.state.seen, done.state.total) == ("done", [1, 2, 4], 7)
    assert versions_on_disk(files, "t") == list(range(7))
    assert not open_store().load("t").warnings


def test_torn_tail_that_appears_under_an_open_store_is_cut_off_by_its_next_append(
    tally: TallyRunner, files: Any
) -> None:
    runner = tally()
    runner.start("t")
    runner.resume("t", {"value": 1})
    append_bytes(b'{"v":1,"version":3')(files.journal("t"))
    with capture_logs():
        result = runner.resume("t", {"value": 2})
    assert (result.version, result.state.total) == (4, 3)
    assert versions_on_disk(files, "t") == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("content", [b"", b'{"v":1,"version":0,"ts":1.5,"next":"in'])
def test_a_create_that_crashed_before_its_first_record_leaves_no_thread(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore], content: bytes
) -> None:
    files.journal("t").parent.mkdir(parents=True)
    files.journal("t").write_bytes(content)
    runner = tally()
    with capture_logs(), pytest.raises(ThreadNotFoundError):
        runner.get_state("t")
    if not content:
        assert open_store().threads() == []
    with capture_logs():
        assert runner.start("t").status == "waiting"
    assert versions_on_disk(files, "t") == [0]
    assert open_store().threads() == ["t"]


#: A last line no crash can leave: appends write whole JSON lines, so a tear is the start of one
#: without its newline, or holds the zeros of blocks a power loss never wrote.
NOT_A_TEAR = {
    "text with a newline": b"garbage\n",
    "text without a newline": b"garbage",
    "half a record, then a newline": b'{"v":1,"version":5,"ts\n',
}


@pytest.mark.parametrize("tail", NOT_A_TEAR.values(), ids=list(NOT_A_TEAR))
def test_a_last_line_that_no_crash_can_leave_is_damage_naming_file_and_line(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore], tail: bytes
) -> None:
    tally_thread(tally)
    append_bytes(tail)(files.journal("t"))
    with pytest.raises(CorruptStoreError) as info:
        open_store().load("t")
    assert (info.value.path, info.value.line) == (str(files.journal("t")), 6)


@pytest.mark.parametrize(
    "rest", [b'{"kind":"step","v":1}\n', b'{"v":1,"vers\n'], ids=["a whole line", "half of one"]
)
def test_a_line_after_whole_sectors_of_zeros_that_does_not_end_a_record_is_damage(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore], rest: bytes
) -> None:
    """A write that reached its newline ends with a record's seal: a line without one after
    zeros (someone appended to the file) is damage, not a tear to skip and overwrite."""
    tally_thread(tally)
    append_after_lost_sectors(b"", rest)(files.journal("t"))
    with pytest.raises(CorruptStoreError):
        open_store().load("t")


@pytest.mark.parametrize("content", NOT_A_TEAR.values(), ids=list(NOT_A_TEAR))
def test_a_journal_holding_only_garbage_is_a_damaged_thread_not_a_missing_one(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore], content: bytes
) -> None:
    files.journal("t").parent.mkdir(parents=True)
    files.journal("t").write_bytes(content)
    with pytest.raises(CorruptStoreError) as info:
        open_store().load("t")
    assert (info.value.path, info.value.line) == (str(files.journal("t")), 1)
    assert f"{files.journal('t')}:1" in str(info.value)
    with pytest.raises(CorruptStoreError):
        tally().start("t")  # never written over
    assert files.journal("t").read_bytes() == content


def test_a_torn_record_is_counted_without_the_free_space_after_it(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore]
) -> None:
    tally_thread(tally)
    journal = files.journal("t")
    append_bytes(b'{"v":2,"version":5,"ts":17')(journal)
    assert journal.read_bytes().endswith(b"\0")  # the tear sits in the preallocated zeros
    with capture_logs():
        (warning,) = open_store().load("t").warnings
    assert warning.endswith("torn last record skipped (26 bytes)")


def test_a_torn_record_is_logged_once_per_store_however_often_it_is_read(
    tally: TallyRunner, files: Any, open_store: Callable[..., JsonFileStore]
) -> None:
    tally_thread(tally)
    append_bytes(b'{"v":2,"version":5,"ts":17')(files.journal("t"))
    store = open_store()
    with capture_logs() as logs:
        for _ in range(3):
            assert store.load("t").warnings  # each load still says so
        Runner(tally().flow, store=store).get_state("t")
    assert [e["event"] for e in logs].count("journal_torn_record_skipped") == 1


# -- damage in the middle ----------------------------------------------------------------------


def line_2_as(**changes: Any) -> Callable[[dict[str, Any]], bytes]:
    return lambda line2: json.dumps({**line2, **changes}).encode() + b"\n"


CORRUPT_LINES: dict[str, tuple[int, Callable[[dict[str, Any]], bytes]]] = {
    "not json": (2, lambda _: b"this is not json\n"),
    "invalid utf-8": (2, lambda _: b"\xff\xfe\xfd\n"),
    "zero bytes": (2, lambda _: b"\x00" * 64 + b"\n"),
    "json but not a record": (2, lambda _: b'{"v": 1, "version": 1}\n'),
    "unknown kind": (2, line_2_as(kind="teleport")),
    "version gap": (2, line_2_as(version=7)),
    "duplicate version": (3, line_2_as()),
    "no start record": (1, line_2_as(version=0)),
    "cut in half": (3, lambda line2: json.dumps(line2).encode()[:20] + b"\n"),
    # Nesting past the JSON parser's recursion limit must be reported, never raise it.
    "nested too deeply": (2, lambda _: b"[" * 100_000 + b"]" * 100_000 + b"\n"),
    # A complete JSON line cannot come from a torn write: even last, it is damage, not a tail.
    "last line json but not a record": (5, lambda _: b'{"v": 1, "version": 4}\n'),
    "last line nested too deeply": (5, lambda _: b'{"a":' * 99_999 + b"1" + b"}" * 99_999 + b"\n"),
}


@pytest.mark.parametrize(("line", "content"), CORRUPT_LINES.values(), ids=list(CORRUPT_LINES))
def test_corrupt_line_before_the_end_fails_the_thread_naming_file_and_line(
    tally: TallyRunner,
    files: Any,
    open_store: Callable[..., JsonFileStore],
    line: int,
    content: Callable[[dict[str, Any]], bytes],
) -> None:
    tally_thread(tally)
    files.damage("t", line=line, content=content(files.records("t")[1]))
    journal = files.journal("t")

    with pytest.raises(CorruptStoreError) as info:
        open_store().load("t")
    error = info.value
    assert (error.path, error.line, error.thread_id) == (str(journal), line, "t")
    assert f"{journal}:{line}" in str(error) and "backup" in str(error)
    with pytest.raises(CorruptStoreError):
        tally().get_state("t")


def test_a_corrupt_thread_does_not_stop_other_threads_in_the_same_store(
    tally: TallyRunner, files: Any
) -> None:
    runner = tally()
    runner.start("healthy")
    runner.resume("healthy", {"value": 5})
    tally_thread(lambda: runner)
    files.damage("t", line=2, content=b"garbage\n")
    damaged = files.journal("t").read_bytes()

    with pytest.raises(CorruptStoreError):
        runner.get_state("t")
    assert runner.resume("healthy", {"value": 6}).state.total == 11
    assert runner.start("new").status == "waiting"
    assert runner.threads() == ["healthy", "new", "t"]
    fresh = tally()
    assert fresh.get_state("healthy").state.seen == [5, 6]
    for call in (
        lambda: fresh.start("t"),
        lambda: fresh.resume("t", {"value": 1}),
        lambda: fresh.update_state("t", {"total": 0}),
        lambda: fresh.history("t"),
        lambda: fresh.fork("t", "copy"),
    ):
        with pytest.raises(CorruptStoreError):
            call()
    assert files.journal("t").read_bytes() == damaged, "a damaged journal is never rewritten"
    assert fresh.threads() == ["healthy", "new", "t"]


NEWER_FORMAT = {
    "last line, same shape": (None, {"v": 3}),
    "last line, new fields": (None, {"v": 3, "hologram": {"x": 1}}),
    "middle line": (3, {"v": 4}),
}


@pytest.mark.parametrize(("line", "changes"), NEWER_FORMAT.values(), ids=list(NEWER_FORMAT))
def test_record_from_a_newer_format_version_raises_a_clear_error_and_is_kept(
    tally: TallyRunner,
    files: Any,
    open_store: Callable[..., JsonFileStore],
    line: int | None,
    changes: dict[str, Any],
) -> None:
    tally_thread(tally)
    records = files.records("t")
    if line is None:
        newer = {**records[-1], "version": 5, "next": "add", **changes}
        append_bytes(json.dumps(newer).encode() + b"\n")(files.journal("t"))
        line = 6
    else:
        files.damage(
            "t", line=line, content=json.dumps({**records[line - 1], **changes}).encode() + b"\n"
        )
    before = files.journal("t").read_bytes()

    with pytest.raises(CorruptStoreError) as info:
        open_store().load("t")
    message = str(info.value)
    assert "newer flowkit" in message and "upgrade flowkit" in message
    assert info.value.line == line
    with pytest.raises(CorruptStoreError):
        tally().resume("t", {"value": 3})
    assert files.journal("t").read_bytes() == before, "a newer record is never cut off as torn"


# -- snapshots ---------------------------------------------------------------------------------


def counted_thread(counter: Callable[..., Runner[Any]], files: Any, limit: int = 60) -> Any:
    """Thread ``t`` of the counter flow, run to ``limit`` with frequent snapshots."""
    result = counter(min_snapshot_bytes=512, snapshot_ratio=1.0).start("t", {"limit": limit})
    assert result.status == "done" and files.snapshot("t").exists()
    return result


def rewrite_snapshot(**changes: Any) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        envelope = json.loads(path.read_bytes())
        snapshot = {**envelope["snapshot"], **changes.pop("snapshot", {})}
        path.write_text(json.dumps({**envelope, "snapshot": snapshot, **changes}))

    return damage


BAD_SNAPSHOTS: dict[str, Callable[[Path], None]] = {
    "garbage": lambda p: p.write_bytes(b"\x00garbage\xff"),
    "empty": lambda p: p.write_bytes(b""),
    "cut in half": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "wrong shape": lambda p: p.write_text('{"snapshot": 1, "offset": "x"}'),
    "offset past the journal": rewrite_snapshot(offset=10**9),
    "offset mid-line": rewrite_snapshot(offset=7),
    "offset at the wrong record": rewrite_snapshot(offset=0),
    "newer format": rewrite_snapshot(snapshot={"v": 2}),
}


@pytest.mark.parametrize("damage", BAD_SNAPSHOTS.values(), ids=list(BAD_SNAPSHOTS))
def test_unusable_snapshot_is_ignored_with_a_warning_and_the_journal_rebuilds_the_state(
    counter: Callable[..., Runner[Any]],
    files: Any,
    open_store: Callable[..., JsonFileStore],
    damage: Callable[[Path], None],
) -> None:
    live = counted_thread(counter, files)
    damage(files.snapshot("t"))

    with capture_logs() as logs:
        log = open_store().load("t")
        state = counter().get_state("t")
    assert log.snapshot is None and [r.version for r in log.records] == list(range(61))
    assert any(e["event"] == "snapshot_ignored" and e["thread_id"] == "t" for e in logs)
    assert state.state == live.state and state.version == live.version


def test_snapshots_are_taken_as_the_journal_grows_and_loading_one_equals_full_replay(
    counter: Callable[..., Runner[Any]], files: Any, open_store: Callable[..., JsonFileStore]
) -> None:
    live = counted_thread(counter, files, limit=300)

    log = open_store().load("t")
    assert log.snapshot is not None and log.snapshot.version > 150
    assert [r.version for r in log.records] == list(range(log.snapshot.version + 1, 301))
    runner = counter()
    assert runner.get_state("t").state == live.state == runner.history("t")[-1].state
    assert live.state.items == list(range(1, 301))


def test_snapshot_is_kept_small_relative_to_the_journal(
    counter: Callable[..., Runner[Any]], files: Any
) -> None:
    counted_thread(counter, files, limit=300)
    snapshot_size = files.snapshot("t").stat().st_size
    assert snapshot_size < files.journal("t").stat().st_size


# -- preallocated zeros ---------------------------------------------------------------------------


def test_a_journal_keeps_zeros_ahead_while_its_thread_lives_and_gives_them_back_when_it_ends(
    tally: TallyRunner, counter: Callable[..., Runner[Any]], files: Any
) -> None:
    """Zeros from the create on (so no step's fdatasync commits a new file size), to the end
    of the journal's block, then ``preallocate`` more once it outgrows them; cut off once the
    thread is done, so a store of finished threads holds their records only."""
    tally(fsync=False, preallocate=4096).start("t")
    waiting = files.journal("t").read_bytes()
    assert len(waiting) == 4096 > len(files.data("t"))  # waiting: the rest of its block
    assert not waiting[len(files.data("t")) :].strip(b"\0")
    grown = counter(fsync=False, preallocate=4096)
    assert grown.start("g", {"limit": 1000}).status == "done"
    assert files.journal("g").read_bytes() == files.data("g")  # outgrew its block, then ended
    assert len(files.data("g")) > 4096
    assert counter(fsync=False, preallocate=4096).start("c", {"limit": 3}).status == "done"
    assert files.journal("c").read_bytes() == files.data("c")
    assert len(files.records("c")) == 4
