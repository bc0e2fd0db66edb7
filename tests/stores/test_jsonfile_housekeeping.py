"""Records with out-of-range times and orphaned snapshot temporary files.

A time that is valid JSON but beyond what a date can show is damage in that thread only:
``flowkit threads`` reports it and lists the others. Snapshot temporary files left by a
process killed mid-write are removed when a store first opens the thread, and so are those of
a compaction killed mid-write (at once by the next compaction, which holds the thread's lock).
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
    JsonFileStore(root).reindex()  # the journal was changed by hand
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
    stale = [
        _orphan(folder, name, STALE_TEMP_SECONDS + 5)
        for name in (".snapshot.json.ab12cd_3.tmp", ".journal.jsonl.ab12cd34.tmp")
    ]
    fresh = [  # maybe being written now
        _orphan(folder, name, 0)
        for name in (".snapshot.json.zz99yy00.tmp", ".journal.jsonl.q1w2e3r4.tmp")
    ]
    others = [
        _orphan(folder, name, STALE_TEMP_SECONDS + 5)
        for name in ("snapshot.json.ab12cd34.tmp", ".journal.jsonl.tmp", "notes.tmp")
    ]
    assert JsonFileStore(root).load("t").records
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in fresh + others)


_KILLED_COMPACTION = """
import os, signal, sys
from flowkit import Runner
from flowkit.stores import JsonFileStore
sys.path.insert(0, sys.argv[2])
from conftest import COUNTER

def killed(src, dst):  # the process dies after writing the new journal, before the rename
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = killed
Runner(COUNTER, store=JsonFileStore(sys.argv[1], fsync=False)).compact("t", keep=2)
"""


def _compaction_killed_mid_write(root: Path) -> list[Path]:
    """Run a compaction of thread ``t`` in a process killed before its rename; its leftovers."""
    import signal
    import subprocess
    import sys

    child = subprocess.run(
        [sys.executable, "-c", _KILLED_COMPACTION, str(root), str(Path(__file__).parent)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    return sorted((root / "threads" / "t").glob(".journal.jsonl.*.tmp"))


def test_a_compaction_killed_mid_write_leaves_a_temporary_file_the_next_open_removes(
    counter: Callable[..., Runner[Any]], files: StoreFiles, root: Path
) -> None:
    counter(fsync=False).start("t", {"limit": 6})
    before = files.journal("t").read_bytes()
    (leftover,) = _compaction_killed_mid_write(root)
    assert b'"kind":"start"' in leftover.read_bytes()  # a whole compacted journal
    # Never mistaken for the journal: the thread is exactly as before, and no new thread.
    runner = Runner(counter().flow, store=JsonFileStore(root, fsync=False))
    assert [c.version for c in runner.history("t")] == list(range(7))
    assert runner.threads() == ["t"] and files.journal("t").read_bytes() == before
    then = time.time() - STALE_TEMP_SECONDS - 5
    os.utime(leftover, (then, then))
    assert JsonFileStore(root).load("t").records
    assert not leftover.exists()


def test_the_next_compaction_removes_a_killed_compactions_temporary_file_at_once(
    counter: Callable[..., Runner[Any]], files: StoreFiles, root: Path
) -> None:
    counter(fsync=False).start("t", {"limit": 6})
    (leftover,) = _compaction_killed_mid_write(root)
    runner = counter(fsync=False)
    assert runner.compact("t", keep=2) > 0
    assert not leftover.exists()
    assert list(files.journal("t").parent.glob("*.tmp")) == []
    assert runner.get_state("t").state.count == 6
