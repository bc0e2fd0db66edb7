"""A ``Subflow`` as a ``Parallel`` branch and as a ``Map``'s function, with a gate inside.

Each such call runs its flow as a child thread in the same store; the child's open gates are
pauses of the batch, by path (``each[1]/approve``), with their payloads, answered by id (several
in one call), across a new ``Runner`` on the same store; no child step runs twice; the join
merges the children's outputs in call order. On every shipped store."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Map, Parallel, Pause, Runner, Subflow, Waiting, append
from flowkit.errors import InvalidResumeInputError, NotWaitingError, UnknownGateError
from flowkit.stores import Store


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


PREPARED: Counter[str] = Counter()


class Review(BaseModel):
    text: str = ""
    note: str = ""
    ok: bool = False


class Approve(BaseModel):
    ok: bool


def prepare(state: Review) -> dict[str, Any]:
    PREPARED[state.text] += 1
    return {"note": f"read {state.text}"}


REVIEW = Flow(
    name="review",
    state=Review,
    start="prepare",
    nodes={"prepare": prepare},
    gates={"approve": Gate(Approve, payload=lambda s: {"text": s.text, "note": s.note})},
    routes={"prepare": "approve", "approve": END},
)


class Doc(BaseModel):
    texts: list[str] = []
    verdicts: Annotated[list[str], append] = []
    words: int = 0


def verdict(parent: Doc, child: Review) -> dict[str, Any]:
    return {"verdicts": [f"{child.text}={child.ok}"]}


EACH = Flow(
    name="each",
    state=Doc,
    start="each",
    nodes={
        "each": Map(
            Subflow(REVIEW, input=lambda s, text: {"text": text}, output=verdict),
            over=lambda s: s.texts,
        )
    },
    routes={"each": END},
)

BOTH = Flow(
    name="both",
    state=Doc,
    start="both",
    nodes={
        "both": Parallel(
            {
                "legal": Subflow(REVIEW, input=lambda s: {"text": "legal"}, output=verdict),
                "count": lambda s: {"words": len(s.texts)},
            }
        )
    },
    routes={"both": END},
)


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    PREPARED.clear()


def test_every_item_of_a_map_over_a_subflow_waits_at_its_gate_with_its_payload(
    store: Store,
) -> None:
    first = Runner(EACH, store=store).start("t", {"texts": ["a", "b", "c"]})
    assert first.status == "waiting" and first.node == "each"
    assert first.gates == ("each[0]/approve", "each[1]/approve", "each[2]/approve")
    assert first.pauses[1] == Pause("each[1]/approve", {"text": "b", "note": "read b"})
    assert first.payload is None  # several are open
    again = Runner(EACH, store=store).get_state("t")  # a new runner reads the same
    assert again.pauses == first.pauses


def test_answers_by_path_several_at_once_across_restarts_run_nothing_twice(store: Store) -> None:
    Runner(EACH, store=store).start("t", {"texts": ["a", "b", "c"]})
    runner = Runner(EACH, store=store)
    two = runner.resume("t", {"each[2]/approve": {"ok": False}, "each[0]/approve": {"ok": True}})
    assert two.status == "waiting" and two.gates == ("each[1]/approve",)
    assert two.payload == {"text": "b", "note": "read b"}
    done = Runner(EACH, store=store).resume("t", {"ok": True})  # the one open pause
    assert done.done
    assert list(done.state.verdicts) == ["a=True", "b=True", "c=False"]  # call order
    assert Counter({"a": 1, "b": 1, "c": 1}) == PREPARED


def test_a_bare_answer_with_several_open_and_an_unknown_path_are_refused(store: Store) -> None:
    runner = Runner(EACH, store=store)
    runner.start("t", {"texts": ["a", "b"]})
    with pytest.raises(NotWaitingError, match="each\\[0\\]/approve"):
        runner.resume("t", {"ok": True})
    with pytest.raises(UnknownGateError):
        runner.resume("t", {"ok": True}, gate="nowhere")
    with pytest.raises(NotWaitingError):
        runner.resume("t", {"ok": True}, gate="each[7]/approve")
    assert runner.get_state("t").gates == ("each[0]/approve", "each[1]/approve")


def test_a_bad_answer_among_several_saves_none(store: Store) -> None:
    runner = Runner(EACH, store=store)
    start = runner.start("t", {"texts": ["a", "b"]})
    with pytest.raises(InvalidResumeInputError):
        runner.resume("t", {"each[0]/approve": {"ok": True}, "each[1]/approve": {"ok": "??"}})
    after = runner.get_state("t")
    assert after.version == start.version and after.gates == start.gates


def test_a_subflow_branch_of_a_parallel_waits_by_path_and_merges(store: Store) -> None:
    runner = Runner(BOTH, store=store)
    first = runner.start("t", {"texts": ["x", "y"]})
    assert first.status == "waiting" and first.gates == ("both[legal]/approve",)
    assert first.payload == {"text": "legal", "note": "read legal"}
    assert first.state.words == 0  # nothing merges before every branch has finished
    done = Runner(BOTH, store=store).resume("t", {"ok": True}, gate="both[legal]/approve")
    assert done.done and done.state.words == 2 and list(done.state.verdicts) == ["legal=True"]
    assert Counter({"legal": 1}) == PREPARED


def test_a_subflow_without_a_gate_runs_through_in_one_call(store: Store) -> None:
    quick = Flow(
        name="quick",
        state=Review,
        start="prepare",
        nodes={"prepare": prepare},
        routes={"prepare": END},
    )
    flow = Flow(
        name="all",
        state=Doc,
        start="each",
        nodes={
            "each": Map(
                Subflow(
                    quick,
                    input=lambda s, text: {"text": text},
                    output=lambda p, c: {"verdicts": [c.note]},
                ),
                over=lambda s: s.texts,
            )
        },
        routes={"each": END},
    )
    done = Runner(flow, store=store).start("t", {"texts": ["p", "q"]})
    assert done.done and list(done.state.verdicts) == ["read p", "read q"]


def test_a_map_item_is_the_childs_start_state_without_input(store: Store) -> None:
    flow = Flow(
        name="items",
        state=Doc,
        start="each",
        nodes={"each": Map(Subflow(REVIEW, output=verdict), over=lambda s: [{"text": "i"}])},
        routes={"each": END},
    )
    waiting = Runner(flow, store=store).start("t")
    assert waiting.payload == {"text": "i", "note": "read i"}


def test_a_child_that_took_its_answer_before_a_crash_is_not_answered_twice(
    store: Store,
) -> None:
    runner = Runner(EACH, store=store)
    first = runner.start("t", {"texts": ["a", "b"]})
    # The process died after the child committed the answer, before the parent's checkpoint:
    # the child stands past its gate, the parent still lists the pause.
    child = runner._child_runner(REVIEW)
    (tid,) = [t for t in runner.threads() if t.startswith("t:each") and t.endswith(":0")]
    child.resume(tid, {"ok": True})
    assert runner.get_state("t").version == first.version
    again = Runner(EACH, store=store).resume("t", {"ok": True}, gate="each[0]/approve")
    assert again.gates == ("each[1]/approve",)
    done = Runner(EACH, store=store).resume("t", {"ok": False})
    assert list(done.state.verdicts) == ["a=True", "b=False"]


def test_waiting_events_name_each_childs_pause_by_path(store: Store) -> None:
    runner = Runner(EACH, store=store)
    seen: list[Waiting] = []
    runner.subscribe(lambda e: seen.append(e) if isinstance(e, Waiting) else None)
    runner.start("t", {"texts": ["a", "b"]})
    assert [(e.gate, e.payload["text"]) for e in seen] == [
        ("each[0]/approve", "a"),
        ("each[1]/approve", "b"),
    ]


def test_a_child_that_fails_fails_its_call(store: Store) -> None:
    def broken(state: Review) -> dict[str, Any]:
        raise ValueError("no")

    bad = Flow(name="bad", state=Review, start="b", nodes={"b": broken}, routes={"b": END})
    flow = Flow(
        name="failing",
        state=Doc,
        start="each",
        nodes={"each": Map(Subflow(bad, output=verdict), over=lambda s: [{"text": "z"}])},
        routes={"each": END},
    )
    failed = Runner(flow, store=store).start("t")
    assert failed.status == "failed" and failed.error is not None
    assert "each[0]" in failed.error.message


def test_a_node_whose_answer_has_a_field_the_state_lacks_is_refused_when_built() -> None:
    from flowkit import node
    from flowkit.errors import FlowDefinitionError

    class Nick(BaseModel):
        nickname: str

    @node(asks=Nick)
    def ask(state: Doc) -> None:
        return None

    with pytest.raises(FlowDefinitionError, match="nickname"):
        Flow(name="n", state=Doc, start="ask", nodes={"ask": ask}, routes={"ask": END})
    with pytest.raises(FlowDefinitionError, match="nickname"):
        Flow(
            name="m",
            state=Doc,
            start="each",
            nodes={"each": Map(lambda s, i: {}, over=lambda s: [], asks=Nick)},
            routes={"each": END},
        )
