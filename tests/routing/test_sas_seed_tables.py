"""Every branch of seed 000 §2.1 and §2.2, resolved by the route tables alone (no engine)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from flowkit import END
from flowkit.routing.sas import (
    GENERATE_INDIVIDUAL_XMLS,
    SAS_REVIEW_AND_REFINE,
    SAS_TASK_LIST_TO_MODULE_STEPS,
    SAS_USER_INPUT_TO_TASK_LIST,
    route_after_sas_review_and_refine,
    route_after_sas_step2,
)
from flowkit.testing import RouteCase, assert_routes


class SeedState(BaseModel):
    """The fields the seed's routing functions read."""

    is_error: bool = False
    dialog_state: str = "initial"
    task_list_accepted: bool = False
    module_steps_accepted: bool = False


REVIEW_CASES = [
    # 判定1: error has the highest priority, whatever else is set.
    RouteCase(SeedState(is_error=True), END, "error ends"),
    RouteCase(
        SeedState(is_error=True, module_steps_accepted=True, task_list_accepted=True),
        END,
        "error beats approvals",
    ),
    # Approvals: module steps first (go to XML), then the task list (go to step 2).
    RouteCase(
        SeedState(module_steps_accepted=True, task_list_accepted=True),
        GENERATE_INDIVIDUAL_XMLS,
        "steps approved",
    ),
    RouteCase(SeedState(module_steps_accepted=True), GENERATE_INDIVIDUAL_XMLS, "steps only"),
    RouteCase(SeedState(task_list_accepted=True), SAS_TASK_LIST_TO_MODULE_STEPS, "list approved"),
    RouteCase(
        SeedState(task_list_accepted=True, dialog_state="user_input_to_task_list"),
        SAS_TASK_LIST_TO_MODULE_STEPS,
        "approval beats a feedback marker",
    ),
    # Feedback loops named by dialog_state.
    RouteCase(
        SeedState(dialog_state="user_input_to_task_list"),
        SAS_USER_INPUT_TO_TASK_LIST,
        "feedback on task list",
    ),
    RouteCase(
        SeedState(dialog_state="task_list_to_module_steps"),
        SAS_TASK_LIST_TO_MODULE_STEPS,
        "feedback on module steps",
    ),
    # 判定4: waiting for the user ends the run (the front end takes over).
    RouteCase(SeedState(dialog_state="needs_clarification"), END, "needs clarification"),
    RouteCase(SeedState(dialog_state="awaiting_user_input"), END, "awaiting input"),
    # 判定5: generated results not yet approved go back to review.
    RouteCase(
        SeedState(dialog_state="sas_step1_tasks_generated"),
        SAS_REVIEW_AND_REFINE,
        "task list to review",
    ),
    RouteCase(
        SeedState(dialog_state="sas_step2_module_steps_generated_for_review"),
        SAS_REVIEW_AND_REFINE,
        "module steps to review",
    ),
    # 判定6: anything unexpected goes back to review (the safe choice).
    RouteCase(SeedState(dialog_state="initial"), SAS_REVIEW_AND_REFINE, "unexpected state"),
    RouteCase(SeedState(dialog_state="something_else"), SAS_REVIEW_AND_REFINE, "unknown state"),
]

STEP2_CASES = [
    RouteCase(SeedState(is_error=True), END, "error ends"),
    RouteCase(
        SeedState(is_error=True, dialog_state="sas_step2_module_steps_generated_for_review"),
        END,
        "error beats success",
    ),
    RouteCase(
        SeedState(dialog_state="sas_step2_module_steps_generated_for_review"),
        SAS_REVIEW_AND_REFINE,
        "steps generated go to review",
    ),
    RouteCase(SeedState(dialog_state="sas_step2_module_steps_generation"), END, "unexpected"),
    RouteCase(SeedState(), END, "initial is unexpected"),
]


def test_review_and_refine_routes_every_seed_branch() -> None:
    assert_routes(route_after_sas_review_and_refine, REVIEW_CASES)


def test_step2_routes_every_seed_branch() -> None:
    assert_routes(route_after_sas_step2, STEP2_CASES)


@pytest.mark.parametrize("case", REVIEW_CASES, ids=lambda c: c.label)
def test_review_table_resolves_plain_mappings_like_models(case: RouteCase) -> None:
    assert route_after_sas_review_and_refine.resolve(case.state.model_dump()) == case.expected


def test_every_rule_of_the_review_table_is_exercised() -> None:
    used = {route_after_sas_review_and_refine.explain(c.state).rule for c in REVIEW_CASES}
    assert used == {*range(len(route_after_sas_review_and_refine.rules)), None}


def test_every_rule_of_the_step2_table_is_exercised() -> None:
    used = {route_after_sas_step2.explain(c.state).rule for c in STEP2_CASES}
    assert used == {*range(len(route_after_sas_step2.rules)), None}


@pytest.mark.parametrize("table", [route_after_sas_review_and_refine, route_after_sas_step2])
def test_seed_tables_have_no_static_problems(table: object) -> None:
    assert table.problems() == []  # type: ignore[attr-defined]
