"""Every branch of seed 000 §2.1 and §2.2, resolved by the route tables alone (no engine).

Targets are the flow's states; ``flowkit.routing.sas`` documents the mapping from the seed's
names (its END after an error, like its END "wait for the front end", keeps the thread at a
review gate: the one the failed step came from, so a thread is never stranded).
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from flowkit import RouteTable
from flowkit.routing.sas import (
    ERROR,
    FINAL,
    GENERATE_INDIVIDUAL_XMLS,
    INITIAL,
    MERGE_XML,
    MODULE_STEPS_REVIEW,
    PARAMETER_MAPPING,
    TASK_LIST_REVIEW,
    TASK_LIST_TO_MODULE_STEPS,
    USER_INPUT_TO_TASK_LIST,
    route_after_initialize,
    route_after_merge,
    route_after_module_steps_review,
    route_after_parameter_mapping,
    route_after_sas_step2,
    route_after_task_list,
    route_after_task_list_review,
    route_after_xml_generation,
)
from flowkit.testing import RouteCase, assert_routes


class SeedState(BaseModel):
    """The fields the seed's routing functions read."""

    is_error: bool = False
    dialog_state: str = "initial"
    task_list_accepted: bool = False
    module_steps_accepted: bool = False
    sas_step1_generated_tasks: list[str] = []
    sas_step2_module_steps: dict[str, str] = {}
    failed_step: str | None = None


def review_cases(review: str) -> list[RouteCase]:
    return [
        # 判定1: error has the highest priority, whatever else is set: the thread waits at
        # its review with the error shown (never a final state).
        RouteCase(SeedState(is_error=True), review, "error waits at review"),
        RouteCase(
            SeedState(is_error=True, module_steps_accepted=True, task_list_accepted=True),
            review,
            "error beats approvals",
        ),
        # Approvals: module steps first (go to XML), then the task list (go to step 2).
        RouteCase(
            SeedState(module_steps_accepted=True, task_list_accepted=True),
            GENERATE_INDIVIDUAL_XMLS,
            "steps approved",
        ),
        RouteCase(SeedState(module_steps_accepted=True), GENERATE_INDIVIDUAL_XMLS, "steps only"),
        RouteCase(SeedState(task_list_accepted=True), TASK_LIST_TO_MODULE_STEPS, "list approved"),
        RouteCase(
            SeedState(task_list_accepted=True, dialog_state="user_input_to_task_list"),
            TASK_LIST_TO_MODULE_STEPS,
            "approval beats a feedback marker",
        ),
        # Feedback loops named by dialog_state.
        RouteCase(
            SeedState(dialog_state="user_input_to_task_list"),
            USER_INPUT_TO_TASK_LIST,
            "feedback on task list",
        ),
        RouteCase(
            SeedState(dialog_state="task_list_to_module_steps"),
            TASK_LIST_TO_MODULE_STEPS,
            "feedback on module steps",
        ),
        # A retry of a failed `initial` (the gate's retry marks it in dialog_state).
        RouteCase(SeedState(dialog_state=INITIAL), INITIAL, "retry initial"),
        # 判定4: waiting for the user: the thread stays at its review gate.
        RouteCase(SeedState(dialog_state="needs_clarification"), review, "needs clarification"),
        RouteCase(SeedState(dialog_state="awaiting_user_input"), review, "awaiting input"),
        # 判定5: generated results not yet approved go back to review.
        RouteCase(SeedState(dialog_state="sas_step1_tasks_generated"), review, "seed list state"),
        RouteCase(
            SeedState(dialog_state="sas_step2_module_steps_generated_for_review"),
            review,
            "seed steps state",
        ),
        RouteCase(SeedState(dialog_state=review), review, "our gate state"),
        # 判定6: anything unexpected goes back to review (the safe choice).
        RouteCase(SeedState(dialog_state="sas_step1_tasks_generation"), review, "unexpected state"),
        RouteCase(SeedState(dialog_state="something_else"), review, "unknown state"),
    ]


