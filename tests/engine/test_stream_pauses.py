"""Streams and pauses: a run that stops to wait for input ends its stream with a ``Paused``
item (``values``, ``updates``, ``events``), and a resumed stream begins from the thread's
current state, also when the answer goes to a gate inside a ``Subflow`` or to a ``Parallel``'s
gate branches. The ``Paused`` item carries the open pauses with their payloads (a gate's
``payload=``, a node's or a ``Map`` call's question). On every shipped store, and across a new
``Runner`` on the same store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Flow,
    Gate,
    Map,
    Parallel,
    Pause,
    Runner,
    StateChanged,
    Subflow,
    Waiting,
    append,
    node,
)
from flowkit.runner._stream import PAUSE, Paused
from flowkit.stores import Store


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


class Draft(BaseModel):
    topic: str = ""
    text: str = ""
    approved: bool = False
    log: Annotated[list[str], append] = []


class Verdict(BaseModel):
    approved: bool


def write(state: Draft) -> dict[str, Any]:
    return {"text": f"about {state.topic}", "log": ["write"]}


def publish(state: Draft) -> dict[str, Any]:
    return {"log": ["publish" if state.approved else "shelve"]}


DRAFTS = Flow(
    name="drafts",
    state=Draft,
    start="write",
    nodes={"write": write, "publish": publish},
    gates={"review": Verdict},
    routes={"write": "review", "review": "publish", "publish": END},
)

# -- a gate of the flow itself ----------------------------------------------------------------


def test_values_end_with_the_pause_after_the_last_state(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    it = runner.stream("t", {"topic": "robots"})
    *states, paused = list(it)
    assert [s.log for s in states] == [[], ["write"]]
    assert isinstance(paused, Paused) and paused.kind == "paused"
    assert it.result is not None and it.result.waiting
    assert (paused.thread_id, paused.node, paused.gates) == ("t", "review", ("review",))
    assert paused.version == it.result.version and paused.run_id == it.result.run_id
    assert paused.payload is None  # a slot for gates that carry payloads


def test_updates_end_with_a_one_entry_mapping_holding_the_pause(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    items = list(runner.stream("t", {"topic": "robots"}, mode="updates"))
    assert items[0] == {"write": {"text": "about robots", "log": ["write"]}}
    assert list(items[-1]) == [PAUSE] and PAUSE == "__pause__"
    paused = items[-1][PAUSE]
    assert isinstance(paused, Paused) and paused.gates == ("review",)
    assert all(len(item) == 1 for item in items)  # `for node, update in item.items()` holds


def test_events_end_with_the_pause_after_the_runs_waiting_event(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    events = list(runner.stream("t", {"topic": "robots"}, mode="events"))
    assert [e.kind for e in events[-2:]] == ["waiting", "paused"]
    waiting, paused = events[-2:]
    assert isinstance(waiting, Waiting) and isinstance(paused, Paused)
    assert (waiting.gate, waiting.version) == (paused.node, paused.version)
    assert {e.run_id for e in events} == {paused.run_id}
    assert seen == events[:-1]  # subscribers get the run's events; the stream adds the pause


def test_several_modes_give_the_pause_once_per_mode_at_the_end(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    pairs = list(runner.stream("t", {"topic": "x"}, mode=["events", "updates", "values"]))
    tail = pairs[-3:]
    assert [mode for mode, _ in tail] == ["values", "updates", "events"]
    paused = tail[0][1]
    assert tail[1][1] == {PAUSE: paused} and tail[2][1] is paused


@pytest.mark.parametrize("mode", ["tokens", "custom"])
def test_tokens_and_custom_carry_no_pause(mode: str) -> None:
    it = Runner(DRAFTS).stream("t", {"topic": "x"}, mode=mode)
    assert list(it) == [] and it.result is not None and it.result.waiting


def test_a_run_that_finishes_or_fails_has_no_pause(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    runner.start("t", {"topic": "x"})
    items = list(runner.stream("t", {"approved": True}, mode=["values", "updates", "events"]))
    assert not any(isinstance(item, Paused) for _, item in items)
    assert not any(PAUSE in item for mode, item in items if mode == "updates")

    def boom(state: Draft) -> None:
        raise RuntimeError("no")

    failing = Flow(name="failing", state=Draft, start="boom", nodes={"boom": boom},
                   routes={"boom": END}, error_field=None)  # fmt: skip
    it = Runner(failing, store=store).stream("f", mode="values")
    assert not any(isinstance(item, Paused) for item in it)
    assert it.result is not None and it.result.status == "failed"


def test_a_flow_that_starts_at_its_gate_streams_its_start_state_then_the_pause(
    store: Store,
) -> None:
    flow = Flow(
        name="asks",
        state=Draft,
        start="review",
        nodes={"publish": publish},
        gates={"review": Verdict},
        routes={"review": "publish", "publish": END},
    )
    start, paused = list(Runner(flow, store=store).stream("t", {"topic": "x"}))
    assert isinstance(start, Draft) and start.topic == "x"
    assert isinstance(paused, Paused) and paused.gates == ("review",) and paused.version == 0


def test_the_pauses_version_guards_the_answer(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    *_, paused = list(runner.stream("t", {"topic": "x"}))
    again = runner.stream("t", {"approved": True}, expected_version=paused.version)
    assert list(again)[-1].log == ["write", "publish"]


def test_answering_a_top_level_gate_begins_with_the_state_the_answer_made(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    runner.start("t", {"topic": "x"})
    states = list(runner.stream("t", {"approved": True}))
    assert [(s.approved, s.log) for s in states] == [
        (True, ["write"]),  # the gate's answer is a step of its own: no extra item before it
        (True, ["write", "publish"]),
    ]


# -- a gate inside a Subflow --------------------------------------------------------------------


class Review(BaseModel):
    text: str = ""
    notes: Annotated[list[str], append] = []
    approved: bool = False


class Note(BaseModel):
    notes: list[str]


def check(state: Review) -> dict[str, Any]:
    return {"notes": [f"{len(state.text)} characters"]}


REVIEW = Flow(
    name="review",
    state=Review,
    start="check",
    nodes={"check": check},
    gates={"comment": Note, "approve": Verdict},
    routes={"check": "comment", "comment": "approve", "approve": END},
)


class Article(BaseModel):
    text: str = ""
    approved: bool = False
    summary: str = ""
    log: Annotated[list[str], append] = []


def article_flow() -> Flow:
    return Flow(
        name="article",
        state=Article,
        start="draft",
        nodes={
            "draft": lambda s: {"text": "Flows all the way down.", "log": ["drafted"]},
            "review": Subflow(
                REVIEW,
                output=lambda parent, child: {
                    "approved": child.approved,
                    "summary": "; ".join(child.notes),
                },
                writes=["approved", "summary"],
            ),
            "publish": lambda s: {"log": ["published" if s.approved else "shelved"]},
        },
        routes={"draft": "review", "review": "publish", "publish": END},
    )


def test_a_gate_inside_a_subflow_ends_the_stream_with_its_path(store: Store) -> None:
    runner = Runner(article_flow(), store=store)
    it = runner.stream("a", mode=["values", "updates"])
    pairs = list(it)
    assert it.result is not None
    paused = pairs[-2][1]
    assert pairs[-2:] == [("values", paused), ("updates", {PAUSE: paused})]
    assert (paused.node, paused.gates) == ("review", ("review/comment",))
    assert paused.version == it.result.version


def test_resuming_a_gate_inside_a_subflow_begins_from_the_current_state(store: Store) -> None:
    runner = Runner(article_flow(), store=store)
    runner.start("a")
    before = runner.get_state("a")
    # A new runner on the same store: what a later process, or a web request, would do.
    later = Runner(article_flow(), store=store)
    it = later.stream("a", {"notes": ["tighten it"]})
    current, paused = list(it)
    assert current == before.state  # the parent's state as it stands: the child moved inside
    assert isinstance(paused, Paused) and paused.gates == ("review/approve",)
    assert paused.version == it.result.version > before.version  # type: ignore[union-attr]

    states = list(later.stream("a", {"approved": True}))
    assert states[0] == current
    assert states[-1].summary == "23 characters; tighten it"
    assert states[-1].log == ["drafted", "published"]
    assert not any(isinstance(s, Paused) for s in states)


def test_resuming_inside_a_subflow_without_values_adds_no_state(store: Store) -> None:
    runner = Runner(article_flow(), store=store)
    runner.start("a")
    updates = list(runner.stream("a", {"notes": ["x"]}, mode="updates"))
    assert [list(u) for u in updates] == [[PAUSE]]
    events = list(runner.stream("a", {"approved": True}, mode="events"))
    assert not any(isinstance(e, Paused) for e in events)
    assert [e.kind for e in events][-1] == "completed"


# -- gate branches of a Parallel ----------------------------------------------------------------


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


class Sign(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None
    notes: Annotated[list[str], append] = []


SIGN = Flow(
    name="sign",
    state=Sign,
    start="review",
    nodes={
        "review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)}),
        "sum_up": lambda s: {"notes": [f"legal={s.legal_ok} tech={s.tech_ok}"]},
    },
    routes={"review": "sum_up", "sum_up": END},
)


def test_gate_branches_of_a_parallel_pause_with_every_open_gate(store: Store) -> None:
    runner = Runner(SIGN, store=store)
    events = list(runner.stream("s", mode="events"))
    assert [e.kind for e in events] == ["node_started", "waiting", "waiting", "paused"]
    paused = events[-1]
    assert isinstance(paused, Paused)
    assert (paused.node, paused.gates) == ("review", ("legal", "tech"))


@pytest.mark.parametrize("restart", [False, True])
def test_answering_one_gate_branch_streams_the_current_state_and_the_pause_left(
    store: Store, restart: bool
) -> None:
    runner = Runner(SIGN, store=store)
    start = runner.start("s")
    if restart:
        runner = Runner(SIGN, store=store)
    items = list(runner.stream("s", {"legal_ok": True}, gate="legal", mode=["values", "events"]))
    assert items[0] == ("values", start.state)  # nothing merges until every branch is answered
    (_, paused_value), (_, paused_event) = items[-2:]
    assert paused_value is paused_event
    assert isinstance(paused_value, Paused) and paused_value.gates == ("tech",)
    assert paused_value.version == runner.get_state("s").version

    last = list(runner.stream("s", {"tech_ok": True}, gate="tech"))
    assert last[0] == start.state
    assert last[-1].notes == ["legal=True tech=True"]
    assert not any(isinstance(s, Paused) for s in last)


# -- a resume with nothing to answer --------------------------------------------------------------


def test_resuming_a_pending_thread_begins_from_where_it_stands(store: Store) -> None:
    runner = Runner(DRAFTS, store=store)
    with runner.stream("t", {"topic": "x"}, mode="events") as it:
        for event in it:
            if event.kind == "node_started":
                break  # nothing committed: `write` is next
    pending = runner.get_state("t")
    assert pending.status == "pending"
    current, written, paused = list(Runner(DRAFTS, store=store).stream("t"))
    assert current == pending.state and current.log == []
    assert written.log == ["write"] and isinstance(paused, Paused)


# -- astream ------------------------------------------------------------------------------------


def _collect(make: Callable[[], Any]) -> list[Any]:
    async def main() -> list[Any]:
        async with make() as it:
            return [item async for item in it]

    return asyncio.run(main())


def test_astream_gives_the_same_pause_items(store: Store) -> None:
    runner = Runner(article_flow(), store=store)
    items = _collect(lambda: runner.astream("a", mode=["values", "updates", "events"]))
    assert [mode for mode, _ in items[-3:]] == ["values", "updates", "events"]
    paused = items[-1][1]
    assert isinstance(paused, Paused) and paused.gates == ("review/comment",)
    before = runner.get_state("a").state
    resumed = _collect(lambda: runner.astream("a", {"notes": ["n"]}))
    assert resumed[0] == before and isinstance(resumed[-1], Paused)
    assert resumed[-1].gates == ("review/approve",)


def test_astream_of_parallel_gate_branches(store: Store) -> None:
    runner = Runner(SIGN, store=store)
    assert isinstance(_collect(lambda: runner.astream("s"))[-1], Paused)
    first = _collect(lambda: runner.astream("s", {"tech_ok": False}, gate="tech", mode="updates"))
    assert first == [{PAUSE: first[0][PAUSE]}] and first[0][PAUSE].gates == ("legal",)
    events = _collect(lambda: runner.astream("s", {"legal_ok": True}, gate="legal", mode="events"))
    assert any(isinstance(e, StateChanged) and e.node == "review" for e in events)
    assert events[-1].kind == "completed"


# -- pauses with payloads -----------------------------------------------------------------------

MODES = ["values", "updates", "events"]


class Answer(BaseModel):
    approved: bool


def drafts_with_payload() -> Flow:
    return Flow(
        name="drafts_payload",
        state=Draft,
        start="write",
        nodes={"write": write, "publish": publish},
        gates={"review": Gate(Verdict, payload=lambda s: {"draft": s.text})},
        routes={"write": "review", "review": "publish", "publish": END},
    )


@node(asks=Answer)
def ask_first(state: Draft, ctx: Context) -> None:
    ctx.ask({"question": f"write about {state.topic}?"}, update={"log": ["asked"]})


ASKS = Flow(
    name="asks_first",
    state=Draft,
    start="ask",
    nodes={"ask": ask_first, "write": write},
    routes={"ask": "write", "write": END},
)


def check_each(state: Draft, topic: str, ctx: Context) -> dict[str, Any]:
    if topic.startswith("?"):
        ctx.ask({"topic": topic})
    return {"log": [topic]}


MAPS = Flow(
    name="asks_in_a_map",
    state=Draft,
    start="check",
    nodes={"check": Map(check_each, over=lambda s: ["a", "?b", "c", "?d"], asks=Answer)},
    routes={"check": END},
)


@pytest.mark.parametrize(
    ("flow", "pauses"),
    [
        (drafts_with_payload(), (Pause("review", {"draft": "about robots"}),)),
        (ASKS, (Pause("ask", {"question": "write about robots?"}),)),
        (MAPS, (Pause("check[1]", {"topic": "?b"}), Pause("check[3]", {"topic": "?d"}))),
    ],
    ids=["gate-payload", "node-asks", "map-calls-ask"],
)
def test_every_pause_mode_ends_with_the_payloads(
    store: Store, flow: Flow, pauses: tuple[Pause, ...]
) -> None:
    it = Runner(flow, store=store).stream("t", {"topic": "robots"}, mode=MODES)
    pairs = list(it)
    assert it.result is not None and it.result.pauses == pauses
    tail = pairs[-3:]
    assert [mode for mode, _ in tail] == ["values", "updates", "events"]
    paused = tail[0][1]
    assert tail[1][1] == {PAUSE: paused} and tail[2][1] is paused
    assert isinstance(paused, Paused)
    assert paused.pauses == pauses and paused.gates == tuple(p.id for p in pauses)
    assert paused.payload == (pauses[0].payload if len(pauses) == 1 else None)
    waiting = [e for mode, e in pairs if mode == "events" and isinstance(e, Waiting)]
    assert [(e.gate, e.payload) for e in waiting] == [(p.id, p.payload) for p in pauses]


def test_a_resumed_stream_ends_with_the_next_question(store: Store) -> None:
    runner = Runner(MAPS, store=store)
    runner.start("t")
    # A new runner on the same store, as a later request would: one answer, one left.
    later = Runner(MAPS, store=store)
    items = list(later.stream("t", {"approved": True}, gate="check[3]", mode="updates"))
    assert [list(item) for item in items] == [[PAUSE]]  # no step of the state: the map waits
    paused = items[0][PAUSE]
    assert paused.pauses == (Pause("check[1]", {"topic": "?b"}),)
    assert paused.payload == {"topic": "?b"}
    last = list(later.stream("t", {"approved": False}))
    assert not any(isinstance(item, Paused) for item in last)
    assert last[-1].log == ["a", "c"]
    assert last[-1].approved is True  # the answers merge in item order: check[3]'s last


def test_astream_ends_with_the_payload(store: Store) -> None:
    items = _collect(lambda: Runner(ASKS, store=store).astream("t", {"topic": "x"}))
    assert isinstance(items[-1], Paused)
    assert items[-1].payload == {"question": "write about x?"}
