"""``flowkit worker``: ``--llm`` gives the flows it runs an LLM, as ``serve`` and ``sas`` take one;
``$FLOWKIT_STORE`` may name its database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from _pg import require_postgres, scratch_database

from flowkit import Runner
from flowkit.cli import main
from flowkit.stores.postgres import PostgresStore
from flowkit.workflows import load_flow

TARGET = f"{Path(__file__).resolve().parent.parent / 'flows' / 'asks_llm.py'}:flow"


def _without_llm(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name != "FLOWKIT_LLM"}


def _settled(store: PostgresStore, thread_id: str) -> bool:
    return any(s.thread_id == thread_id and s.status == "done" for s in store.statuses())


def test_a_worker_runs_flows_that_call_the_llm_it_was_given(tmp_path: Path) -> None:
    require_postgres()
    with scratch_database(migrated=True) as database:
        _answer_through_a_worker(database, tmp_path)


def _answer_through_a_worker(database: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"match": "capital", "response": "Paris"}]}))
    log = tmp_path / "worker.log"
    with PostgresStore(database) as store:
        client = Runner(load_flow(TARGET), store=store)
        client.submit("q-1", {"question": "The capital of France?"})
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "flowkit", "worker", TARGET, "--llm", f"scripted:{rules}"],
                env={**_without_llm(os.environ), "FLOWKIT_STORE": database},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 60
            while not _settled(store, "q-1") and time.monotonic() < deadline:
                assert worker.poll() is None, log.read_text()
                time.sleep(0.05)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, log.read_text()
        answered = client.get_state("q-1")
    assert (answered.status, answered.state.answer) == ("done", "Paris")
    assert "worker stopped: 1 claims, 1 runs, 0 inputs rejected, 0 failed runs" in log.read_text()


@pytest.mark.parametrize("count", ["0", "-1", "two"])
def test_a_worker_count_below_one_is_a_usage_error(count: str) -> None:
    argv = ["worker", TARGET, "--store", "postgresql://x@127.0.0.1/none", "--concurrency", count]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
