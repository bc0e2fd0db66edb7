"""A JSON-file store's thread files are private: a journal may hold what people typed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from flowkit import Runner
from flowkit.examples.review import Doc, flow
from flowkit.stores import JsonFileStore


def test_every_file_of_a_thread_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with JsonFileStore(tmp_path) as store:
            runner = Runner(flow, store=store, track_attempts=True)
            runner.start("t1", Doc(topic="the name Sato"))
    finally:
        os.umask(old)
    files = [path for path in (tmp_path / "threads").rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"journal.jsonl", "attempt.json"}
    modes = {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in files}
    assert set(modes.values()) == {"0o600"}, modes
