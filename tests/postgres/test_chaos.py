"""Acceptance 2 and 3 of issue #14: many workers, random kills, and racing clients.

Chaos: 4 worker processes run 500 threads of a 20-step flow whose gate a separate client
process answers, while a random worker is SIGKILLed (and restarted) every second or two. In the
end every thread has the state of an uninterrupted run, each step and input was committed
exactly once (journal rows counted), no input was lost and no history forked.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.errors import ConflictError
from flowkit.stores.postgres import PostgresStore

from ._procs import query, spawn_worker
from .flows import HALF, STEPS, expected
from .gate_client import answer

pytestmark = pytest.mark.slow

THREADS = 500
WORKERS = 4
CLIENT = Path(__file__).with_name("gate_client.py")


def test_chaos_many_workers_random_kills_exact_state_no_forks_no_lost_inputs(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    url, schema = pg
    store = open_pg(pool_size=4)
    runner = Runner(STEPS, store=store)
    for index in range(THREADS):
        runner.submit(f"t{index}", {"seed": index})
    log = tmp_path / "workers.log"

    def worker() -> subprocess.Popen[bytes]:
        return spawn_worker(url, schema, concurrency=2, lease=2.0, pause=0.001, log=log)

    workers = [worker() for _ in range(WORKERS)]
    client = subprocess.Popen([sys.executable, str(CLIENT), url, schema, str(THREADS)])
    rng = random.Random(14)
    kills = 0
    deadline = time.monotonic() + 240
    try:
        while len(store.statuses(status="done")) < THREADS:
            assert time.monotonic() < deadline, f"not done in time; {kills} kills"
            time.sleep(rng.uniform(1.0, 2.5))
            victim = rng.randrange(WORKERS)
            workers[victim].send_signal(signal.SIGKILL)
            workers[victim].wait(30)
            workers[victim] = worker()
            kills += 1
        assert client.wait(60) == 0
    finally:
        client.kill()
        for proc in workers:
            proc.kill()
        for proc in workers:
            proc.wait(30)
    assert kills >= 5
    # The exact state of an uninterrupted run, for every thread.
    for index in range(THREADS):
        thread_id = f"t{index}"
        got = runner.get_state(thread_id)
        assert got.status == "done" and got.version == 2 * HALF + 1, thread_id
        assert got.state == expected(index, **answer(thread_id)), thread_id  # type: ignore[arg-type]
    # Each step and input committed exactly once: 22 journal rows (start, 20 steps, 1 input)
    # per thread, versions 0..21, and one event row for each.
    rows = query(
        url,
        f"SELECT thread_id, count(*), count(DISTINCT version), min(version), max(version), "
        f"count(*) FILTER (WHERE kind = 'input') FROM {schema}.records GROUP BY thread_id",
    )
    assert len(rows) == THREADS
    assert Counter((c, d, lo, hi, i) for _, c, d, lo, hi, i in rows) == {
        (22, 22, 0, 21, 1): THREADS
    }
    assert query(url, f"SELECT count(*) FROM {schema}.events")[0][0] == THREADS * 22
    # No input lost: every submitted item (a start and an answer per thread) was used, none is
    # left.
    states = query(url, f"SELECT state, count(*) FROM {schema}.work GROUP BY state")
    assert dict(states) == {"done": 2 * THREADS}


def _race(clients: list[Runner[object]], version: int) -> dict[str, str]:
    """Both clients answer the gate at once, each with its own connections; who won."""
    barrier = threading.Barrier(len(clients))
    outcome: dict[str, str] = {}

    def answer_gate(name: str, runner: Runner[object]) -> None:
        barrier.wait()
        try:
            runner.resume("race", {"by": name}, expected_version=version)
        except ConflictError:
            outcome[name] = "conflict"
        else:
            outcome[name] = "won"

    racers = [
        threading.Thread(target=answer_gate, args=(name, runner))
        for name, runner in zip("ab", clients, strict=True)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    return outcome


def test_two_clients_answering_one_gate_at_once_exactly_one_wins_each_round(
    open_pg: Callable[..., PostgresStore],
) -> None:
    from .flows import ROUNDS

    rounds = 100
    clients: list[Runner[object]] = [
        Runner(ROUNDS, store=open_pg()),  # type: ignore[list-item]
        Runner(ROUNDS, store=open_pg()),  # type: ignore[list-item]
    ]
    waiting = clients[0].start("race")
    winners: list[str] = []
    for round_ in range(rounds):
        outcome = _race(clients, waiting.version)
        assert sorted(outcome.values()) == ["conflict", "won"], (round_, outcome)
        winners.append(next(name for name, result in outcome.items() if result == "won"))
        waiting = clients[round_ % 2].get_state("race")
        assert waiting.version == 2 * (round_ + 1)
    assert waiting.state.answers == winners  # type: ignore[attr-defined]
    store = clients[0].store
    assert store is not None
    kinds = Counter(r.kind for r in store.records("race"))
    assert kinds == {"start": 1, "input": rounds, "step": rounds}
