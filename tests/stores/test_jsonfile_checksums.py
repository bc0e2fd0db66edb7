"""Journal format v2: every line and every snapshot is sealed with a CRC-32, damage is never
trusted, a zero-filled tail is torn, and v1 stores (no checksums) still load and upgrade.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import CorruptStoreError
from flowkit.records._records import FORMAT_VERSION
from flowkit.stores import JsonFileStore
from flowkit.stores._jsonl import seal, seal_holds, unseal

from .conftest import COUNTER, StoreFiles

CounterRunner = Callable[..., Runner[Any]]


def with_snapshot(counter: CounterRunner, files: StoreFiles, limit: int = 12) -> Runner[Any]:
    runner = counter(min_snapshot_bytes=1, snapshot_ratio=0.5)
    runner.start("t", {"limit": limit})
    assert files.snapshot("t").exists()
    return runner


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]


def test_every_line_and_the_snapshot_carry_a_checksum_plain_json_tools_can_read(
    counter: CounterRunner, files: StoreFiles
) -> None:
    with_snapshot(counter, files)
    for raw in files.data("t").splitlines():
        record = json.loads(raw)  # a plain JSON object per line, with a "crc" member last
        assert record["v"] == FORMAT_VERSION == 2
        assert list(record)[-1] == "crc"
        body = raw[: raw.rindex(b',"crc":')] + b"}"
        assert int(record["crc"], 16) == zlib.crc32(body)
    snapshot = json.loads(files.snapshot("t").read_bytes())
    assert snapshot["snapshot"]["state"]["count"] >= 1 and len(snapshot["crc"]) == 8


def test_seal_and_unseal_round_trip_and_catch_any_flipped_byte() -> None:
    body = b'{"a":1,"b":"x"}'
    sealed = seal(body)
    assert unseal(sealed) == (body, True)
    assert unseal(body) == (body, None)
    for at in range(len(sealed)):
        assert unseal(flip(sealed, at))[1] is not True


def test_a_flipped_byte_in_a_middle_line_names_the_file_and_line(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    counter().start("t", {"limit": 5})
    lines = files.data("t").splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"count":2', b'"count":7')  # still valid JSON, still a record
    files.journal("t").write_bytes(b"".join(lines))
    with pytest.raises(CorruptStoreError) as caught:
        open_store().load("t")
    assert caught.value.line == 3 and caught.value.path.endswith("journal.jsonl")
    assert "checksum" in str(caught.value)


def test_a_complete_last_line_failing_its_checksum_is_damage_not_a_torn_tail(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    counter().start("t", {"limit": 3})
    before = files.data("t")
    files.journal("t").write_bytes(before.replace(b'"count":3', b'"count":9'))
    with pytest.raises(CorruptStoreError) as caught:
        open_store().load("t")
    assert caught.value.line == 4


def test_a_damaged_snapshot_is_ignored_and_the_journal_rebuilds_the_exact_state(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    runner = with_snapshot(counter, files)
    expected = runner.get_state("t").state
    data = files.snapshot("t").read_bytes()
    files.snapshot("t").write_bytes(data.replace(b'"count":', b'"count":1', 1))
    with capture_logs() as logs:
        assert Runner(COUNTER, store=open_store()).get_state("t").state == expected
    assert any(e["event"] == "snapshot_ignored" and "checksum" in e["reason"] for e in logs)


def test_a_snapshot_whose_record_the_journal_no_longer_holds_is_not_trusted(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    # Power loss with the journal's last blocks never written: its tail reads as zeros while
    # the snapshot of the last version survived. The thread loads at a version the journal
    # holds, the next append goes where the valid data ends, and history stays readable.
    with_snapshot(counter, files, limit=12)
    journal = files.journal("t")
    data = journal.read_bytes()
    keep = files.data("t").rindex(b"\n", 0, len(files.data("t")) - 1)
    keep = data.rindex(b"\n", 0, keep) + 1  # the last two records are lost
    journal.write_bytes(data[:keep] + b"\0" * (len(data) - keep))
    store = open_store()
    with capture_logs() as logs:
        assert store.load("t").snapshot is None
    assert [e["event"] for e in logs] == ["snapshot_ignored"]
    fresh = Runner(COUNTER, store=store)
    assert fresh.get_state("t").state.count == 10
    assert fresh.resume("t").state.count == 12
    assert b"\0" not in files.data("t")
    history = Runner(COUNTER, store=open_store()).history("t")
    assert [c.state.count for c in history] == list(range(13))


TAILS = {
    "zeros at a line end (free space)": (b"", None),
    "a partial record, then zeros": (b'{"v":2,"version":4,"ts":1', "torn"),
    "one stray newline among zeros": (b"\0\0\n", "stray"),
}


@pytest.mark.parametrize("zeros", [1, 4096])
@pytest.mark.parametrize("case", list(TAILS))
def test_a_zero_filled_tail_is_skipped_and_the_next_append_writes_where_valid_data_ends(
    case: str,
    zeros: int,
    counter: CounterRunner,
    files: StoreFiles,
    open_store: Callable[..., JsonFileStore],
) -> None:
    counter().start("t", {"limit": 3})
    journal = files.journal("t")
    valid = files.data("t")
    partial, warning = TAILS[case]
    journal.write_bytes(valid + partial + b"\0" * zeros)
    store = open_store()
    warnings = store.load("t").warnings
    assert (warning in warnings[0]) if warning else warnings == ()
    runner = Runner(COUNTER, store=store)
    runner.update_state("t", {"limit": 4}, goto="step")
    assert runner.resume("t").state.count == 4
    assert files.data("t").startswith(valid) and b"\0" not in files.data("t")
    assert len(files.records("t")) == 6
    assert len(Runner(COUNTER, store=open_store()).history("t")) == 6


def _as_v1(line: bytes) -> bytes:
    body, intact = unseal(line.rstrip(b"\n"))
    assert intact
    record = json.loads(body)
    record["v"] = 1
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def test_a_v1_store_without_checksums_loads_and_new_writes_are_v2(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    runner = with_snapshot(counter, files, limit=6)
    expected = [c.state for c in runner.history("t")]
    journal = files.journal("t")
    journal.write_bytes(b"".join(_as_v1(x) for x in files.data("t").splitlines(True)))
    envelope = json.loads(unseal(files.snapshot("t").read_bytes())[0])
    envelope["snapshot"]["v"] = 1
    del envelope["record_bytes"], envelope["record_crc"]
    files.snapshot("t").write_bytes(json.dumps(envelope).encode())  # a v1 snapshot: no crc

    with capture_logs() as logs:
        fresh = Runner(COUNTER, store=open_store())
        assert [c.state for c in fresh.history("t")] == expected
        assert fresh.get_state("t").state == expected[-1]
    assert any(e["event"] == "snapshot_ignored" and "v1" in e["reason"] for e in logs)
    fresh.update_state("t", {"limit": 8}, goto="step")
    assert fresh.resume("t").state.count == 8
    versions = [json.loads(x)["v"] for x in files.data("t").splitlines()]
    assert versions == [1] * 7 + [2] * 3
    assert Runner(COUNTER, store=open_store()).get_state("t").state.count == 8


def test_a_v2_line_without_its_checksum_is_damage(
    counter: CounterRunner, files: StoreFiles, open_store: Callable[..., JsonFileStore]
) -> None:
    counter().start("t", {"limit": 3})
    lines = files.data("t").splitlines(keepends=True)
    lines[1] = unseal(lines[1].rstrip(b"\n"))[0] + b"\n"
    files.journal("t").write_bytes(b"".join(lines))
    with pytest.raises(CorruptStoreError) as caught:
        open_store().load("t")
    assert caught.value.line == 2 and "checksum" in str(caught.value)


@given(
    body=st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=6),
    flip=st.integers(min_value=-1, max_value=400),
)
def test_a_seal_is_judged_alike_with_and_without_copying_its_body(
    body: dict[str, str], flip: int
) -> None:
    """``seal_holds`` (a snapshot file, parsed whole) agrees with ``unseal`` on any line,
    sealed, damaged at any byte, or with no seal at all."""
    sealed = bytearray(seal(json.dumps(body).encode()))
    if 0 <= flip < len(sealed):
        sealed[flip] ^= 0x01
    for line in (bytes(sealed), json.dumps(body).encode()):
        assert seal_holds(line) == unseal(line)[1]
