"""Per-node latency and success logs come from the engine (``node_finished``), so a plain
``Runner`` over the dialogue flow logs them, and each line names its thread without any
personal value; ``Dialogue`` adds no second line per node and refuses personal thread ids."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from flowkit import Flow, Node, Runner
from flowkit.dialogue import Dialogue, opaque_thread_id
from flowkit.dialogue.state import DialogueState
from flowkit.errors import InvalidThreadIdError
from flowkit.routing import dialogue as r

from .conftest import monday

TURN = "book maintenance for robot 1 tomorrow at 10:00"


def _node_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        rec.msg.fields
        for rec in caplog.records
        if rec.name == "flowkit" and getattr(rec.msg, "event", None) == "node_finished"
    ]


def test_a_plain_runner_logs_one_line_per_node_with_latency_and_success(
    flow: Flow, caplog: pytest.LogCaptureFixture
) -> None:
    runner: Runner[DialogueState] = Runner(flow, clock=monday)
    runner.start("t1", {"domain": "robot_cell"})
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        runner.resume("t1", {"text": TURN}, gate=r.SG)
        runner.resume("t1", {"text": "Yamada Taro"}, gate=r.SG)
    lines = _node_lines(caplog)
    ran = [line["node"] for line in lines]
    assert ran[:7] == [r.IR, r.GST, r.SST, r.SE, r.SFP, r.RP, r.RN_TEMPLATE]
    assert ran.count(r.EG) == 2 and r.GE in ran, "one line per node, both turns"
    for line in lines:
        assert line["thread_id"] == "t1" and line["run_id"]
        assert line["success"] is True and line["error_type"] is None
        assert line["latency_ms"] >= 0 and line["attempts"] == 1
        assert line["target"] in (*r.STATES, "__end__")
    text = caplog.text
    assert "Yamada" not in text and "robot 1" not in text, "no state value in a node line"


def test_a_failing_node_logs_success_false_and_its_error_type(
    flow: Flow, caplog: pytest.LogCaptureFixture
) -> None:
    real = flow.nodes[r.SE]

    def broken(state: DialogueState) -> dict[str, Any]:
        raise ConnectionError("validation service down")

    failing = Flow(
        name=flow.name,
        state=flow.state,
        start=flow.start,
        nodes={**flow.nodes, r.SE: Node(broken, reads=real.reads, writes=real.writes)},
        gates=dict(flow.gates),
        routes=dict(flow.routes),
        error_field=flow.error_field,
        invariants=dict(flow.invariants),
    )
    runner: Runner[DialogueState] = Runner(failing, clock=monday)
    runner.start("t2", {"domain": "robot_cell"})
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        runner.resume("t2", {"text": TURN}, gate=r.SG)
    by_node = {line["node"]: line for line in _node_lines(caplog)}
    assert by_node[r.SE]["success"] is False
    assert by_node[r.SE]["error_type"] == "ConnectionError"
    assert by_node[r.SE]["target"] == r.EP, "the route table sent the failure to EP"
    assert by_node[r.EP]["success"] is True
    assert "validation service down" not in caplog.text


def test_dialogue_adds_no_second_line_per_node(caplog: pytest.LogCaptureFixture) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        bot.send("t3", "hello")
    events = [getattr(rec.msg, "event", None) for rec in caplog.records]
    assert events.count("node_finished") == len(_node_lines(caplog)) > 0
    nodes = [line["node"] for line in _node_lines(caplog)]
    assert len(nodes) == len(set(nodes)), "each node of the turn logged once"
    assert "dialogue_node" not in events


@pytest.mark.parametrize("personal", ["sato@example.com", "+81 90 1234 5678", "09012345678"])
def test_dialogue_refuses_a_thread_id_that_looks_personal(personal: str) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    with pytest.raises(InvalidThreadIdError) as caught:
        bot.send(personal, "hello")
    assert personal not in str(caught.value) and "opaque_thread_id" in str(caught.value)


def test_an_opaque_thread_id_is_stable_and_reveals_nothing() -> None:
    first = opaque_thread_id("sato@example.com", secret="app-secret")
    assert first == opaque_thread_id("sato@example.com", secret="app-secret")
    assert first != opaque_thread_id("sato@example.com", secret="other")
    assert first.startswith("dlg-") and "sato" not in first
    bot = Dialogue("robot_cell", clock=monday)
    assert bot.send(first, "hello").thread_id == first


@pytest.mark.parametrize("generated", ["chat-20261124-004641-0f9b", "t1", "user_42", "a@b"])
def test_generated_and_plain_ids_are_accepted(generated: str) -> None:
    from flowkit.dialogue.threads import check_opaque

    assert check_opaque(generated) == generated


@pytest.mark.parametrize("wrong", [9012345678, None, b"t1", ["t1"]])
def test_a_thread_id_that_is_not_text_is_a_typed_error_that_does_not_repeat_it(
    wrong: object,
) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    with pytest.raises(InvalidThreadIdError) as caught:
        bot.send(wrong, "hello")  # type: ignore[arg-type]
    assert "must be a string" in str(caught.value) and "9012345678" not in str(caught.value)
    with pytest.raises(InvalidThreadIdError):
        bot.open(wrong)  # type: ignore[arg-type]
