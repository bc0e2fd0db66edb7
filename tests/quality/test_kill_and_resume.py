"""§5.2 with a real interruption: the process running a check is killed with SIGKILL while
fixes are being planned; the same check run again resumes the session (same id, its issues
Partial) and finishes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowkit.quality.app import QualityChecker
from flowkit.quality.demo import demo_file, editor_llm

from .conftest import AKI

pytestmark = pytest.mark.slow
CHILD = Path(__file__).with_name("_check_child.py")


def test_a_killed_check_is_resumed_by_running_it_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    manuscript = demo_file("episode_ja.txt")
    proc = subprocess.Popen([sys.executable, str(CHILD), str(workspace), str(manuscript)])
    deadline = time.monotonic() + 120
    while not list(workspace.glob("checks/*/*_plan_1_*_input.json")):
        assert proc.poll() is None, f"child exited with {proc.returncode}"
        assert time.monotonic() < deadline, "planning never started"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    with QualityChecker(workspace, principal=AKI, llm=editor_llm()) as checker:
        (session,) = checker.history(1)
        assert session.current_status == "active" and session.lock_status == "held"
        outcome = checker.check(manuscript, episode=1)
        assert outcome.resumed and outcome.session_id == session.session_id
        assert len(outcome.partial_ids) == 5  # all five were New when the process died
        assert outcome.result.done
        issues = checker.store.issues(session.session_id, principal=AKI)
        assert sorted(i.state for i in issues) == [
            "Partial", "Recurrence", "Resolved", "Resolved", "Resolved", "Resolved"]  # fmt: skip
        final = checker.store.get_session(session.session_id, principal=AKI)
        assert (final.current_status, final.lock_status) == ("completed", "released")
