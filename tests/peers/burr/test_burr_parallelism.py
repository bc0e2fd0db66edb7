"""Burr's parallelism scenarios, as flowkit behaviour.

Ported from Burr's ``tests/core/test_parallelism.py`` (apache/burr): map states over one
action, reduced in order (``test_e2e_map_states_sync_subgraph``, its async twin and its
subgraph variant), map several actions over one state (``test_e2e_map_actions_sync_subgraph``),
a map with nothing to map (``test_map_actions_default_state``) and the map's work saved in
the same persister as the application (``test_map_actions_and_states_uses_same_persister_
as_loader``); plus a failed call, which Burr leaves to the user, resumed without redoing the
calls that finished.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate, Map, Parallel, Runner, Subflow, append
from flowkit.stores import JsonFileStore


class Numbers(BaseModel):
    input_numbers_in_state: list[int] = []
    output_numbers_in_state: Annotated[list[int], append] = []
    total: int = 0


def _add_eleven(number: int) -> dict[str, Any]:
    return {"output_numbers_in_state": [number + 1 + 10]}


def _total(state: Numbers) -> dict[str, Any]:
    return {"total": sum(state.output_numbers_in_state)}


def _flow(name: str, mapped: Any) -> Flow:
    return Flow(
        name=name,
        state=Numbers,
        start="map_action",
        nodes={"map_action": mapped, "final_action": _total},
        routes={"map_action": "final_action", "final_action": END},
    )


def test_map_states_reduces_in_item_order_whatever_order_calls_finish(tmp_path: Path) -> None:
    # test_e2e_map_states_sync_subgraph: [100, 200, 300] -> [111, 211, 311], order kept
    last_done = threading.Event()
    finished: list[int] = []

    def add(state: Numbers, number: int) -> dict[str, Any]:
        if number == 100:
            assert last_done.wait(10)  # the first item finishes after the last one
        finished.append(number)
        if number == 300:
            last_done.set()
        return _add_eleven(number)

    flow = _flow("burr_map_states", Map(add, over=lambda s: s.input_numbers_in_state))
    done = Runner(flow, store=JsonFileStore(tmp_path)).start(
        "app", {"input_numbers_in_state": [100, 200, 300]}
    )
    assert finished[-1] == 100
    assert done.done and list(done.state.output_numbers_in_state) == [111, 211, 311]
    assert done.state.total == 633


def test_map_states_async(tmp_path: Path) -> None:
    # test_e2e_map_states_async_subgraph
    async def add(state: Numbers, number: int) -> dict[str, Any]:
        await asyncio.sleep(0.001 * (400 - number) / 100)
        return _add_eleven(number)

    flow = _flow("burr_map_states_async", Map(add, over=lambda s: s.input_numbers_in_state))
    runner = Runner(flow, store=JsonFileStore(tmp_path))
    done = asyncio.run(runner.astart("app", {"input_numbers_in_state": [100, 200, 300]}))
    assert list(done.state.output_numbers_in_state) == [111, 211, 311]


class One(BaseModel):
    input_number: int = 0
    output_number: int = 0


def _plus_one(state: One) -> dict[str, Any]:
    return {"input_number": state.input_number + 1}


def _plus_ten(state: One) -> dict[str, Any]:
    return {"output_number": state.input_number + 10}


#: Burr's full subgraph: two actions in a row over one item's state.
SUBGRAPH = Flow(
    name="burr_subgraph",
    state=One,
    start="plus_one",
    nodes={"plus_one": _plus_one, "plus_ten": _plus_ten},
    routes={"plus_one": "plus_ten", "plus_ten": END},
)


def test_map_states_over_a_subgraph(tmp_path: Path) -> None:
    # test_e2e_map_states_sync_subgraph with create_full_subgraph
    mapped = Map(
        Subflow(
            SUBGRAPH,
            input=lambda s, n: {"input_number": n},
            output=lambda parent, child: {"output_numbers_in_state": [child.output_number]},
        ),
        over=lambda s: s.input_numbers_in_state,
    )
    store = JsonFileStore(tmp_path)
    runner = Runner(_flow("burr_map_subgraph", mapped), store=store)
    done = runner.start("app", {"input_numbers_in_state": [100, 200, 300]})
    assert list(done.state.output_numbers_in_state) == [111, 211, 311]
    # each subgraph ran as its own child thread in the same store
    assert len([t for t in Runner(SUBGRAPH, store=store).threads() if t.startswith("app:")]) == 3


def test_map_actions_over_one_state(tmp_path: Path) -> None:
    # test_e2e_map_actions_sync_subgraph: several actions, each on the state at the fork
    def branch(offset: int) -> Any:
        def run(state: Numbers) -> dict[str, Any]:
            return {"output_numbers_in_state": [state.input_numbers_in_state[0] + offset]}

        return run

    both = Parallel({"a": branch(1), "b": branch(2), "c": branch(3)})
    done = Runner(_flow("burr_map_actions", both), store=JsonFileStore(tmp_path)).start(
        "app", {"input_numbers_in_state": [10]}
    )
    assert list(done.state.output_numbers_in_state) == [11, 12, 13]  # declared order


def test_map_with_nothing_to_map_goes_on_with_the_state_as_it_was(tmp_path: Path) -> None:
    # test_map_actions_default_state
    flow = _flow("burr_map_empty", Map(lambda s, n: _add_eleven(n), over=lambda s: []))
    done = Runner(flow, store=JsonFileStore(tmp_path)).start("app")
    assert done.done and list(done.state.output_numbers_in_state) == [] and done.state.total == 0


def test_map_work_is_saved_in_the_applications_store(tmp_path: Path) -> None:
    # test_map_actions_and_states_uses_same_persister_as_loader
    flow = _flow(
        "burr_map_saved", Map(lambda s, n: _add_eleven(n), over=lambda s: s.input_numbers_in_state)
    )
    Runner(flow, store=JsonFileStore(tmp_path)).start("app", {"input_numbers_in_state": [1, 2]})
    fresh = Runner(flow, store=JsonFileStore(tmp_path))
    kinds = [c.kind for c in fresh.history("app")]
    assert kinds == ["start", "item", "item", "join", "step"]
    assert list(fresh.get_state("app").state.output_numbers_in_state) == [12, 13]


def test_a_failed_call_is_retried_alone_on_resume(tmp_path: Path) -> None:
    # a call that fails keeps its siblings' work: resume runs only the failed one
    calls: list[int] = []
    broken = {200}

    def add(state: Numbers, number: int) -> dict[str, Any]:
        calls.append(number)
        if number in broken:
            raise RuntimeError("flaky")
        return _add_eleven(number)

    flow = _flow("burr_map_fails", Map(add, over=lambda s: s.input_numbers_in_state))
    runner = Runner(flow, store=JsonFileStore(tmp_path))
    failed = runner.start("app", {"input_numbers_in_state": [100, 200, 300]})
    assert failed.status == "failed" and failed.node == "map_action"
    broken.clear()
    calls.clear()
    done = Runner(flow, store=JsonFileStore(tmp_path)).resume("app")
    assert calls == [200]
    assert list(done.state.output_numbers_in_state) == [111, 211, 311]


class Review(BaseModel):
    ok: bool


def test_a_map_call_that_waits_for_a_person_resumes_in_place(tmp_path: Path) -> None:
    # Burr's map actions run subgraphs to completion; a human-in-the-loop subgraph pauses its
    # call, and the map joins once every call is answered
    ask = Flow(
        name="burr_ask",
        state=One,
        start="review",
        nodes={"plus_ten": _plus_ten},
        gates={"review": Gate(Review, apply=lambda s, v: {})},
        routes={"review": "plus_ten", "plus_ten": END},
    )
    mapped = Map(
        Subflow(
            ask,
            input=lambda s, n: {"input_number": n},
            output=lambda parent, child: {"output_numbers_in_state": [child.output_number]},
        ),
        over=lambda s: s.input_numbers_in_state,
    )
    flow = _flow("burr_map_asks", mapped)
    runner = Runner(flow, store=JsonFileStore(tmp_path))
    waiting = runner.start("app", {"input_numbers_in_state": [1, 2]})
    assert waiting.gates == ("map_action[0]/review", "map_action[1]/review")
    half = runner.resume("app", {"ok": True}, gate="map_action[1]/review")
    assert half.gates == ("map_action[0]/review",)
    done = Runner(flow, store=JsonFileStore(tmp_path)).resume(
        "app", {"ok": True}, gate="map_action[0]/review"
    )
    assert list(done.state.output_numbers_in_state) == [11, 12]
