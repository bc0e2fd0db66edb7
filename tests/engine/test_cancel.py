"""``Runner.cancel``: a run going on in another thread of this process (or another task)
stops before its next node; the node running when asked finishes and is saved, the run raises
``RunCancelledError``, and the thread stands ``pending`` there for ``resume``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner, Subflow, append
from flowkit.errors import RunCancelledError
from flowkit.stores import JsonFileStore, MemoryStore


class Trail(BaseModel):
    done: Annotated[list[str], append] = []


def _flow(entered: threading.Event, release: threading.Event) -> Flow:
    def first(state: Trail) -> dict[str, Any]:
        return {"done": ["first"]}

    def slow(state: Trail) -> dict[str, Any]:
        entered.set()
        assert release.wait(10)
        return {"done": ["slow"]}

    def last(state: Trail) -> dict[str, Any]:
        return {"done": ["last"]}

    return Flow(
        name="cancelled",
        state=Trail,
        start="first",
        nodes={"first": first, "slow": slow, "last": last},
        routes={"first": "slow", "slow": "last", "last": END},
    )


def _cancel_while_running(runner: Runner[Any], call: Callable[[], Any]) -> list[BaseException]:
    """Run ``call`` in a thread; cancel thread `t` once its slow node is in; what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert ENTERED.wait(10)
    try:
        assert runner.cancel("t") is True
    finally:
        RELEASE.set()
        worker.join(10)
    return raised


ENTERED, RELEASE = threading.Event(), threading.Event()


@pytest.fixture(autouse=True)
def _fresh_events() -> None:
    ENTERED.clear()
    RELEASE.clear()


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "jsonfile"])
def test_a_cancelled_run_saves_the_node_in_progress_and_runs_no_other(
    tmp_path: Path, durable: bool
) -> None:
    store = JsonFileStore(tmp_path / "s") if durable else MemoryStore()
    runner = Runner(_flow(ENTERED, RELEASE), store=store)
    (error,) = _cancel_while_running(runner, lambda: runner.start("t"))
    assert isinstance(error, RunCancelledError)
    assert (error.thread_id, error.node, error.version) == ("t", "last", 2)
    reopened = Runner(_flow(ENTERED, RELEASE), store=store) if durable else runner
    stopped = reopened.get_state("t")
    assert (stopped.status, stopped.node, stopped.state.done) == (
        "pending",
        "last",
        ["first", "slow"],
    )
    assert reopened.resume("t").state.done == ["first", "slow", "last"]


def test_cancel_with_nothing_running_is_false_and_stops_no_later_run() -> None:
    RELEASE.set()
    runner = Runner(_flow(ENTERED, RELEASE))
    assert runner.cancel("t") is False
    assert runner.start("t").state.done == ["first", "slow", "last"]
    assert runner.cancel("t") is False  # it ended: a request does not outlive the run


def test_a_request_ends_with_its_run_so_the_resume_after_it_goes_to_the_end() -> None:
    runner = Runner(_flow(ENTERED, RELEASE))
    (error,) = _cancel_while_running(runner, lambda: runner.start("t"))
    assert isinstance(error, RunCancelledError)
    assert runner.resume("t").status == "done"


def test_a_stream_that_is_cancelled_raises_after_the_saved_step() -> None:
    runner = Runner(_flow(ENTERED, RELEASE))
    seen: list[Any] = []

    def consume() -> None:
        for update in runner.stream("t", mode="updates"):
            seen.append(update)

    (error,) = _cancel_while_running(runner, consume)
    assert isinstance(error, RunCancelledError)
    assert {"slow": {"done": ["slow"]}} in seen  # the step in progress went out, saved
    assert runner.get_state("t").node == "last"


def test_an_async_run_is_cancelled_from_another_task() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(state: Trail) -> dict[str, Any]:
        started.set()
        await release.wait()
        return {"done": ["slow"]}

    async def last(state: Trail) -> dict[str, Any]:
        return {"done": ["last"]}

    flow = Flow(
        name="cancelled_async",
        state=Trail,
        start="slow",
        nodes={"slow": slow, "last": last},
        routes={"slow": "last", "last": END},
    )
    runner = Runner(flow)

    async def main() -> None:
        run = asyncio.ensure_future(runner.astart("t"))
        await started.wait()
        assert runner.cancel("t")
        release.set()
        with pytest.raises(RunCancelledError):
            await run
        assert runner.get_state("t").node == "last"
        assert (await runner.aresume("t")).state.done == ["slow", "last"]

    asyncio.run(main())


def test_a_run_inside_a_subflow_stops_between_the_childs_nodes() -> None:
    inner = _flow(ENTERED, RELEASE)
    outer = Flow(
        name="outer",
        state=Trail,
        start="child",
        nodes={"child": Subflow(inner)},
        routes={"child": END},
    )
    runner = Runner(outer)
    (error,) = _cancel_while_running(runner, lambda: runner.start("t"))
    assert isinstance(error, RunCancelledError)
    assert runner.get_state("t").status == "pending"
    assert runner.resume("t").status == "done"
