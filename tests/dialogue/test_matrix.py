"""Seed 001 §4.1 as an executable contract: each node declares the matrix's writes exactly,
and the engine refuses a write outside them (nothing is saved)."""

from __future__ import annotations

from typing import Any

import pytest

from flowkit import Flow, Node, Runner
from flowkit.dialogue.state import DialogueState
from flowkit.errors import UndeclaredWriteError
from flowkit.nodes.dialogue import EXTRA_READS, EXTRA_WRITES, MATRIX, ep
from flowkit.routing import dialogue as r

from .conftest import monday

#: §4.1 restated from the seed (Japanese original), independent of the package's copy.
SEED_WRITES = {
    "SG": {"messages", "user_text", "turn_id"},
    "IR": {"intent_type", "entities"},
    "NP": {"next_action", "response_plan"},
    "GST": {"goal_state", "dialogue_mode"},
    "SST": {"slots", "missing_slots"},
    "SE": {"slots", "missing_slots", "exec_trace"},
    "GE": {"goal_state", "exec_trace", "tool_calls", "tool_result", "tool_result_ref", "error"},
    "SFP": {"next_action", "clarifying_question", "response_plan"},
    "GP": {"next_action", "response_plan"},
    "RP": set(),
    "RN": {"final_answer", "messages"},
    "EG": set(),
}
SEED_READS = {
    "IR": {"user_text", "messages"},
    "NP": {"intent_type", "messages"},
    "GST": {"intent_type", "entities", "goal_state"},
    "SST": {"entities", "slots", "missing_slots"},
    "SE": {"slots", "missing_slots", "entities"},
    "GE": {"goal_state", "slots", "entities"},
    "SFP": {"slots", "missing_slots"},
    "GP": {"goal_state", "slots", "error"},
    "RP": {"response_plan"},
    "RN": {"response_plan", "clarifying_question", "goal_state", "slots"},
    "EG": {"final_answer", "messages"},
}


def _matrix_name(state: str) -> str:
    return "RN" if state.startswith("RN_") else state


def test_the_package_matrix_is_the_seeds() -> None:
    assert {k: set(w) for k, (_, w) in MATRIX.items()} == SEED_WRITES
    assert {k: set(rd) for k, (rd, _) in MATRIX.items() if k != "SG"} == SEED_READS


def test_every_node_writes_exactly_the_matrix_and_reads_it_plus_documented_extras(
    flow: Flow,
) -> None:
    assert set(flow.nodes) | set(flow.gates) == set(r.STATES)
    # EP (the Error Policy) is flowkit's, not the seed's: its reads and writes are its own.
    assert (flow.nodes[r.EP].reads, flow.nodes[r.EP].writes) == (ep.READS, ep.WRITES)
    for name, node in flow.nodes.items():
        if name == r.EP:
            continue
        key = _matrix_name(name)
        assert node.writes == frozenset(SEED_WRITES[key]), name
        assert node.reads == frozenset(SEED_READS[key] | set(EXTRA_READS.get(key, {}))), name
    # §2.1 makes SG the owner of thread_id and §2.4's error is per turn (EXTRA_WRITES says why).
    assert flow.gates[r.SG].writes == frozenset(SEED_WRITES["SG"] | set(EXTRA_WRITES["SG"]))
    assert all(EXTRA_WRITES["SG"].values())
    for key, extras in EXTRA_READS.items():
        assert all(reason for reason in extras.values()), f"{key}: every extra read has a reason"
        assert not set(extras) & SEED_READS.get(key, set()), f"{key}: extras repeat the matrix"


def _with(flow: Flow, name: str, node: Node) -> Flow:
    nodes: dict[str, Any] = {**flow.nodes, name: node}
    return Flow(
        name=flow.name,
        state=flow.state,
        start=flow.start,
        nodes=nodes,
        gates=dict(flow.gates),
        routes=dict(flow.routes),
        error_field=None,
        invariants=dict(flow.invariants),
    )


def test_a_node_writing_outside_the_matrix_is_rejected_and_nothing_is_saved(flow: Flow) -> None:
    real = flow.nodes[r.IR]

    def overreaching(state: DialogueState, ctx: Any) -> dict[str, Any]:
        # IR may write intent_type and entities; deciding the goal is GST's job.
        return {**real.fn(state, ctx), "goal_state": {"goal": "book_maintenance"}}

    rogue = _with(flow, r.IR, Node(overreaching, reads=real.reads, writes=real.writes))
    runner = Runner(rogue, clock=monday)
    runner.start("t", {"domain": "robot_cell"})
    with pytest.raises(UndeclaredWriteError) as caught:
        runner.resume("t", {"text": "book maintenance"})
    assert (caught.value.node, caught.value.key) == (r.IR, "goal_state")
    now = runner.get_state("t")
    # The Start Gate's input was saved; IR's step was not.
    assert (now.node, now.status, now.state.intent_type) == (r.IR, "pending", None)
    assert now.state.goal_state.goal is None


def test_every_matrix_key_is_a_state_field() -> None:
    fields = set(DialogueState.model_fields)
    for reads, writes in MATRIX.values():
        assert reads | writes <= fields
    for extras in EXTRA_READS.values():
        assert set(extras) <= fields
