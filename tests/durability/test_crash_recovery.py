"""Crash test: a child running a 500-step flow is SIGKILLed at random moments, again and again.

Each child starts the thread (or resumes it) and is killed mid-run. After every kill a fresh
store must read the thread, its state must be one the flow really passed through, and its
lock must be free. A last child finishes the run, which must end exactly where an
uninterrupted run ends.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

KILLS = 25
SEED = 20_261_122
MIN_DELAY_S = 0.005
#: Steps each remaining kill is guaranteed to find still to do.
RESERVE = 6


def kill_delay(
    rng: random.Random, worker: ModuleType, done: int, kills_left: int, step_s: float
) -> float:
    """How long after "ready" to kill: spread so the kills cover the whole run, yet never
    long enough to finish it.

    A worker step takes at least ``STEP_PAUSE``, so waiting ``d`` runs at most
    ``d / STEP_PAUSE`` steps; capping ``d`` keeps ``RESERVE`` steps for every later kill
    and for the final run.
    """
    spare = worker.STEPS - done - RESERVE * (kills_left + 1)
    share = spare / (kills_left + 1)
    cap = spare * worker.STEP_PAUSE
    return rng.uniform(MIN_DELAY_S, max(MIN_DELAY_S, min(2 * share * step_s, cap)))


def spawn(worker: ModuleType, root: Path, thread_id: str, log: Path) -> subprocess.Popen[str]:
    """A worker that imports at once but touches the store only once ``wait_until_ready``
    lets it go (so the next one can start while the one before runs)."""
    with log.open("a") as stderr:
        return subprocess.Popen(
            [sys.executable, worker.__file__, "count", str(root), thread_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def wait_until_ready(child: subprocess.Popen[str], log: Path) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.close()
    line = child.stdout.readline()
    assert line == "ready\n", f"worker did not start: {line!r}\n{log.read_text()}"


def read_thread(worker: ModuleType, root: Path, thread_id: str) -> Any:
    """The thread as a brand-new process would see it, or None if it was never created."""
    with JsonFileStore(root) as store:
        with store.lock(thread_id):  # a dead child holds no lock
            pass
        try:
            return Runner(worker.COUNTER, store=store).get_state(thread_id)
        except ThreadNotFoundError:  # killed before the start record was complete
            return None


def test_sigkill_at_random_moments_never_loses_or_corrupts_the_thread(
    worker: ModuleType, tmp_path: Path
) -> None:
    log = tmp_path / "children.log"
    baseline_root, root = tmp_path / "baseline", tmp_path / "crashed"
    with spawn(worker, baseline_root, "t", log) as uninterrupted:
        wait_until_ready(uninterrupted, log)
        began = time.perf_counter()
        assert uninterrupted.wait() == 0, log.read_text()
        step_s = (time.perf_counter() - began) / worker.STEPS  # to spread kills, not asserted
    expected = read_thread(worker, baseline_root, "t")
    assert expected.status == "done"
    assert expected.state.items == list(range(1, worker.STEPS + 1))

    rng = random.Random(SEED)
    progress: list[int] = []
    upcoming = spawn(worker, root, "t", log)
    try:
        for kill in range(KILLS):
            done = progress[-1] if progress else 0
            delay = kill_delay(rng, worker, done, KILLS - kill - 1, step_s)
            child, upcoming = upcoming, spawn(worker, root, "t", log)
            with child:
                wait_until_ready(child, log)
                time.sleep(delay)
                child.send_signal(signal.SIGKILL)
                assert child.wait() == -signal.SIGKILL, f"ended on its own\n{log.read_text()}"

            state = read_thread(worker, root, "t")
            if state is None:  # killed before the thread was created
                assert not progress
                continue
            # Every step is one record, so the state is exactly the flow after `version` steps.
            assert state.status == "pending" and state.node == "loop"
            assert state.state.count == state.version
            assert state.state.items == list(range(1, state.version + 1))
            assert not progress or state.version >= progress[-1], "a committed step was lost"
            progress.append(state.version)

        assert len(progress) >= KILLS - 3 and progress[-1] < worker.STEPS
        with upcoming as last:
            wait_until_ready(last, log)
            assert last.wait() == 0, log.read_text()
    finally:
        if upcoming.poll() is None:  # a check above failed: never leave it waiting
            upcoming.kill()
            upcoming.wait()

    final = read_thread(worker, root, "t")
    assert (final.status, final.node) == (expected.status, expected.node)
    assert final.state == expected.state and final.version == expected.version
    with JsonFileStore(root) as store:
        assert not store.load("t").warnings
        history = Runner(worker.COUNTER, store=store).history("t")
    assert [c.state.count for c in history] == list(range(worker.STEPS + 1))
