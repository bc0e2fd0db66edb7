"""Crash test for ``Map``: a child mapping 50 LLM calls is SIGKILLed at random moments, and
now and then once it has checkpointed some calls (so the test makes progress on a loaded
machine too).

After every kill a fresh store reads the thread; it stands at the map with some calls
checkpointed and the state untouched. No call that was checkpointed is ever asked again, and
once a last child finishes, the state equals an uninterrupted run's and the journal holds
exactly one LLM call per item.
"""

from __future__ import annotations

import importlib.util
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _journals import thread_journals

from flowkit import Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import ItemRecord, JsonFileStore

pytestmark = pytest.mark.slow

KILLS = 20
SEED = 20_261_124
WORKER = Path(__file__).with_name("map_worker.py")
#: LLM calls a killed child may answer (it hangs in the next): the map never finishes early.
BUDGET = 3
#: Every this many kills, the parent waits until the child has spent its budget (so has
#: checkpointed at least BUDGET - 1 items) before killing it: progress that no CPU load can
#: starve, where the other kills come at random moments after "ready".
PROGRESS_EVERY = 5


@pytest.fixture(scope="module")
def worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flowkit_map_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Children:
    """Children run one at a time, each started (imports and all) while the one before it
    runs; it is sent its arguments when its turn comes."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._next = self._spawn()

    def _spawn(self) -> subprocess.Popen[str]:
        with self.log.open("a") as stderr:
            return subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )

    def close(self) -> None:
        """Stop the one started ahead, never sent its arguments."""
        self._next.kill()
        self._next.wait(timeout=60)
        for stream in (self._next.stdin, self._next.stdout):
            if stream is not None:
                stream.close()

    def run(
        self,
        root: Path,
        calls: Path,
        kill_after: float | None,
        budget: int | None = None,
        *,
        spent: bool = False,
    ) -> None:
        """Run a child; kill it ``kill_after`` seconds after "ready" (or, ``spent``, after it
        has asked for more than its ``budget`` of calls), or let it finish (``kill_after``
        None)."""
        extra = [] if budget is None else [str(budget)]
        child, self._next = self._next, self._spawn()
        with child:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps([str(root), "t", str(calls), *extra]) + "\n")
            child.stdin.close()
            assert child.stdout.readline() == "ready\n", self.log.read_text()
            _finish(child, root, calls, self.log, kill_after, budget, spent)


def _finish(
    child: subprocess.Popen[str],
    root: Path,
    calls: Path,
    log: Path,
    kill_after: float | None,
    budget: int | None,
    spent: bool,
) -> None:
    """Let the child finish, or kill it as ``Children.run`` says."""
    if kill_after is None:
        assert child.wait() == 0, log.read_text()
        return
    if spent:
        assert budget is not None
        saved = _saved_items(root)
        _wait_for_asks(calls, child, budget + 1, log)
        # Finished calls are saved in groups (docs/parallel.md): while the last call hangs,
        # the group of those before it is saved within the group window. Wait for it, so
        # every few kills the map makes progress however loaded the machine is.
        _wait_for_saved(root, saved, child, log)
    try:
        child.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL, f"child finished before its kill\n{log.read_text()}"


def _wait_for_asks(calls: Path, child: subprocess.Popen[str], count: int, log: Path) -> None:
    pid = str(child.pid)
    deadline = time.monotonic() + 60
    while sum(1 for line in _lines(calls) if line.split()[0] == pid) < count:
        assert child.poll() is None, f"child exited with {child.returncode}\n{log.read_text()}"
        assert time.monotonic() < deadline, f"the child never asked {count} calls"
        time.sleep(0.01)


def _saved_items(root: Path) -> int:
    """How many ``item`` records the thread's journal holds now (read as raw lines)."""
    return sum(data.count(b'"kind":"item"') for data in thread_journals(root))


def _wait_for_saved(root: Path, before: int, child: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 60
    while _saved_items(root) <= before:
        assert child.poll() is None, f"child exited with {child.returncode}\n{log.read_text()}"
        assert time.monotonic() < deadline, "the child never saved a finished call"
        time.sleep(0.01)


def _lines(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def finished_items(worker: ModuleType, root: Path) -> tuple[Any, list[int]]:
    """The thread as a new process sees it, and the item indexes its journal checkpointed."""
    with JsonFileStore(root) as store:
        try:
            state = Runner(worker.FLOW, store=store).get_state("t")
        except ThreadNotFoundError:
            return None, []
        return state, [r.index for r in store.records("t") if isinstance(r, ItemRecord)]


def asked(calls: Path) -> list[str]:
    return [line.split()[1] for line in _lines(calls)]


@pytest.fixture
def children(tmp_path: Path) -> Iterator[Children]:
    started = Children(tmp_path / "children.log")
    yield started
    started.close()


def test_sigkilled_map_resumes_only_unfinished_items(
    worker: ModuleType, children: Children, tmp_path: Path
) -> None:
    children.run(tmp_path / "baseline", tmp_path / "baseline-calls", None)
    expected, _ = finished_items(worker, tmp_path / "baseline")
    assert expected.status == "done" and len(expected.state.answers) == worker.ITEMS

    root, calls = tmp_path / "crashed", tmp_path / "calls"
    rng = random.Random(SEED)
    kills = 0
    checkpointed: list[int] = []
    while kills < KILLS:
        # Never enough answers to finish the map, whenever the kill comes.
        budget = min(BUDGET, worker.ITEMS - len(checkpointed) - 1)
        spent = kills % PROGRESS_EVERY == PROGRESS_EVERY - 1
        before = len(asked(calls))
        # About one call per worker after "ready", or a call's time after the budget is spent.
        delay = rng.uniform(0.0, worker.CALL_S if spent else 2.5 * worker.CALL_S)
        children.run(root, calls, delay, budget, spent=spent)
        kills += 1
        state, items = finished_items(worker, root)
        if state is None:
            continue
        # Killed mid-map: the state is untouched until every call has finished.
        assert (state.status, state.node) == ("pending", "ask_all")
        assert state.state.answers == []
        assert len(items) == len(set(items)), "an item was checkpointed twice"
        assert set(checkpointed) <= set(items), "a checkpointed item was lost"
        again = {t for t in asked(calls)[before:]} & {f"topic-{i:02d}" for i in checkpointed}
        assert not again, f"items asked again after their checkpoint: {sorted(again)}"
        checkpointed = items

    assert kills >= KILLS and 0 < len(checkpointed) < worker.ITEMS
    before = len(asked(calls))
    children.run(root, calls, None)
    final, items = finished_items(worker, root)
    assert final.state == expected.state and (final.status, final.node) == ("done", "__end__")
    assert sorted(items) == list(range(worker.ITEMS))
    assert not {t for t in asked(calls)[before:]} & {f"topic-{i:02d}" for i in checkpointed}
    with JsonFileStore(root) as store:
        journaled = Runner(worker.FLOW, store=store).llm_calls("t")
    prompts = Counter(str(call) for call in journaled)
    assert len(journaled) == worker.ITEMS and len(prompts) == worker.ITEMS
