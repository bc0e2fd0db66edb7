"""DBOS peer scenarios: queued workflows on PostgreSQL, run once, recovered after a crash.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_queue.py``
(``test_simple_queue``, ``test_duplicate_workflow_id``, ``test_queue_recovery``,
``test_queue_deduplication``): a DBOS queue is flowkit's work queue (``Runner.submit`` and a
``Worker``) on a ``PostgresStore``. A start queued twice for one id runs once; the second is
rejected with its reason, never dropped; a thread whose process was killed mid-step is
resumed by a worker from its last committed step once the dead process's lease runs out.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit import Runner
from flowkit.stores.postgres import PostgresStore
from flowkit.workers import Worker

from . import _child


def test_a_start_queued_twice_for_one_id_runs_once(
    open_pg: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    store = open_pg()
    log = tmp_path / "runs.log"
    _child.LOG[:] = [log]
    try:
        client = Runner(_child.TWO_STEPS, store=store)
        first = client.submit("wf-q", {"value": "a"})
        second = client.submit("wf-q", {"value": "b"})
        Worker(_child.TWO_STEPS, store=store, timer_poll_s=None).run(until_idle=True)
    finally:
        _child.LOG.clear()
    done = client.get_state("wf-q")
    assert done.done and done.state.value == "a!"
    ran = [line.split()[0] for line in log.read_text().splitlines()]
    assert ran == ["one", "two"]
    items = [store.work_item(first), store.work_item(second)]
    assert [item.state if item else None for item in items] == ["done", "rejected"]
    assert items[1] is not None and items[1].error  # rejected with its reason


@pytest.mark.slow
def test_a_thread_killed_mid_step_is_resumed_by_a_worker(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    url, schema = pg
    log = tmp_path / "runs.log"
    crashed = subprocess.run(
        [sys.executable, _child.__file__, "pgcrash", f"{url}#{schema}", "wf-pg", str(log)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    store = open_pg()
    pending = Runner(_child.TWO_STEPS, store=store).get_state("wf-pg")
    assert (pending.status, pending.node, pending.state.steps) == ("pending", "two", ["one"])
    worker = Worker(_child.TWO_STEPS, store=store, timer_poll_s=None)
    stats: Any = None
    for _ in range(50):  # the dead child's lease runs out within PG_LEASE_S
        stats = worker.run(until_idle=True)
        if stats.runs:
            break
        time.sleep(_child.PG_LEASE_S / 5)
    assert stats is not None and stats.runs == 1
    done = Runner(_child.TWO_STEPS, store=store).get_state("wf-pg")
    assert done.done and done.state.steps == ["one", "two"]
    ran = [line.split()[0] for line in log.read_text().splitlines()]
    assert ran == ["one", "two"]  # the child's lines only: `one` was not run again
