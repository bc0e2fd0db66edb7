"""Two runners in one process, on one thread, from two OS threads: one wins, one conflicts.

The runners share a store object, or open their own store objects on the same folder, or share
a MemoryStore; in every case the thread's lock and its version keep them from interleaving.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, append, field
from flowkit.errors import ConflictError
from flowkit.stores import JsonFileStore, MemoryStore, Store

pytestmark = pytest.mark.slow

ROUNDS = 100


class Inbox(BaseModel):
    values: Annotated[list[str], append] = []
    stop: bool = False


class Item(BaseModel):
    value: str
    stop: bool = False


def inbox_flow(apply: Callable[[Inbox], dict[str, Any]]) -> Flow:
    def receive(state: Inbox, item: Item) -> dict[str, Any]:
        return {"values": [item.value], "stop": item.stop}

    return Flow(
        name="threaded_inbox",
        state=Inbox,
        start="inbox",
        nodes={"apply": apply},
        gates={"inbox": Gate(Item, apply=receive)},
        routes={
            "inbox": "apply",
            "apply": RouteTable("after_apply", [Route(field("stop"), END)], default="inbox"),
        },
    )


@pytest.fixture(params=["one JsonFileStore", "two JsonFileStores", "one MemoryStore"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """The stores the two runners use."""
    if request.param == "one MemoryStore":
        memory = MemoryStore()
        yield memory, memory
    elif request.param == "one JsonFileStore":
        with JsonFileStore(tmp_path, fsync=False) as store:
            yield store, store
    else:
        with JsonFileStore(tmp_path, fsync=False) as a, JsonFileStore(tmp_path, fsync=False) as b:
            yield a, b


def test_a_runner_resuming_a_thread_that_another_runner_is_running_gets_a_conflict(
    stores: tuple[Store, Store],
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_apply(state: Inbox) -> dict[str, Any]:
        if state.values[-1] == "slow":
            entered.set()
            assert release.wait(30)
        return {}

    flow = inbox_flow(slow_apply)
    first: Runner[Any] = Runner(flow, store=stores[0])
    second: Runner[Any] = Runner(flow, store=stores[1])
    first.start("t")
    results: list[Any] = []
    running = threading.Thread(target=lambda: results.append(first.resume("t", {"value": "slow"})))
    running.start()
    try:
        assert entered.wait(30)
        with pytest.raises(ConflictError):
            second.resume("t", {"value": "fast"})
        with pytest.raises(ConflictError):
            second.update_state("t", {"stop": True}, reason="meanwhile")
        seen = second.get_state("t")  # reading needs no lock
        assert (seen.version, seen.state.values) == (1, ["slow"])
    finally:
        release.set()
        running.join()
    assert results[0].version == 2 and results[0].status == "waiting"

    with pytest.raises(ConflictError):
        second.resume("t", {"value": "stale"}, expected_version=seen.version)
    after = second.resume("t", {"value": "fast"}, expected_version=2)
    assert after.state.values == ["slow", "fast"]
    assert first.get_state("t").state.values == ["slow", "fast"]


def test_two_os_threads_racing_each_round_never_both_win(stores: tuple[Store, Store]) -> None:
    flow = inbox_flow(lambda state: {})
    runners: list[Runner[Any]] = [Runner(flow, store=store) for store in stores]
    runners[0].start("t")
    barrier = threading.Barrier(2, timeout=30)
    outcomes: list[list[str]] = [[], []]

    def race(index: int) -> None:
        runner = runners[index]
        for round_ in range(ROUNDS):
            version = runner.get_state("t").version
            assert version == 2 * round_
            barrier.wait()
            try:
                runner.resume("t", {"value": f"{index}-{round_}"}, expected_version=version)
            except ConflictError:
                outcomes[index].append("conflict")
            else:
                outcomes[index].append("won")
            barrier.wait()  # both have finished this round before anyone reads again

    workers = [threading.Thread(target=race, args=(index,)) for index in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert len(outcomes[0]) == len(outcomes[1]) == ROUNDS, "a racer died; see its traceback"
    winners = []
    for round_, pair in enumerate(zip(*outcomes, strict=True)):
        assert sorted(pair) == ["conflict", "won"], f"round {round_}: {pair}"
        winners.append(f"{pair.index('won')}-{round_}")
    final = runners[0].resume("t", {"value": "end", "stop": True})
    assert final.state.values == [*winners, "end"]
