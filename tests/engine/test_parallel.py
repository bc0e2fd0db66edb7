"""``Map`` and ``Parallel``: fan-out on the state at the fork, a checkpoint per call, merge in
index order, isolated failures routed by the join's table, and resumes that re-run only what
had not finished."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import (
    END,
    Flow,
    Gate,
    Map,
    NodeError,
    Parallel,
    Route,
    RouteTable,
    Runner,
    append,
    field,
    node,
)
from flowkit.diagram import to_dot, to_mermaid
from flowkit.errors import (
    FlowDefinitionError,
    InvalidResumeInputError,
    NotWaitingError,
    RunError,
    UnknownGateError,
)
from flowkit.stores import ItemRecord, JoinRecord, JsonFileStore, MemoryStore, Store
from flowkit.testing import capture_events


class Doc(BaseModel):
    topic: str = "flowkit"
    sections: list[str] = []
    summaries: Annotated[list[str], append] = []
    notes: Annotated[list[str], append] = []
    seen_by_docs: str = ""
    report: str = ""
    error: NodeError | None = None


def summarise(state: Doc, section: str) -> dict[str, Any]:
    return {"summaries": [section.upper()]}


def write_report(state: Doc) -> dict[str, Any]:
    return {"report": " | ".join([*state.summaries, *state.notes])}


def map_flow(fn: Any = summarise, concurrency: int = 4, **routes: Any) -> Flow:
    return Flow(
        name="map_sections",
        state=Doc,
        start="summarise",
        nodes={
            "summarise": Map(fn, over=lambda s: s.sections, concurrency=concurrency),
            "report": write_report,
        },
        routes={"summarise": routes.get("summarise", "report"), "report": END},
    )


# -- fan-out / fan-in ------------------------------------------------------------------------


@node(writes=["topic", "notes"])
def web(state: Doc) -> dict[str, Any]:
    time.sleep(0.02)  # finishes after `docs`, yet merges first (declaration order)
    return {"topic": "changed by web", "notes": ["web"]}


@node(writes=["notes", "seen_by_docs"])
def docs(state: Doc) -> dict[str, Any]:
    return {"notes": ["docs"], "seen_by_docs": state.topic}


FAN = Flow(
    name="fan",
    state=Doc,
    start="research",
    nodes={"research": Parallel({"web": web, "docs": docs}), "report": write_report},
    routes={"research": "report", "report": END},
)


def test_each_branch_sees_the_state_at_the_fork_and_the_join_sees_all(store: Store) -> None:
    result = Runner(FAN, store=store).start("t")
    assert result.done
    # `docs` ran beside `web` and read the topic as it was at the fork, not web's write.
    assert result.state.seen_by_docs == "flowkit"
    assert result.state.topic == "changed by web"
    assert result.state.notes == ["web", "docs"]
    assert result.state.report == "web | docs"


def test_a_map_checkpoints_every_call_then_joins_once(store: Store) -> None:
    runner = Runner(map_flow(), store=store)
    result = runner.start("t", {"sections": ["a", "b", "c"]})
    assert result.state.summaries == ["A", "B", "C"] and result.state.report == "A | B | C"
    records = store.records("t")
    assert [r.kind for r in records] == ["start", "item", "item", "item", "join", "step"]
    items = [r for r in records if isinstance(r, ItemRecord)]
    assert sorted(r.index for r in items) == [0, 1, 2] and {r.of for r in items} == {3}
    join = next(r for r in records if isinstance(r, JoinRecord))
    assert join.merged == [0, 1, 2] and join.failed == []
    # While calls finish the state does not change; it changes once, at the join.
    history = runner.history("t")
    assert [c.state.summaries for c in history if c.kind == "item"] == [[], [], []]
    assert [c.kind for c in history] == ["start", "item", "item", "item", "join", "step"]


def test_merge_order_is_item_order_whatever_order_calls_finish_in() -> None:
    def slow_first(state: Doc, section: str) -> dict[str, Any]:
        time.sleep(0.005 * (5 - int(section)))
        return {"summaries": [section]}

    result = Runner(map_flow(slow_first, concurrency=5)).start("t", {"sections": list("01234")})
    assert result.state.summaries == list("01234")


def test_an_empty_map_joins_at_once(store: Store) -> None:
    result = Runner(map_flow(), store=store).start("t", {"sections": []})
    assert result.done and result.state.summaries == [] and result.state.report == ""


def test_at_most_concurrency_calls_run_at_once() -> None:
    running = 0
    most = 0
    lock = threading.Lock()
    three_running = threading.Event()

    def count(state: Doc, section: str) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            if running == 3:
                three_running.set()
        # The first calls wait for each other, so the limit is reached however slowly the
        # worker threads start on a loaded machine; a call let in past it shows meanwhile.
        three_running.wait(timeout=30)
        time.sleep(0.01)
        with lock:
            running -= 1
        return {}

    Runner(map_flow(count, concurrency=3)).start("t", {"sections": list("abcdefgh")})
    assert most == 3


def test_async_map_runs_on_the_loop_and_sync_map_in_threads_under_astart() -> None:
    async def shout(state: Doc, section: str) -> dict[str, Any]:
        await asyncio.sleep(0.001)
        return {"summaries": [section.upper()]}

    result = asyncio.run(Runner(map_flow(shout)).astart("a", {"sections": ["x", "y"]}))
    assert result.state.summaries == ["X", "Y"]
    result = asyncio.run(Runner(map_flow()).astart("s", {"sections": ["x", "y"]}))
    assert result.state.summaries == ["X", "Y"]


def test_an_async_map_runs_under_the_sync_api_too() -> None:
    async def shout(state: Doc, section: str) -> dict[str, Any]:
        await asyncio.sleep(0.001)
        return {"summaries": [section.upper()]}

    assert Runner(map_flow(shout)).start("t", {"sections": ["x"]}).state.summaries == ["X"]


def test_item_functions_may_take_the_context() -> None:
    seen: list[str] = []

    def with_ctx(state: Doc, section: str, ctx: Any) -> dict[str, Any]:
        seen.append(ctx.node)
        return {}

    Runner(map_flow(with_ctx)).start("t", {"sections": ["a", "b"]})
    assert sorted(seen) == ["summarise[0]", "summarise[1]"]


# -- failures --------------------------------------------------------------------------------


def flaky_on(bad: set[str], calls: list[str]) -> Any:
    def call(state: Doc, section: str) -> dict[str, Any]:
        calls.append(section)
        if section in bad:
            raise ValueError(f"cannot summarise {section}")
        return {"summaries": [section.upper()]}

    return call


def test_a_failed_call_is_isolated_and_the_join_table_routes_on_it(store: Store) -> None:
    calls: list[str] = []
    table = RouteTable(
        "after_map", [Route(field("error.type").eq("ItemsFailed"), "report")], default="report"
    )
    flow = map_flow(flaky_on({"b"}, calls), summarise=table)
    result = Runner(flow, store=store).start("t", {"sections": ["a", "b", "c"]})
    assert result.done and result.state.summaries == ["A", "C"]
    assert result.state.error is not None
    assert result.state.error.type == "ItemsFailed" and "summarise[1] (ValueError)" in (
        result.state.error.message
    )
    join = next(r for r in store.records("t") if isinstance(r, JoinRecord))
    assert join.failed == [1] and join.merged == [0, 2]


def test_without_a_route_for_failures_the_thread_fails_and_resume_reruns_only_those(
    store: Store,
) -> None:
    calls: list[str] = []
    bad = {"b"}
    flow = Flow(
        name="map_sections",
        state=Doc,
        start="summarise",
        nodes={"summarise": Map(flaky_on(bad, calls), over=lambda s: s.sections)},
        routes={"summarise": END},
        error_field=None,
    )
    runner = Runner(flow, store=store)
    result = runner.start("t", {"sections": ["a", "b", "c"]})
    assert result.status == "failed" and result.node == "summarise"
    assert result.error is not None and result.error.type == "ItemsFailed"
    assert result.state.summaries == []
    bad.clear()  # the cause is fixed
    calls.clear()
    again = Runner(flow, store=store).resume("t")  # a new process would do the same
    assert again.done and again.state.summaries == ["A", "B", "C"]
    assert calls == ["b"]


def test_a_map_whose_items_change_before_resume_is_refused(store: Store) -> None:
    items = ["a", "b", "c"]

    def stop_after_one(state: Doc, section: str) -> dict[str, Any]:
        if section != "a":
            raise KeyboardInterrupt  # the process dies mid-map
        return {"summaries": ["A"]}

    flow = Flow(
        name="map_sections",
        state=Doc,
        start="summarise",
        nodes={"summarise": Map(stop_after_one, over=lambda s: items, concurrency=1)},
        routes={"summarise": END},
    )
    with pytest.raises(KeyboardInterrupt):
        Runner(flow, store=store).start("t")
    items.append("d")
    with pytest.raises(RunError, match="same items for the same state"):
        Runner(flow, store=store).resume("t")


def test_a_snapshot_taken_mid_map_keeps_the_finished_calls(tmp_path: Path) -> None:
    calls: list[str] = []

    def once(state: Doc, section: str) -> dict[str, Any]:
        calls.append(section)
        if section == "c" and calls.count("c") == 1:
            raise KeyboardInterrupt
        return {"summaries": [section.upper()]}

    flow = Flow(
        name="map_sections",
        state=Doc,
        start="summarise",
        nodes={"summarise": Map(once, over=lambda s: s.sections, concurrency=1)},
        routes={"summarise": END},
    )
    store = JsonFileStore(tmp_path, fsync=False, min_snapshot_bytes=1, snapshot_ratio=0)
    with store, pytest.raises(KeyboardInterrupt):
        Runner(flow, store=store).start("t", {"sections": ["a", "b", "c"]})
    with JsonFileStore(tmp_path, fsync=False) as store:
        log = store.load("t")
        assert log.snapshot is not None and log.snapshot.items is not None
        assert sorted(log.snapshot.items) == [0, 1]
        result = Runner(flow, store=store).resume("t")
    assert result.state.summaries == ["A", "B", "C"] and calls == ["a", "b", "c", "c"]


# -- events, streams, validation, diagrams ---------------------------------------------------


def test_every_call_reports_its_own_finish_and_the_join_one_state_change() -> None:
    runner = Runner(map_flow())
    with capture_events(runner) as events:
        runner.start("t", {"sections": ["a", "b"]})
    finished = sorted(e.node for e in events if e.kind == "node_finished")
    assert finished == ["report", "summarise", "summarise[0]", "summarise[1]"]
    changes = [e for e in events if e.kind == "state_changed" and e.node == "summarise"]
    assert len(changes) == 1 and changes[0].update == {"summaries": ["A", "B"]}


def test_stream_updates_show_the_join() -> None:
    runner = Runner(map_flow())
    updates = list(runner.stream("t", {"sections": ["a", "b"]}, mode="updates"))
    assert updates[0] == {"summarise": {"summaries": ["A", "B"]}}


def test_a_joins_update_is_what_its_calls_wrote_not_the_fields_new_value() -> None:
    """A field that held items before the map: the update (stream and ``StateChanged``)
    is the calls' items, as a plain node's is its own, so a client applying updates
    through the reducer rebuilds the state (it got the whole list, earlier items again)."""

    def intro(state: Doc) -> dict[str, Any]:
        return {"summaries": ["intro"], "notes": ["n0"]}

    flow = Flow(
        name="join_updates",
        state=Doc,
        start="intro",
        nodes={
            "intro": intro,
            "summarise": Map(summarise, over=lambda s: s.sections),
            "both": Parallel(
                {
                    "x": lambda s: {"summaries": ["x"]},
                    "y": lambda s: {"summaries": ["y"], "report": "y"},
                }
            ),
            "merged": Map(
                summarise,
                over=lambda s: s.sections,
                merge=lambda s, updates: {"notes": [u["summaries"][0] for u in updates]},
            ),
        },
        routes={"intro": "summarise", "summarise": "both", "both": "merged", "merged": END},
    )
    runner = Runner(flow)
    with capture_events(runner) as events:
        updates = list(runner.stream("t", {"sections": ["a", "b"]}, mode="updates"))
    assert updates == [
        {"intro": {"summaries": ["intro"], "notes": ["n0"]}},
        {"summarise": {"summaries": ["A", "B"]}},
        {"both": {"summaries": ["x", "y"], "report": "y"}},
        {"merged": {"notes": ["A", "B"]}},
    ]
    changes = [(e.node, e.update) for e in events.of("state_changed")]
    assert changes == [(node, update) for u in updates for node, update in u.items()]
    rebuilt: dict[str, list[str]] = {"summaries": [], "notes": []}
    for update in updates:
        for written in update.values():
            for key in rebuilt:
                rebuilt[key] += written.get(key, [])
    final = runner.get_state("t").state
    assert rebuilt == {"summaries": final.summaries, "notes": final.notes}


def test_branches_overwriting_one_plain_field_are_refused_at_build() -> None:
    @node(writes=["report"])
    def one(state: Doc) -> dict[str, Any]:
        return {"report": "1"}

    @node(writes=["report", "notes"])
    def two(state: Doc) -> dict[str, Any]:
        return {"report": "2", "notes": ["2"]}

    with pytest.raises(FlowDefinitionError) as caught:
        Flow(
            name="clash",
            state=Doc,
            start="both",
            nodes={"both": Parallel({"one": one, "two": two})},
            routes={"both": END},
        )
    assert "Branches `one`, `two` of `both` all write `report`, which has no reducer" in str(
        caught.value
    )


def test_bad_definitions_are_refused_when_made() -> None:
    with pytest.raises(TypeError, match="over="):
        Map(summarise)
    with pytest.raises(ValueError, match="at least 1"):
        Map(summarise, over=lambda s: [], concurrency=0)
    with pytest.raises(TypeError, match="branch name"):
        Parallel({})


def test_diagrams_draw_map_and_fan_out() -> None:
    mermaid = to_mermaid(FAN)
    assert 'research[/"research (fan-out)"\\]' in mermaid
    assert "research -.-> _b0_0 -.-> _j0" in mermaid and "_j0 --> report" in mermaid
    dot = to_dot(FAN)
    assert '"research/web" -> "research (join)" [style=dashed];' in dot
    assert '"research (join)" -> "report";' in dot
    assert 'summarise[["summarise (map)"]]' in to_mermaid(map_flow())


# -- any finishing order gives the same state ------------------------------------------------


class Tally(BaseModel):
    values: list[int] = []
    seen: Annotated[list[int], append] = []
    last: int = -1


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(6)))
def test_any_order_of_finishing_gives_the_same_state(order: list[int]) -> None:
    async def scenario() -> Tally:
        released = {i: asyncio.Event() for i in range(6)}
        finished: list[int] = []

        async def work(state: Tally, value: int) -> dict[str, Any]:
            await released[value].wait()
            finished.append(value)
            return {"seen": [value * 10], "last": value}

        flow = Flow(
            name="tally",
            state=Tally,
            start="work",
            nodes={"work": Map(work, over=lambda s: s.values, concurrency=6)},
            routes={"work": END},
        )
        runner = Runner(flow, store=MemoryStore())
        run = asyncio.ensure_future(runner.astart("t", {"values": list(range(6))}))
        for value in order:
            released[value].set()
            while value not in finished:
                await asyncio.sleep(0)
        result = await run
        assert finished == order
        return result.state  # type: ignore[return-value]

    state = asyncio.run(scenario())
    assert state.seen == [0, 10, 20, 30, 40, 50] and state.last == 5


# -- several gates open at once --------------------------------------------------------------


class Review(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None
    notes: Annotated[list[str], append] = []


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


@node(writes=["notes"])
def lint(state: Review) -> dict[str, Any]:
    return {"notes": ["linted"]}


def publish(state: Review) -> dict[str, Any]:
    return {"notes": [f"published legal={state.legal_ok} tech={state.tech_ok}"]}


REVIEWS = Flow(
    name="reviews",
    state=Review,
    start="review",
    nodes={
        "review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech), "lint": lint}),
        "publish": publish,
    },
    routes={"review": "publish", "publish": END},
)


def test_parallel_gates_wait_together_and_each_is_answered_on_its_own(store: Store) -> None:
    runner = Runner(REVIEWS, store=store)
    first = runner.start("t")
    assert (first.status, first.node, first.gates) == ("waiting", "review", ("legal", "tech"))
    assert first.state.notes == []  # the lint branch merges at the join, with the answers
    second = runner.resume("t", {"legal_ok": True}, gate="legal")
    assert (second.status, second.gates) == ("waiting", ("tech",))
    # A new runner (another process) sees the same open gate and answers it.
    again = Runner(REVIEWS, store=store)
    assert again.get_state("t").gates == ("tech",)
    done = again.resume("t", {"tech_ok": False}, gate="tech")
    assert done.done and done.gates == ()
    assert done.state.notes == ["linted", "published legal=True tech=False"]
    kinds = [c.kind for c in again.history("t")]
    assert kinds == ["start", "item", "pause", "item", "item", "join", "step"]


def test_one_mapping_answers_every_open_gate(store: Store) -> None:
    runner = Runner(REVIEWS, store=store)
    runner.start("t")
    done = runner.resume("t", {"legal": {"legal_ok": False}, "tech": {"tech_ok": True}})
    assert done.done and (done.state.legal_ok, done.state.tech_ok) == (False, True)


def test_a_bad_answer_saves_nothing_and_the_gates_stay_open(store: Store) -> None:
    runner = Runner(REVIEWS, store=store)
    runner.start("t")
    with pytest.raises(InvalidResumeInputError):
        runner.resume("t", {"legal": {"legal_ok": True}, "tech": {"tech_ok": "maybe"}})
    assert runner.get_state("t").gates == ("legal", "tech")
    with pytest.raises(NotWaitingError, match="pass gate='<name>'"):
        runner.resume("t", {"legal_ok": True})
    with pytest.raises(UnknownGateError):
        runner.resume("t", {"legal_ok": True}, gate="finance")


def test_diagrams_draw_gate_branches_as_gates() -> None:
    assert '_b0_1{{"legal"}}' in to_mermaid(REVIEWS)
    assert '"review/legal" [label="legal", shape=hexagon' in to_dot(REVIEWS)
