"""Worker processes: a killed worker's threads are resumed by another from their last committed
step; SIGTERM finishes or gives back what a worker holds."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.stores.postgres import PostgresStore
from flowkit.workers import Worker

from ._procs import query, spawn_worker, wait_for
from .flows import STEPS, expected

pytestmark = pytest.mark.slow


def _records(url: str, schema: str) -> int:
    return int(query(url, f"SELECT count(*) FROM {schema}.records")[0][0])


def _each_version_once(url: str, schema: str) -> None:
    rows = query(
        url,
        f"SELECT thread_id, count(*), count(DISTINCT version), max(version) "
        f"FROM {schema}.records GROUP BY thread_id",
    )
    for thread_id, count, distinct, top in rows:
        assert count == distinct == top + 1, thread_id


def test_a_killed_workers_threads_are_resumed_by_another_from_the_last_step(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    store = open_pg()
    client = Runner(STEPS, store=store)
    for index in range(6):
        client.submit(f"t{index}", {"seed": index})
    first = spawn_worker(url, schema, concurrency=2, pause=0.05)
    try:
        wait_for(lambda: _records(url, schema) >= 15, 60, "the first worker to commit steps")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        held = query(url, f"SELECT count(*) FROM {schema}.leases")[0][0]
        assert held >= 1, "the killed worker was mid-run"
        second = spawn_worker(url, schema, concurrency=2)
        try:
            wait_for(
                lambda: (
                    {s.status for s in store.statuses()} == {"waiting"}
                    and len(store.statuses()) == 6
                ),
                90,
                "the second worker to bring every thread to the gate",
            )
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(60) == 0
    finally:
        first.kill()
    _each_version_once(url, schema)
    for index in range(6):
        client.submit(f"t{index}", {"by": "ann"})
    Worker(STEPS, store=store).run(until_idle=True)
    for index in range(6):
        assert client.get_state(f"t{index}").state == expected(index, "ann", 0)
    _each_version_once(url, schema)


def test_sigterm_finishes_the_runs_in_hand_and_gives_back_every_lease(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    url, schema = pg
    store = open_pg()
    client = Runner(STEPS, store=store)
    for index in range(4):
        client.submit(f"t{index}", {"seed": index})
    log = tmp_path / "worker.log"
    worker = spawn_worker(url, schema, concurrency=2, pause=0.05, lease=60, log=log)
    wait_for(lambda: _records(url, schema) >= 5, 60, "the worker to start running")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, log.read_text()
    assert "worker stopped:" in log.read_text()
    assert query(url, f"SELECT count(*) FROM {schema}.leases")[0][0] == 0
    statuses = {s.thread_id: s.status for s in store.statuses()}
    assert "waiting" in statuses.values(), "the runs in hand were finished to their pause"
    Worker(STEPS, store=store, concurrency=2).run(until_idle=True)  # no 60 s lease to wait out
    assert {s.status for s in store.statuses()} == {"waiting"} and len(store.statuses()) == 4
    _each_version_once(url, schema)
