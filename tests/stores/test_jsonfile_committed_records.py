"""A committed journal record is never dropped silently.

A torn tail (a write a crash cut short, never acknowledged) may be dropped. Damage to a
complete record (its newline overwritten, bytes flipped or zeroed inside it, two records run
together) is ``CorruptStoreError`` naming the thread and line, however near the end it sits,
and the next write never erases it. A last record that is complete and intact but has lost
its newline is kept, and the next append puts the newline back. Damage before a snapshot is
reported when the history is read, and with ``verify_on_open`` when the thread is loaded; a
load never reads those records otherwise (opening costs the snapshot and what follows it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import CorruptStoreError
from flowkit.stores import JsonFileStore
from flowkit.stores._jsonl import scan_lines

from .conftest import StoreFiles

CounterRunner = Callable[..., Runner[Any]]
Damage = Callable[[list[bytes]], list[bytes]]

#: Preallocated like a durable journal, so the records are followed by zeros.
OPTIONS: dict[str, Any] = {"fsync": False, "preallocate": 4096}


def done_thread(counter: CounterRunner, files: StoreFiles) -> list[bytes]:
    """Thread ``t`` of the counter flow, done at version 3: its four journal lines."""
    assert counter(**OPTIONS).start("t", {"limit": 3}).status == "done"
    lines = files.data("t").splitlines(keepends=True)
    assert len(lines) == 4
    return lines


def _last(change: Callable[[bytes], bytes]) -> Damage:
    return lambda lines: [*lines[:-1], change(lines[-1])]


def _at(data: bytes, index: int, byte: bytes) -> bytes:
    return data[:index] + byte + data[index + 1 :]


def _join_last_two(separator: bytes) -> Damage:
    return lambda lines: [*lines[:-2], lines[-2][:-1] + separator + lines[-1]]


#: Damage to committed records: (what it does to the journal's lines, the line reported).
DAMAGE: dict[str, tuple[Damage, int]] = {
    "last newline overwritten by a letter": (_last(lambda b: b[:-1] + b"x"), 4),
    "last newline overwritten by a brace": (_last(lambda b: b[:-1] + b"{"), 4),
    "last newline overwritten by a space": (_last(lambda b: b[:-1] + b" "), 4),
    "a byte flipped inside the last record": (
        _last(lambda b: b.replace(b'"done"', b'"dune"')),
        4,
    ),
    "a byte zeroed inside the last record": (_last(lambda b: _at(b, 30, b"\0")), 4),
    "a byte zeroed inside it and its newline zeroed": (
        _last(lambda b: _at(b[:-1], 30, b"\0") + b"\0"),
        4,
    ),
    "a byte flipped inside it and its newline zeroed": (
        _last(lambda b: b.replace(b'"done"', b'"dune"')[:-1] + b"\0"),
        4,
    ),
    "the first half of the last record zeroed": (
        _last(lambda b: b"\0" * (len(b) // 2) + b[len(b) // 2 :]),
        4,
    ),
    "the last two records run together by a zero": (_join_last_two(b"\0"), 3),
    "the last two records run together by a letter": (_join_last_two(b"x"), 3),
    "a middle newline zeroed": (
        lambda lines: [lines[0], lines[1][:-1] + b"\0" + lines[2], lines[3]],
        2,
    ),
}


@pytest.mark.parametrize("case", list(DAMAGE), ids=list(DAMAGE))
def test_damage_to_a_committed_record_is_reported_and_never_written_over(
    case: str,
    counter: CounterRunner,
    files: StoreFiles,
    open_store: Callable[..., JsonFileStore],
) -> None:
    damage, line = DAMAGE[case]
    lines = done_thread(counter, files)
    journal = files.journal("t")
    damaged = b"".join(damage(lines))
    journal.write_bytes(damaged + bytes(4096))
    with pytest.raises(CorruptStoreError) as caught:
        open_store(**OPTIONS).load("t")
    error = caught.value
    assert (error.thread_id, error.path, error.line) == ("t", str(journal), line)
    runner = counter(**OPTIONS)
    with pytest.raises(CorruptStoreError):
        runner.update_state("t", {"limit": 5}, goto="step")
    with pytest.raises(CorruptStoreError):
        runner.resume("t")
    assert journal.read_bytes().rstrip(b"\0") == damaged.rstrip(b"\0"), "never written over"


def test_stray_bytes_amid_the_free_space_are_damage_that_says_where_to_cut(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    # What is left of a record zeroed but for its last bytes looks the same: never dropped.
    lines = done_thread(counter, files)
    records = b"".join(lines)
    files.journal("t").write_bytes(records + bytes(100) + b"x" + bytes(4096))
    with pytest.raises(CorruptStoreError) as caught:
        open_store(**OPTIONS).load("t")
    assert caught.value.line == 5 and f"at byte {len(records)}" in str(caught.value)
    files.journal("t").write_bytes(records)  # cut where the error says
    assert counter(**OPTIONS).get_state("t").status == "done"


def test_a_whole_last_record_without_its_newline_is_kept_and_the_newline_restored(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    lines = done_thread(counter, files)
    journal = files.journal("t")
    journal.write_bytes(b"".join(lines)[:-1] + bytes(4096))  # the last newline zeroed
    with capture_logs() as logs:
        log = open_store(**OPTIONS).load("t")
        state = counter(**OPTIONS).get_state("t")
    assert [r.version for r in log.records] == [0, 1, 2, 3]
    assert len(log.warnings) == 1 and f"{journal}:4" in log.warnings[0]
    assert "journal_line_end_missing" in [e["event"] for e in logs]
    assert (state.version, state.status, state.state.count) == (3, "done", 3)

    runner = counter(**OPTIONS)
    with capture_logs():
        runner.update_state("t", {"limit": 5}, goto="step")
        assert runner.resume("t").state.count == 5
    assert [r["version"] for r in files.records("t")] == list(range(7))
    assert files.data("t").startswith(b"".join(lines))
    assert not open_store(**OPTIONS).load("t").warnings


#: Torn tails, for contrast: dropped with a warning, the thread at its last whole record.
TORN: dict[str, Damage] = {
    "the last record cut in half": _last(lambda b: b[: len(b) // 2]),
    "the last record without its last two bytes": _last(lambda b: b[:-2]),
}


@pytest.mark.parametrize("case", list(TORN), ids=list(TORN))
def test_a_torn_last_record_is_still_dropped_with_a_warning(
    case: str,
    counter: CounterRunner,
    files: StoreFiles,
    open_store: Callable[..., JsonFileStore],
) -> None:
    lines = done_thread(counter, files)
    files.journal("t").write_bytes(b"".join(TORN[case](lines)) + bytes(4096))
    with capture_logs():
        log = open_store(**OPTIONS).load("t")
    assert [r.version for r in log.records] == [0, 1, 2]
    assert "torn last record skipped" in log.warnings[0]


def _damaged_before_snapshot(counter: CounterRunner, files: StoreFiles) -> Any:
    """Thread ``t`` with a snapshot near its end and a digit of line 2 changed; its state."""
    runner = counter(min_snapshot_bytes=1, snapshot_ratio=0.5)
    state = runner.start("t", {"limit": 12}).state
    assert files.snapshot("t").exists()
    journal = files.journal("t")
    raw = journal.read_bytes()
    at = raw.index(b'"count":1') + len(b'"count":')
    journal.write_bytes(_at(raw, at, b"7"))  # line 2, long before the snapshot
    return state


def test_damage_before_a_snapshot_is_reported_when_the_thread_is_loaded_with_verify_on_open(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    _damaged_before_snapshot(counter, files)
    with pytest.raises(CorruptStoreError) as caught:
        counter(verify_on_open=True).get_state("t")
    assert (caught.value.thread_id, caught.value.line) == ("t", 2)
    with pytest.raises(CorruptStoreError):
        open_store(verify_on_open=True).load("t")


def test_damage_before_a_snapshot_is_reported_when_the_history_is_read(
    counter: CounterRunner, files: StoreFiles
) -> None:
    # Opening reads the snapshot and what follows it (exact), never the records before it.
    state = _damaged_before_snapshot(counter, files)
    runner = counter()
    assert runner.get_state("t").state == state
    with pytest.raises(CorruptStoreError) as caught:
        runner.history("t")
    assert (caught.value.thread_id, caught.value.line) == ("t", 2)


#: Bytes a damage may leave: a zero, line ends, JSON punctuation, a letter, a digit.
REPLACEMENTS = b'\0\n\r {}",:x0'


def _single_byte_outcomes(lines: list[bytes], positions: range) -> dict[str, int]:
    """Every byte of the journal in ``positions`` replaced by each of ``REPLACEMENTS`` in
    turn, then the bytes scanned as a load would: exact, or a ``CorruptStoreError``."""
    data = b"".join(lines)
    pristine = scan_lines(data, path="j", thread_id="t", offset=0, line=0, version=-1).records
    outcomes = {"exact": 0, "corrupt": 0}
    for at in positions:
        for byte in REPLACEMENTS:
            if data[at] == byte:
                continue
            damaged = data[:at] + bytes([byte]) + data[at + 1 :] + bytes(4096)
            try:
                scan = scan_lines(damaged, path="j", thread_id="t", offset=0, line=0, version=-1)
            except CorruptStoreError as exc:
                assert exc.line is not None and exc.line >= 1
                outcomes["corrupt"] += 1
                continue
            where = f"byte {at} ({data[at : at + 1]!r}) set to {bytes([byte])!r}"
            assert scan.records == pristine, f"{where}: records silently dropped or changed"
            assert scan.torn is None, where
            outcomes["exact"] += 1
    return outcomes


def test_no_single_byte_damage_anywhere_in_a_journal_is_silent(
    counter: CounterRunner, files: StoreFiles
) -> None:
    lines = done_thread(counter, files)
    outcomes = _single_byte_outcomes(lines, range(len(b"".join(lines))))
    # Only zeroing the last line end leaves every record readable (kept, its newline restored
    # by the next append); zeroing any other line end runs two records together.
    assert outcomes["exact"] == 1 and outcomes["corrupt"] > 4000
