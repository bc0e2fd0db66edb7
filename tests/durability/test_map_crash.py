"""Crash test for ``Map``: a child mapping 50 LLM calls is SIGKILLed at random moments.

After every kill a fresh store reads the thread; it stands at the map with some calls
checkpointed and the state untouched. No call that was checkpointed is ever asked again, and
once a last child finishes, the state equals an uninterrupted run's and the journal holds
exactly one LLM call per item.
"""

from __future__ import annotations

import importlib.util
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import ItemRecord, JsonFileStore

pytestmark = pytest.mark.slow

KILLS = 20
SEED = 20_261_124
WORKER = Path(__file__).with_name("map_worker.py")


@pytest.fixture(scope="module")
def worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flowkit_map_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_child(root: Path, calls: Path, log: Path, kill_after: float | None) -> None:
    with log.open("a") as stderr:
        child = subprocess.Popen(
            [sys.executable, str(WORKER), str(root), "t", str(calls)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    with child:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", log.read_text()
        if kill_after is None:
            assert child.wait() == 0, log.read_text()
            return
        try:
            child.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL, f"child finished before its kill\n{log.read_text()}"


def finished_items(worker: ModuleType, root: Path) -> tuple[Any, list[int]]:
    """The thread as a new process sees it, and the item indexes its journal checkpointed."""
    with JsonFileStore(root) as store:
        try:
            state = Runner(worker.FLOW, store=store).get_state("t")
        except ThreadNotFoundError:
            return None, []
        return state, [r.index for r in store.records("t") if isinstance(r, ItemRecord)]


def asked(calls: Path) -> list[str]:
    return [line.split()[1] for line in calls.read_text().splitlines()] if calls.exists() else []


def test_sigkilled_map_resumes_only_unfinished_items(worker: ModuleType, tmp_path: Path) -> None:
    log = tmp_path / "children.log"
    run_child(tmp_path / "baseline", tmp_path / "baseline-calls", log, None)
    expected, _ = finished_items(worker, tmp_path / "baseline")
    assert expected.status == "done" and len(expected.state.answers) == worker.ITEMS

    root, calls = tmp_path / "crashed", tmp_path / "calls"
    rng = random.Random(SEED)
    kills = 0
    checkpointed: list[int] = []
    while kills < KILLS:
        remaining = worker.ITEMS - len(checkpointed)
        # Enough time for about one call per worker, never enough to finish the map.
        cap = worker.CALL_S * max(1, remaining - 2 * (KILLS - kills)) / worker.CONCURRENCY
        before = len(asked(calls))
        run_child(root, calls, log, rng.uniform(0.0, min(cap, 2.5 * worker.CALL_S)))
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
    run_child(root, calls, log, None)
    final, items = finished_items(worker, root)
    assert final.state == expected.state and (final.status, final.node) == ("done", "__end__")
    assert sorted(items) == list(range(worker.ITEMS))
    assert not {t for t in asked(calls)[before:]} & {f"topic-{i:02d}" for i in checkpointed}
    with JsonFileStore(root) as store:
        journaled = Runner(worker.FLOW, store=store).llm_calls("t")
    prompts = Counter(str(call) for call in journaled)
    assert len(journaled) == worker.ITEMS and len(prompts) == worker.ITEMS
