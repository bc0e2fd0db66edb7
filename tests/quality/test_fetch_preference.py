"""UC-120-003 "on reuse, prefer the tool that last succeeded", across processes: the
preference is read back from the stored fetch log, on the JSON-file store and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit.quality.fetch import ArtifactCache, last_successful_tool
from flowkit.quality.models import ManuscriptFetchLog

from ._pg import pg_database

TESTS = Path(__file__).resolve().parents[1]
TEXT = "吾輩は猫である。名前はまだ無い。\n"


@pytest.fixture(params=["json", "pg"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "json":
        yield "json", str(tmp_path / "state")
    else:
        with pg_database() as dsn:
            yield "pg", dsn


def _child(kind: str, where: str, workspace: Path, *words: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        [sys.executable, "-m", "quality._fetch_child", kind, where, str(workspace), *words],
        capture_output=True, text=True, env=env, cwd=TESTS, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_a_new_process_prefers_the_tool_that_last_succeeded(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    kind, where = backend
    manuscript = tmp_path / "episode_001.txt"
    manuscript.write_text(TEXT, encoding="utf-8")
    workspace = tmp_path / "ws"
    sid = _child(kind, where, workspace, "record", str(manuscript))
    # Now the first tool would succeed too: a process that forgot the preference tries it first.
    ArtifactCache(workspace / "artifacts").put(TEXT)
    assert _child(kind, where, workspace, "fetch", sid) == "read_snapshot:success"
    # A new session of the same reader prefers it as well (its own log is still empty).
    assert _child(kind, where, workspace, "fetch", "new") == "read_snapshot:success"


def _log(tool: str, result: str) -> ManuscriptFetchLog:
    return ManuscriptFetchLog(
        fetch_id="0" * 32, session_id="QC_EP001_20250101_0000", manuscript_hash="a" * 64,
        tool_id=tool, result=result, latency_ms=0, attempt_index=0,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_last_success_in_the_log_is_the_preference() -> None:
    assert last_successful_tool([]) is None
    assert last_successful_tool([_log("fetch_artifact", "failure")]) is None
    logs = [_log("fetch_artifact", "success"), _log("read_snapshot", "success"),
            _log("request_manual_upload", "failure")]  # fmt: skip
    assert last_successful_tool(logs) == "read_snapshot"
