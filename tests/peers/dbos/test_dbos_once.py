"""DBOS peer scenarios: a workflow id runs once, whoever starts it and how often.

Ported as flowkit behaviour (a thread id is DBOS's workflow id) from dbos-transact-py
``tests/test_dbos.py`` (``test_simple_workflow``, ``test_start_workflow``,
``test_exception_workflow``) and ``tests/test_queue.py`` (``test_duplicate_workflow_id``):
starting an id again never re-runs a step, a finished thread keeps its result or error, and
of two concurrent starts of one id exactly one runs.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner
from flowkit.errors import ConflictError, NotWaitingError, ThreadExistsError
from flowkit.stores import JsonFileStore

from . import _child


class Greeting(BaseModel):
    name: str = ""
    text: str = ""


def _flow(runs: Counter[str], *, fail: bool = False) -> Flow:
    def greet(state: Greeting) -> dict[str, Any]:
        runs["greet"] += 1
        return {"text": f"{state.name}1"}

    def sign(state: Greeting) -> dict[str, Any]:
        runs["sign"] += 1
        if fail:
            raise LookupError("test error")
        return {"text": state.text + state.name}

    return Flow(
        name="dbos_once",
        state=Greeting,
        start="greet",
        nodes={"greet": greet, "sign": sign},
        routes={"greet": "sign", "sign": END},
    )


def test_starting_a_finished_id_again_runs_no_step(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        assert runner.start("wf-alice", {"name": "alice"}).state.text == "alice1alice"
        with pytest.raises(ThreadExistsError) as caught:
            runner.start("wf-alice", {"name": "alice"})
        assert caught.value.thread_id == "wf-alice"
        with pytest.raises(NotWaitingError):
            runner.resume("wf-alice")
    # A new process (a fresh store) reads the recorded result and runs nothing.
    with JsonFileStore(tmp_path / "store") as store:
        again = Runner(_flow(runs), store=store)
        with pytest.raises(ThreadExistsError):
            again.start("wf-alice", {"name": "alice"})
        result = again.get_state("wf-alice")
    assert (result.status, result.state.text) == ("done", "alice1alice")
    assert runs == {"greet": 1, "sign": 1}


def test_a_failed_id_keeps_its_error_and_is_not_run_by_a_second_start(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs, fail=True), store=store)
        failed = runner.start("wf-err", {"name": "bob"})
        assert failed.status == "failed" and failed.node == "sign"
        assert failed.error is not None
        assert (failed.error.type, failed.error.message) == ("LookupError", "test error")
        with pytest.raises(ThreadExistsError):
            runner.start("wf-err", {"name": "bob"})
        seen = runner.get_state("wf-err")
    assert seen.status == "failed" and seen.error is not None
    assert seen.error.message == "test error"
    assert runs == {"greet": 1, "sign": 1}


def test_concurrent_starts_of_one_id_in_one_process_have_one_winner(tmp_path: Path) -> None:
    lock = threading.Lock()
    greeted: list[str] = []

    def slow_greet(state: Greeting) -> dict[str, Any]:
        with lock:
            greeted.append(state.name)
        return {"text": state.name}

    flow = Flow(
        name="dbos_once_race",
        state=Greeting,
        start="greet",
        nodes={"greet": slow_greet},
        routes={"greet": END},
    )
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def starter(store: JsonFileStore) -> None:
        barrier.wait()
        try:
            Runner(flow, store=store).start("wf-race", {"name": "x"})
        except (ThreadExistsError, ConflictError) as exc:
            outcome = type(exc).__name__
        else:
            outcome = "won"
        with lock:
            outcomes.append(outcome)

    stores = [JsonFileStore(tmp_path / "store") for _ in range(4)]
    try:
        workers = [threading.Thread(target=starter, args=(s,)) for s in stores]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        for store in stores:
            store.close()
    assert outcomes.count("won") == 1 and len(outcomes) == 4
    assert greeted == ["x"]


@pytest.mark.slow
def test_concurrent_starts_of_one_id_in_two_processes_have_one_winner(tmp_path: Path) -> None:
    root, log = tmp_path / "store", tmp_path / "runs.log"
    children = [
        subprocess.Popen(
            [sys.executable, _child.__file__, "race", str(root), "wf-race", str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for child in children:  # both have imported flowkit: let them go together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    answers = []
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        answers.append(out.strip())
    assert sorted(answers).count("won") == 1, answers
    assert set(answers) <= {"won", "exists", "conflict"}
    ran = Counter(line.split()[0] for line in log.read_text().splitlines())
    assert ran == {"one": 1, "two": 1}
    with JsonFileStore(root) as store:
        done = Runner(_child.TWO_STEPS, store=store).get_state("wf-race")
    assert done.done and done.state.steps == ["one", "two"]
