"""LangGraph's durability-after-a-crash scenarios, with a real process killed by SIGKILL.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_pregel.py::test_pending_writes_resume (durability "sync"/"async": a superstep's
  finished task keeps its writes when the step does not complete; resume runs only the rest)
- test_async_durability.py (writes of a run interrupted mid-step are not lost)
- test_pregel.py::test_node_before_interrupt_resume_graph_api (the answer to an interrupt is
  kept, and nothing before it runs again, when the process dies after resuming)

The child (``lg_crash_child.py``) runs on the JSON-file store and is killed mid-step; the
parent resumes the thread in its own process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from _journals import thread_journals

from flowkit import Runner
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("lg_crash_child.py")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _journal_has(root: Path, needle: bytes) -> bool:
    # A spare folder renamed by the child's refill failed a walk of every folder, and the
    # test then waited for a child that hangs by design (a CI rehearsal timed out so).
    return any(needle in data for data in thread_journals(root))


def _run_and_kill(mode: str, root: Path, calls: Path, until: bytes, hung: str) -> None:
    """Run the child, and SIGKILL it once its journal holds ``until`` and node ``hung`` has
    started (and so hangs)."""
    env = {**os.environ, "FLOWKIT_PEER_HANG": "1", "FLOWKIT_PEER_CALLS": str(calls)}
    with subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(root)], env=env, stderr=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 60
        while not (_journal_has(root, until) and hung in _lines(calls)):
            assert proc.poll() is None, f"the child exited: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the child never got there"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL


def test_killed_mid_superstep_resume_runs_only_the_unfinished_branch(
    crash_child: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = crash_child
    root, calls = tmp_path / "store", tmp_path / "calls"
    _run_and_kill("parallel", root, calls, b'"kind":"item"', "slow")
    assert _lines(calls) in (["fast", "slow"], ["slow", "fast"])
    monkeypatch.setattr(child, "CALLS", calls)
    with JsonFileStore(root) as store:
        runner = Runner(child.PARALLEL, store=store)
        crashed = runner.get_state("t")
        assert crashed.status == "pending" and crashed.node == "both"
        assert crashed.state.value == []  # nothing merged: the superstep did not finish
        done = runner.resume("t")
    assert done.done and done.state.value == ["fast", "slow", "after"]
    assert sorted(_lines(calls)) == ["fast", "slow", "slow"]  # fast ran once, in the child


def test_killed_after_an_answer_keeps_the_answer_and_asks_nothing_again(
    crash_child: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = crash_child
    root, calls = tmp_path / "store", tmp_path / "calls"
    monkeypatch.setattr(child, "CALLS", calls)
    with JsonFileStore(root) as store:
        waiting = Runner(child.ASKING, store=store).start("t")
    assert waiting.payload == {"question": "go?"}
    _run_and_kill("answer", root, calls, b'"answer":"yes"', "act")
    with JsonFileStore(root) as store:
        runner = Runner(child.ASKING, store=store)
        crashed = runner.get_state("t")
        assert crashed.status == "pending" and crashed.node == "act"
        assert crashed.state.answer == "yes" and crashed.pauses == ()
        done = runner.resume("t")
    assert done.done and done.state.value == ["asked", "acted on yes"]
    assert _lines(calls) == ["interview", "act", "act"]
