"""The dialogue route tables, each resolved in isolation (no engine, store or LLM)."""

from __future__ import annotations

from flowkit import END
from flowkit.routing import dialogue as r
from flowkit.testing import assert_routes


def test_after_ir_non_task_intents_go_to_np_and_everything_else_to_gst() -> None:
    assert_routes(
        r.route_after_ir,
        [
            ({"intent_type": "OOS"}, r.NP),
            ({"intent_type": "QUESTION"}, r.NP),
            ({"intent_type": "SMALL_TALK"}, r.NP),
            ({"intent_type": "book_maintenance"}, r.GST, "a task intent"),
            ({"intent_type": "cancel"}, r.GST, "control intents belong to the task branch"),
            ({"intent_type": "inform"}, r.GST, "slot values"),
            ({"intent_type": None}, r.GST),
        ],
    )


def test_after_gst_an_active_goal_continues_in_its_mode() -> None:
    active = {"status": "active"}
    assert_routes(
        r.route_after_gst,
        [
            ({"goal_state": active, "dialogue_mode": "SLOT_FILLING"}, r.SST),
            ({"goal_state": active, "dialogue_mode": "STEP_BY_STEP"}, r.GE),
            ({"goal_state": {"status": "cancelled"}, "dialogue_mode": None}, r.GP),
            ({"goal_state": {"status": "idle"}, "dialogue_mode": None}, r.GP),
            ({"goal_state": {"status": "completed"}, "dialogue_mode": "SLOT_FILLING"}, r.GP),
        ],
    )


def test_after_gst_the_answer_to_a_confirmation_question_comes_first() -> None:
    def goal(command: str, status: str = "active") -> dict[str, object]:
        return {"status": status, "confirm": True, "command": command}

    filling = "SLOT_FILLING"
    assert_routes(
        r.route_after_gst,
        [
            ({"goal_state": goal("confirm"), "dialogue_mode": filling}, r.GE, "yes: the action"),
            ({"goal_state": goal("deny"), "dialogue_mode": filling}, r.GP, "no: what to change"),
            ({"goal_state": goal("unclear"), "dialogue_mode": filling}, r.GP, "asked again"),
            ({"goal_state": goal("continue"), "dialogue_mode": filling}, r.SST, "new values"),
            ({"goal_state": goal("start"), "dialogue_mode": filling}, r.SST),
            ({"goal_state": goal("cancel", "cancelled"), "dialogue_mode": None}, r.GP),
            ({"goal_state": goal("confirm", "idle"), "dialogue_mode": None}, r.GP, "no goal"),
            (
                {"goal_state": goal("confirm"), "error": {"node": r.GST}},
                r.EP,
                "a failure of GST wins over everything",
            ),
        ],
    )


def test_after_se_a_goal_that_confirms_first_goes_to_gp_not_ge() -> None:
    assert_routes(
        r.route_after_se,
        [
            ({"missing_slots": [], "goal_state": {"confirm": True}}, r.GP, "ask to confirm"),
            ({"missing_slots": [], "goal_state": {"confirm": False}}, r.GE),
            ({"missing_slots": ["time"], "goal_state": {"confirm": True}}, r.SFP, "ask first"),
            ({"missing_slots": [], "error": {"node": r.SE}}, r.EP),
        ],
    )


def test_after_se_ask_while_something_is_missing_else_execute() -> None:
    assert_routes(
        r.route_after_se,
        [
            ({"missing_slots": ["time"]}, r.SFP),
            ({"missing_slots": []}, r.GE, "§5.3: nothing missing, no question"),
        ],
    )


def test_after_rp_the_plan_style_picks_the_response_node() -> None:
    assert_routes(
        r.route_after_rp,
        [
            ({"response_plan": {"style": "llm"}}, r.RN_LLM),
            ({"response_plan": {"style": "template"}}, r.RN_TEMPLATE),
        ],
    )


def test_after_eg_a_goodbye_ends_else_the_next_turn_waits() -> None:
    assert_routes(
        r.route_after_eg,
        [
            ({"next_action": "end"}, END),
            ({"next_action": "respond"}, r.SG),
            ({"next_action": "clarify"}, r.SG),
            ({"next_action": None}, r.SG),
        ],
    )


def test_tables_round_trip_as_data() -> None:
    from flowkit import RouteTable

    for table in (
        r.route_after_ir,
        r.route_after_gst,
        r.route_after_se,
        r.route_after_rp,
        r.route_after_eg,
    ):
        assert RouteTable.from_data(table.to_data()) == table
        assert table.problems() == []
