"""Seed 001 §5 as engine invariants: each rule catches its violation, a flow that breaks one
saves nothing, and random conversations never break any (acceptance 2)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit import Flow, Route, RouteTable, Runner, field
from flowkit.dialogue import Domain
from flowkit.dialogue.invariants import invariants_for
from flowkit.dialogue.state import DialogueState, GoalState, ResponsePlan
from flowkit.errors import InvalidResumeInputError, InvariantViolation
from flowkit.routing import dialogue as r

from .conftest import monday


def problems(domain: Domain, **fields: Any) -> dict[str, list[str]]:
    state = DialogueState(**fields)
    found = {name: check(state) for name, check in invariants_for(domain).items()}
    return {name: p for name, p in found.items() if p}


def test_routing_rules(domain: Domain) -> None:
    assert problems(domain, dialog_state="GST", intent_type="OOS") == {
        "routing": ["intent `OOS` is not a task intent but the turn entered GST"]
    }
    assert "routing" in problems(domain, dialog_state="NP", intent_type="book_maintenance")
    assert problems(domain, dialog_state="NP", intent_type="SMALL_TALK") == {}
    assert problems(domain, dialog_state="SFP", intent_type="inform") == {}


def test_mode_rules(domain: Domain) -> None:
    active = GoalState(goal="book_maintenance", status="active")
    assert "mode" in problems(domain, goal_state=active, dialogue_mode="STEP_BY_STEP")
    stepwise = GoalState(goal="changeover", status="active", current_step=9)
    assert "mode" in problems(domain, goal_state=stepwise, dialogue_mode="STEP_BY_STEP")
    assert "mode" in problems(domain, goal_state=GoalState(), dialogue_mode="STEP_BY_STEP")
    ok = GoalState(goal="changeover", status="active", current_step=4)
    assert problems(domain, goal_state=ok, dialogue_mode="STEP_BY_STEP") == {}


def test_slot_rules(domain: Domain) -> None:
    goal = GoalState(goal="book_maintenance", status="active")
    base = {"goal_state": goal, "dialogue_mode": "SLOT_FILLING", "dialog_state": "SFP"}
    assert "slots" in problems(domain, **base, slots={"time": "15:00"}, missing_slots=["time"])
    assert "slots" in problems(domain, **base, slots={}, missing_slots=["time"])
    full = {"machine": "robot_1", "date": "2025-03-11", "time": "15:00", "requester": "X"}
    plan = ResponsePlan(id="ask_slot", by="SFP", lang="en", slot="time")
    asked = {
        **base,
        "dialog_state": "RP",
        "slots": full,
        "missing_slots": [],
        "response_plan": plan,
        "clarifying_question": "?",
    }
    assert problems(domain, **asked) == {
        "slots": ["SFP asked a question although no slot is missing"]
    }
    # A goal that started this turn may still see the last goal's slots until SST runs.
    fresh = goal.model_copy(update={"fresh": True})
    stale = {**base, "goal_state": fresh, "dialog_state": "SST", "slots": {"x": 1}}
    assert problems(domain, **stale) == {}


def _misrouted(flow: Flow) -> Flow:
    # A wrong table: out-of-scope input sent into the task branch.
    wrong = RouteTable(
        "route_after_ir", [Route(field("intent_type").eq("never"), r.NP)], default=r.GST
    )
    return Flow(
        name=flow.name,
        state=flow.state,
        start=flow.start,
        nodes=dict(flow.nodes),
        gates=dict(flow.gates),
        routes={**flow.routes, r.IR: wrong},
        error_field=None,
        invariants=dict(flow.invariants),
    )


def test_a_violation_raises_and_the_invalid_state_is_never_saved(flow: Flow) -> None:
    runner = Runner(_misrouted(flow), clock=monday)
    runner.start("t", {"domain": "robot_cell"})
    before = runner.get_state("t").version
    with pytest.raises(InvariantViolation) as caught:
        runner.resume("t", {"text": "what's the weather in Paris?"})
    assert caught.value.node == r.IR and caught.value.invariants == ["routing"]
    now = runner.get_state("t")
    assert now.version == before + 1  # the user's message was saved, IR's step was not
    assert (now.node, now.status, now.state.intent_type) == (r.IR, "pending", None)
    assert [c.kind for c in runner.history("t")] == ["start", "input"]


def test_a_patch_that_breaks_the_slot_rules_is_refused(runner: Runner[DialogueState]) -> None:
    runner.start("t", {"domain": "robot_cell"})
    runner.resume("t", {"text": "book maintenance for robot 1"})
    with pytest.raises(InvariantViolation, match="slots"):
        runner.update_state("t", {"missing_slots": []}, reason="skip the questions")
    assert runner.get_state("t").state.missing_slots == ["date", "time", "requester"]


UTTERANCES = [
    "hello",
    "book maintenance for robot 2 tomorrow at 3 pm",
    "schedule maintenance",
    "robot 1",
    "the conveyor",
    "tomorrow",
    "next monday",
    "at 7 am",
    "3 pm",
    "10:30",
    "no, make it 4 pm",
    "Sato",
    "my name is Tanaka",
    "cancel",
    "start the changeover",
    "next",
    "done",
    "go back",
    "repeat that",
    "what is the maximum payload?",
    "how do I reset the e-stop",
    "thanks",
    "what can you do",
    "what's the weather?",
    "1999-01-01",
    "in 90 days",
    "9",
    "メンテナンスを予約したい",
    "明日15時",
    "ロボット3",
    "やっぱり16時で",
    "佐藤です",
    "キャンセル",
    "段取り替えを始めたい",
    "次へ",
    "戻る",
    "もう一度",
    "完了",
    "非常停止の解除方法は？",
    "ありがとう",
    "今日の天気は？",
    "bye",
    "さようなら",
]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.lists(
        # Mostly meaningful turns in both languages, some arbitrary text (blank included).
        st.one_of(st.sampled_from(UTTERANCES), st.sampled_from(UTTERANCES), st.text(max_size=30)),
        min_size=1,
        max_size=14,
    )
)
def test_random_conversations_never_break_an_invariant(flow: Flow, turns: list[str]) -> None:
    runner: Runner[DialogueState] = Runner(flow, store=None, clock=monday)
    result = runner.start("t", {"domain": "robot_cell"})
    for text in turns:
        try:
            result = runner.resume("t", {"text": text})
        except InvalidResumeInputError:
            assert not text.strip()  # only blank input is refused; the thread still waits
            assert runner.get_state("t").status == "waiting"
            continue
        # An InvariantViolation would have been raised by resume; the turn also ended well.
        assert (result.status, result.node) in (("waiting", r.SG), ("done", "__end__"))
        assert result.state.final_answer
        if result.done:
            break
