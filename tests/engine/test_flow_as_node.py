"""A ``Flow`` given where a node goes is refused when built, with a message naming
``Subflow(...)``; so are a ``Map``/``Parallel`` where the engine cannot run one: as a
``Parallel`` branch or as the function of a ``Map`` or another node, and a ``Subflow`` as the
function of a plain node. Nothing of that builds and then fails on every run. A ``Subflow`` as
a ``Parallel`` branch or as a ``Map``'s function builds (and runs: test_subflow_in_batches)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Map, Parallel, Runner, Subflow, node
from flowkit.definition._node import as_node, is_flow


class Doc(BaseModel):
    text: str = ""
    words: int = 0


def tidy(state: Doc) -> dict[str, Any]:
    return {"text": state.text.strip()}


def count(state: Doc) -> dict[str, Any]:
    return {"words": len(state.text.split())}


POLISH = Flow(name="polish", state=Doc, start="tidy", nodes={"tidy": tidy}, routes={"tidy": END})


def test_a_flow_in_nodes_is_refused_naming_subflow() -> None:
    with pytest.raises(TypeError) as refused:
        Flow(name="doc", state=Doc, start="polish", nodes={"polish": POLISH},  # type: ignore[dict-item]
             routes={"polish": END})  # fmt: skip
    message = str(refused.value)
    assert "Subflow(flow, writes=[...])" in message
    assert "flow `polish`" in message and "docs/subflows.md" in message
    assert message.startswith("A node is a function")  # as for any other non-function


def test_the_wrapped_flow_builds_and_runs() -> None:
    flow = Flow(
        name="doc",
        state=Doc,
        start="polish",
        nodes={"polish": Subflow(POLISH, writes=["text"]), "count": count},
        routes={"polish": "count", "count": END},
    )
    done = Runner(flow).start("t", {"text": "  two words  "})
    assert done.done and (done.state.text, done.state.words) == ("two words", 2)


def test_a_flow_as_a_parallel_branch_is_refused_naming_subflow() -> None:
    with pytest.raises(TypeError, match=r"branch `p` is a Flow.*Subflow\(\.\.\.\)"):
        Parallel({"p": POLISH, "count": count})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "branch",
    [
        Map(lambda s, item: {}, over=lambda s: []),
        Parallel({"count": count}),
    ],
    ids=["map", "parallel"],
)
def test_a_composite_node_as_a_parallel_branch_is_refused_when_made(branch: Any) -> None:
    # Before, a Subflow branch built and then failed on every run ("cannot be called directly").
    with pytest.raises(TypeError) as refused:
        Parallel({"b": branch, "count": count})
    message = str(refused.value)
    assert f"branch `b` is a {type(branch).__name__}" in message and "Subflow(" in message


def test_a_flow_as_a_maps_function_is_refused_naming_subflow() -> None:
    with pytest.raises(TypeError, match=r"Subflow\("):
        Map(POLISH, over=lambda s: [1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "inner",
    [Subflow(POLISH, writes=["text"]), Parallel({"count": count})],
    ids=["subflow", "parallel"],
)
def test_a_composite_node_as_a_function_of_another_node_is_refused(inner: Any) -> None:
    if not isinstance(inner, Subflow):  # a Map over a Subflow runs the flow once per item
        with pytest.raises(TypeError, match="its own name in the flow's nodes="):
            Map(inner, over=lambda s: [1, 2])
    with pytest.raises(TypeError, match="run by the engine as a node of its own"):
        node(reads=["text"])(inner)


def test_a_subflow_builds_as_a_parallel_branch_and_as_a_maps_function() -> None:
    sub = Subflow(POLISH, writes=["text"])
    assert Parallel({"polish": sub, "count": count}).branches["polish"] is sub
    assert Map(sub, over=lambda s: [{"text": " a "}]).shape()["subflow"]["kind"] == "subflow"


def test_a_flow_given_to_node_is_refused_naming_subflow() -> None:
    with pytest.raises(TypeError, match=r"Subflow\("):
        node(POLISH)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"Subflow\("):
        as_node(POLISH)  # type: ignore[arg-type]


def test_other_values_keep_their_message() -> None:
    with pytest.raises(TypeError, match=r"^A node is a function \(state\) -> update, not int$"):
        as_node(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not int$"):
        Parallel({"a": 5})  # type: ignore[dict-item]


def test_plain_nodes_and_nodes_of_nodes_still_build() -> None:
    plain = node(reads=["text"], writes=["text"])(tidy)
    assert as_node(plain) is plain
    assert node(writes=["text"])(plain)(Doc(text=" a ")) == {"text": "a"}  # a Node is callable
    branchy = Parallel({"tidy": plain, "count": count})
    assert set(branchy.branches) == {"tidy", "count"}


def test_is_flow_tells_a_flow_by_its_shape() -> None:
    class Lookalike:
        def __init__(self) -> None:
            self.nodes: dict[str, Any] = {}
            self.routes: dict[str, Any] = {}
            self.start = "x"

        def __call__(self, state: Any) -> None:  # callable: a node function, not a flow
            return None

    assert is_flow(POLISH)
    assert not is_flow(Lookalike()) and not is_flow(tidy) and not is_flow(as_node(tidy))
    assert not is_flow({"nodes": {}})
