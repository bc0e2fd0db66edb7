"""A Flow checks its whole definition when built and reports every problem at once."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

from flowkit import (
    END,
    Flow,
    Gate,
    NodeError,
    Route,
    RouteTable,
    Runner,
    always,
    append,
    field,
    node,
)
from flowkit.errors import FlowDefinitionError


class Doc(BaseModel):
    text: str = ""
    approved: bool = False
    log: Annotated[list[str], append] = []


class Review(BaseModel):
    approved: bool


def noop(state: Doc) -> None:
    return None


def test_a_good_flow_builds_and_is_immutable() -> None:
    flow = Flow(
        name="ok",
        state=Doc,
        start="a",
        nodes={"a": noop},
        gates={"review": Review},
        routes={
            "a": "review",
            "review": RouteTable("r", [Route(field("approved"), END)], default="a"),
        },
    )
    assert flow.states == ["a", "review", END]
    with pytest.raises(AttributeError, match="immutable"):
        flow.start = "b"  # type: ignore[misc]


def test_every_problem_is_reported_in_one_error() -> None:
    shadowing = RouteTable(
        "after_b", [Route(always(), "c"), Route(field("approved"), END)], default="c"
    )
    with pytest.raises(FlowDefinitionError) as caught:
        Flow(
            name="broken",
            state=Doc,
            start="a",
            nodes={"a": noop, "b": noop, "c": noop, "orphan": noop, "loop": noop, "silent": noop},
            gates={"review": Review, "stuck": Review},
            routes={
                "a": "review",
                "review": RouteTable(
                    "r",
                    [Route(field("approved"), "b"), Route(field("text").eq("?"), "stuck")],
                    default="publsh",
                ),
                "b": shadowing,
                "c": "loop",
                "orphan": END,
                "loop": "loop",
                "stuck": "stuck",
                "ghost": "a",
            },
        )
    problems = caught.value.problems
    text = "\n".join(problems)
    assert "Route `review -> publsh`: `publsh` is not in this flow" in text
    assert "rule 1 (`approved -> __end__`) can never match" in text
    assert "Node `silent` has no route" in text
    assert "`orphan` is unreachable" in text
    assert "`loop` is a dead end" in text
    assert "Gate `stuck` only routes back to itself" in text
    assert "Route from `ghost`: `ghost` is not a node or gate" in text
    assert len(problems) >= 8
    assert str(caught.value).startswith(f"Flow `broken` has {len(problems)} problems:")


def test_unknown_target_suggests_the_closest_name() -> None:
    with pytest.raises(FlowDefinitionError, match="did you mean `publish`"):
        Flow(
            name="f",
            state=Doc,
            start="draft",
            nodes={"draft": noop, "publish": noop},
            routes={"draft": "publsh", "publish": END},
        )


def test_declared_fields_must_exist_in_the_state_model() -> None:
    writes_ghost = node(noop, reads=["txt"], writes=["ghost"])
    with pytest.raises(FlowDefinitionError) as caught:
        Flow(
            name="f",
            state=Doc,
            start="a",
            nodes={"a": writes_ghost},
            routes={"a": RouteTable("r", [Route(field("aproved"), END)], default=END)},
            change_classes={"progress": ["texts"]},
        )
    text = "\n".join(caught.value.problems)
    assert "declares a write to `ghost`" in text
    assert "declares a read of `txt`" in text and "did you mean `text`" in text
    assert "reads `aproved`" in text
    assert "Change class `progress` lists `texts`" in text


def test_gate_input_fields_must_map_onto_state_fields() -> None:
    class Feedback(BaseModel):
        comment: str

    with pytest.raises(FlowDefinitionError, match="copies its input field `comment`"):
        Flow(name="f", state=Doc, start="g", nodes={}, gates={"g": Feedback}, routes={"g": END})
    # With an apply function the gate decides itself where the input goes.
    Flow(
        name="f",
        state=Doc,
        start="g",
        nodes={},
        gates={"g": Gate(Feedback, apply=lambda s, i: {"text": i.comment})},
        routes={"g": END},
    )


def test_error_field_must_hold_a_node_error() -> None:
    class Bad(BaseModel):
        error: int = 0

    with pytest.raises(FlowDefinitionError, match="cannot hold a NodeError"):
        Flow(name="f", state=Bad, start="a", nodes={"a": noop}, routes={"a": END})

    class Good(BaseModel):
        error: NodeError | None = None

    assert (
        Flow(name="f", state=Good, start="a", nodes={"a": noop}, routes={"a": END}).error_field
        == "error"
    )


def test_dialog_state_type_must_admit_every_machine_state() -> None:
    class Narrow(BaseModel):
        dialog_state: Literal["a"] = "a"

    with pytest.raises(FlowDefinitionError, match="cannot hold `b`"):
        Flow(
            name="f",
            state=Narrow,
            start="a",
            nodes={"a": noop, "b": noop},
            routes={"a": "b", "b": END},
        )


def test_names_must_not_collide() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        Flow(
            name="f",
            state=Doc,
            start="a",
            nodes={"a": noop, "g": noop},
            gates={"g": Review},
            finals={"a": "done"},
            routes={"a": "g", "g": END},
        )
    text = "\n".join(caught.value.problems)
    assert "`g` is both a node and a gate" in text
    assert "`a` is a final state and also a node or gate" in text


def test_start_must_exist() -> None:
    with pytest.raises(FlowDefinitionError, match="Start `strat` is not a node"):
        Flow(name="f", state=Doc, start="strat", nodes={"start": noop}, routes={"start": END})


def test_flow_data_lists_tables_as_data() -> None:
    table = RouteTable("r", [Route(field("approved"), END)], default="a")
    flow = Flow(
        name="f",
        state=Doc,
        start="a",
        nodes={"a": noop},
        gates={"g": Review},
        routes={"a": "g", "g": table},
    )
    data = flow.to_data()
    assert data["routes"]["g"] == table.to_data()
    assert data["gates"] == {"g": "Review"}


class Talk(BaseModel):
    said: str = ""
    bye: bool = False
    replies: Annotated[list[str], append] = []


class Line(BaseModel):
    said: str


def respond(state: Talk) -> dict[str, list[str]]:
    return {"replies": [f"you said {state.said}"]}


def is_bye(state: Talk) -> bool:
    return state.said == "bye"


@pytest.mark.parametrize(
    "routes",
    [
        # a chat session that never ends: user -> respond -> user -> ...
        {"user": "respond", "respond": "user"},
        # the same session with a way out, through a named-function condition
        {"user": "respond", "respond": RouteTable("r", [Route(is_bye, END)], default="user")},
        # the loop passes through the gate after several nodes
        {"user": "respond", "respond": "log", "log": "user"},
    ],
    ids=["endless", "with_exit", "longer_cycle"],
)
def test_a_cycle_through_a_gate_is_a_conversation_not_a_dead_end(routes: dict[str, object]) -> None:
    nodes = {name: respond for name in routes if name != "user"}
    flow = Flow(name="chat", state=Talk, start="user", nodes=nodes, gates={"user": Line},
                routes=routes)  # fmt: skip
    runner = Runner(flow)
    result = runner.start("t1")
    for said in ["hi", "how are you", "bye"]:
        assert result.waiting and result.node == "user"
        result = runner.resume("t1", {"said": said})
    assert result.state.replies[: len(nodes)] == ["you said hi"] * len(nodes)


@pytest.mark.parametrize(
    ("routes", "dead"),
    [
        # nodes looping among themselves never rest, even if a gate leads into the loop
        ({"user": "a", "a": "b", "b": "a"}, ["a", "b"]),
        ({"user": "a", "a": "a"}, ["a"]),
    ],
)
def test_a_loop_of_nodes_that_never_reaches_a_gate_is_still_a_dead_end(
    routes: dict[str, str], dead: list[str]
) -> None:
    nodes = {name: respond for name in routes if name != "user"}
    with pytest.raises(FlowDefinitionError) as caught:
        Flow(name="spin", state=Talk, start="user", nodes=nodes, gates={"user": Line},
             routes=routes)  # fmt: skip
    assert [p.split("`")[1] for p in caught.value.problems if "dead end" in p] == dead
    assert "reaches END, a final state or a gate" in str(caught.value)