STEP2_CASES = [
    RouteCase(SeedState(is_error=True), TASK_LIST_REVIEW, "error without steps: list review"),
    RouteCase(
        SeedState(is_error=True, sas_step2_module_steps={"Main": "..."}),
        MODULE_STEPS_REVIEW,
        "error with steps: steps review",
    ),
    RouteCase(
        SeedState(is_error=True, dialog_state="sas_step2_module_steps_generated_for_review"),
        TASK_LIST_REVIEW,
        "error beats success",
    ),
    RouteCase(
        SeedState(dialog_state="sas_step2_module_steps_generated_for_review"),
        MODULE_STEPS_REVIEW,
        "steps generated go to review",
    ),
    RouteCase(SeedState(dialog_state="sas_step2_module_steps_generation"), ERROR, "unexpected"),
    RouteCase(SeedState(), ERROR, "initial is unexpected"),
]

INITIALIZE_CASES = [
    RouteCase(SeedState(is_error=True), TASK_LIST_REVIEW, "no output directory: retry there"),
    RouteCase(SeedState(), USER_INPUT_TO_TASK_LIST, "fresh request"),
    RouteCase(SeedState(sas_step1_generated_tasks=["Main"]), TASK_LIST_REVIEW, "list not approved"),
    RouteCase(
        SeedState(
            sas_step1_generated_tasks=["Main"],
            task_list_accepted=True,
            sas_step2_module_steps={"Main": "..."},
        ),
        MODULE_STEPS_REVIEW,
        "steps not approved",
    ),
    RouteCase(
        SeedState(sas_step1_generated_tasks=["Main"], task_list_accepted=True),
        USER_INPUT_TO_TASK_LIST,
        "approved list without steps starts over",
    ),
]


@pytest.mark.parametrize(
    ("table", "review"),
    [
        (route_after_task_list_review, TASK_LIST_REVIEW),
        (route_after_module_steps_review, MODULE_STEPS_REVIEW),
    ],
)
def test_review_tables_route_every_seed_branch(table: RouteTable, review: str) -> None:
    cases = review_cases(review)
    assert_routes(table, cases)
    used = {table.explain(c.state).rule for c in cases}
    assert used == {*range(len(table.rules)), None}, "every rule and the default exercised"


def test_step2_routes_every_seed_branch() -> None:
    assert_routes(route_after_sas_step2, STEP2_CASES)
    used = {route_after_sas_step2.explain(c.state).rule for c in STEP2_CASES}
    assert used == {*range(len(route_after_sas_step2.rules)), None}


def test_initialize_resumes_at_the_pending_review() -> None:
    assert_routes(route_after_initialize, INITIALIZE_CASES)


@pytest.mark.parametrize(
    ("table", "target", "review"),
    [
        (route_after_task_list, TASK_LIST_REVIEW, TASK_LIST_REVIEW),
        (route_after_xml_generation, PARAMETER_MAPPING, MODULE_STEPS_REVIEW),
        (route_after_parameter_mapping, MERGE_XML, MODULE_STEPS_REVIEW),
        (route_after_merge, FINAL, MODULE_STEPS_REVIEW),
    ],
)
def test_linear_steps_go_on_or_back_to_their_review(
    table: RouteTable, target: str, review: str
) -> None:
    assert_routes(table, [(SeedState(), target), (SeedState(is_error=True), review)])


ALL_TABLES = [
    route_after_task_list_review,
    route_after_module_steps_review,
    route_after_sas_step2,
    route_after_initialize,
    route_after_task_list,
    route_after_xml_generation,
    route_after_parameter_mapping,
    route_after_merge,
]


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.name)
def test_an_error_never_routes_to_the_final_error_state(table: RouteTable) -> None:
    for accepted in (False, True):
        state = SeedState(
            is_error=True,
            task_list_accepted=accepted,
            module_steps_accepted=accepted,
            sas_step2_module_steps={"Main": "..."} if accepted else {},
        )
        assert table.resolve(state) != ERROR


@pytest.mark.parametrize("case", review_cases(TASK_LIST_REVIEW), ids=lambda c: c.label)
def test_tables_resolve_plain_mappings_like_models(case: RouteCase) -> None:
    assert route_after_task_list_review.resolve(case.state.model_dump()) == case.expected


@pytest.mark.parametrize(
    "table",
    [
        route_after_task_list_review,
        route_after_module_steps_review,
        route_after_sas_step2,
        route_after_initialize,
        route_after_task_list,
        route_after_merge,
    ],
)
def test_sas_tables_have_no_static_problems(table: RouteTable) -> None:
    assert table.problems() == []


def test_tables_survive_their_json_form() -> None:
    assert RouteTable.from_json(route_after_task_list_review.to_json()) == (
        route_after_task_list_review
    )
