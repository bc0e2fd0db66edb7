"""Records with out-of-range times and orphaned snapshot temporary files.

A time that is valid JSON but beyond what a date can show is damage in that thread only:
``flowkit threads`` reports it and lists the others. Snapshot temporary files left by a
process killed mid-write are removed when a store first opens the thread.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.errors import CorruptStoreError
from flowkit.stores import JsonFileStore
from flowkit.stores._files import STALE_TEMP_SECONDS
from flowkit.stores._jsonl import seal, unseal

from .conftest import StoreFiles


def _set_ts(files: StoreFiles, thread_id: str, line: int, ts: float) -> None:
    lines = files.data(thread_id).splitlines(keepends=True)
    record = json.loads(unseal(lines[line - 1].rstrip(b"\n"))[0])
    record["ts"] = ts
    body = json.dumps(record, separators=(",", ":")).encode()
    files.damage(thread_id, line=line, content=seal(body) + b"\n")


@pytest.mark.parametrize("ts", [1e300, -1e300, 1e20])
def test_a_record_time_out_of_range_is_damage_in_that_thread_only(
    ts: float,
    tally: Callable[..., Runner[Any]],
    files: StoreFiles,
    root: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runner = tally()
    runner.start("bad")
    runner.start("good")
    _set_ts(files, "bad", 1, ts)  # sealed again: only its time is wrong
    with pytest.raises(CorruptStoreError) as caught:
        JsonFileStore(root).load("bad")
    assert caught.value.line == 1
    assert main(["threads", "--store", str(root)]) == 1
    captured = capsys.readouterr()
    listed = [line.split()[:3] for line in captured.out.splitlines()]
    assert ["good", "tally", "waiting"] in listed and ["bad", "?", "unreadable"] in listed
    assert "journal.jsonl:1" in captured.err and "Traceback" not in captured.err
    assert main(["show", "bad", "--store", str(root)]) != 0
    assert "Traceback" not in capsys.readouterr().err


def _orphan(directory: Path, name: str, age: float) -> Path:
    path = directory / name
    path.write_bytes(b'{"snapshot": ')
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_stale_snapshot_temporary_files_are_removed_when_the_thread_is_opened(
    tally: Callable[..., Runner[Any]], files: StoreFiles, root: Path
) -> None:
    tally().start("t")
    folder = files.journal("t").parent
    stale = _orphan(folder, ".snapshot.json.ab12cd_3.tmp", STALE_TEMP_SECONDS + 5)
    fresh = _orphan(folder, ".snapshot.json.zz99yy00.tmp", 0)  # maybe being written now
    others = [
        _orphan(folder, name, STALE_TEMP_SECONDS + 5)
        for name in (".journal.jsonl.ab12cd34.tmp", "snapshot.json.ab12cd34.tmp", "notes.tmp")
    ]
    assert JsonFileStore(root).load("t").records
    assert not stale.exists()
    assert fresh.exists() and all(p.exists() for p in others)
