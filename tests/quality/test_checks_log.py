"""The per-session LLM I/O log (``checks/<session_id>/``): writing a file costs the same however
many the session has (the manifest is not rewritten; it lists the folder's files when read),
parallel writes get numbers of their own, and no write ever replaces another's file."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flowkit.quality.audit import ChecksLog

SID = "QC_EP001_20250101_0000"


def test_writing_a_file_leaves_the_manifest_alone(tmp_path: Path) -> None:
    log = ChecksLog(tmp_path, fsync=False)
    log.update_manifest(SID, status="active")
    manifest = tmp_path / SID / "manifest.json"
    before = manifest.read_bytes()
    for n in range(5):
        log.write(SID, f"plan_1_{n:08x}", "input", {"n": n})
    assert manifest.read_bytes() == before
    listed = log.manifest(SID)["files"]
    assert listed == [f"{n + 1:03d}_plan_1_{n:08x}_input.json" for n in range(5)]
    log.update_manifest(SID, status="completed")  # a saved manifest lists them too
    assert json.loads(manifest.read_bytes())["files"] == listed


def test_parallel_writes_get_numbers_of_their_own(tmp_path: Path) -> None:
    log = ChecksLog(tmp_path, fsync=False)
    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda n: log.write(SID, f"plan_1_{n:08x}", "input", {"n": n}),
                              range(40)))  # fmt: skip
    numbers = sorted(int(p.name[:3]) for p in paths)
    assert numbers == list(range(1, 41))
    assert {json.loads(p.read_text())["n"] for p in paths} == set(range(40))
    assert not [p for p in (tmp_path / SID).iterdir() if p.name.endswith(".tmp")]


def test_two_handles_on_one_session_never_replace_a_file(tmp_path: Path) -> None:
    first, second = ChecksLog(tmp_path, fsync=False), ChecksLog(tmp_path, fsync=False)
    written = [first.write(SID, "check", "input", {"by": "first"})]
    written.append(second.write(SID, "check", "input", {"by": "second"}))
    written.append(first.write(SID, "check", "input", {"by": "first again"}))  # stale count
    assert len(set(written)) == 3
    assert [json.loads(p.read_text())["by"] for p in written] == ["first", "second", "first again"]
    assert first.manifest(SID)["files"] == [p.name for p in written]
