"""DBOS peer scenarios: many workflows at once, and one winner per workflow id.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_concurrency.py``
(``test_concurrent_workflows``, ``test_gather_manythings``) and ``tests/test_queue.py``
(``test_duplicate_workflow_id``, ``test_worker_concurrency_with_n_dbos_instances``): threads
of one flow run side by side on one store, each finishing with its own state; of concurrent
starts of one id exactly one runs, on a JSON-file store and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, Runner, node
from flowkit.errors import ConflictError, ThreadExistsError
from flowkit.stores import JsonFileStore, Store

THREADS = 12


class Tally(BaseModel):
    seed: int = 0
    total: int = 0
    trail: list[str] = []


def _flow(counts: Counter[str], lock: threading.Lock) -> Flow:
    def add(state: Tally, ctx: Context) -> dict[str, Any]:
        with lock:
            counts[ctx.thread_id] += 1
        return {"total": state.seed * 2, "trail": [ctx.thread_id]}

    async def double(state: Tally) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"total": state.total * 2, "trail": [*state.trail, "double"]}

    return Flow(
        name="dbos_many",
        state=Tally,
        start="add",
        nodes={"add": add, "double": double},
        routes={"add": "double", "double": END},
    )


def test_many_threads_run_at_once_on_one_store(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(counts, lock), store=store)
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda i: runner.start(f"wf-{i}", {"seed": i}), range(THREADS)))
    assert [(r.thread_id, r.status, r.state.total) for r in results] == [
        (f"wf-{i}", "done", i * 4) for i in range(THREADS)
    ]
    assert all(r.state.trail == [r.thread_id, "double"] for r in results)
    assert counts == {f"wf-{i}": 1 for i in range(THREADS)}


def test_many_threads_run_at_once_from_asyncio(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    async def main() -> list[Any]:
        with JsonFileStore(tmp_path / "store") as store:
            runner = Runner(_flow(counts, lock), store=store)
            return await asyncio.gather(
                *(runner.astart(f"wf-{i}", {"seed": i}) for i in range(THREADS))
            )

    results = asyncio.run(main())
    assert [r.state.total for r in results] == [i * 4 for i in range(THREADS)]
    assert counts == {f"wf-{i}": 1 for i in range(THREADS)}


def _race_starts(open_store: Callable[[], Store], starters: int) -> tuple[list[str], Counter[str]]:
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    flow = _flow(counts, lock)
    barrier = threading.Barrier(starters)
    outcomes: list[str] = []

    def start(store: Store) -> None:
        barrier.wait()
        try:
            Runner(flow, store=store).start("wf-one", {"seed": 1})
        except (ThreadExistsError, ConflictError) as exc:
            outcome = type(exc).__name__
        else:
            outcome = "won"
        with lock:
            outcomes.append(outcome)

    stores = [open_store() for _ in range(starters)]
    workers = [threading.Thread(target=start, args=(store,)) for store in stores]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return outcomes, counts


def test_concurrent_starts_of_one_id_on_json_files_have_one_winner(tmp_path: Path) -> None:
    opened: list[JsonFileStore] = []

    def open_store() -> JsonFileStore:
        opened.append(JsonFileStore(tmp_path / "store"))
        return opened[-1]

    try:
        outcomes, counts = _race_starts(open_store, 4)
    finally:
        for store in opened:
            store.close()
    assert outcomes.count("won") == 1 and len(outcomes) == 4
    assert counts == {"wf-one": 1}


def test_concurrent_starts_of_one_id_on_postgres_have_one_winner(
    open_pg: Callable[..., Store],
) -> None:
    outcomes, counts = _race_starts(open_pg, 4)
    assert outcomes.count("won") == 1 and len(outcomes) == 4
    assert counts == {"wf-one": 1}
    done = Runner(_flow(Counter(), threading.Lock()), store=open_pg()).get_state("wf-one")
    assert done.done and done.state.total == 4


class Nap(BaseModel):
    woke: int = 0


@node(writes=["woke"])
def _nap(state: Nap, ctx: Context) -> None:
    ctx.sleep_until(datetime(2026, 1, 1, tzinfo=UTC))


def test_a_due_sleep_is_fired_once_by_workers_on_postgres(open_pg: Callable[..., Store]) -> None:
    woke: list[int] = []
    lock = threading.Lock()

    def wake(state: Nap) -> dict[str, Any]:
        with lock:
            woke.append(1)
        return {"woke": 1}

    flow = Flow(
        name="dbos_pg_nap",
        state=Nap,
        start="nap",
        nodes={"nap": _nap, "wake": wake},
        routes={"nap": "wake", "wake": END},
    )
    Runner(flow, store=open_pg()).start("wf-nap")
    runners = [Runner(flow, store=open_pg()) for _ in range(3)]
    later = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=1)
    with ThreadPoolExecutor(max_workers=3) as pool:
        fired = list(pool.map(lambda r: len(r.fire_due(now=later)), runners))
    assert sum(fired) == 1 and woke == [1]
    assert runners[0].get_state("wf-nap").state.woke == 1
