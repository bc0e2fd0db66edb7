"""Route tables of the robot-flow (sas) workflow, as data.

``route_after_sas_review_and_refine`` and ``route_after_sas_step2`` reproduce the functions of
seed 000 §2 rule for rule, in the same order. Targets are this flow's machine states, which
are seed 002's ``dialog_state`` values; seed 000 names some of them differently:

==========================================  =====================================
seed 000 name                               flowkit state (seed 002)
==========================================  =====================================
``sas_step1_tasks_generation``              ``user_input_to_task_list``
``sas_step1_tasks_generated``               ``sas_awaiting_task_list_review``
``sas_step2_module_steps_generation``       ``task_list_to_module_steps``
``sas_step2_module_steps_generated_...``    ``sas_awaiting_module_steps_review``
``sas_all_steps_accepted_proceed_to_xml``   ``sas_generating_individual_xmls``
node ``sas_review_and_refine``              the review gate the thread is at
``END`` after an error                      the review gate the step came from
``END`` "wait for the front end"            the review gate (the thread waits there)
==========================================  =====================================

A step that fails (``is_error``) never ends the thread: it goes back to the review gate it
came from with ``error_message`` and ``failed_step`` in state (step 1, and ``initial``, to
the task-list review; step 2 to the module-step review when steps exist, else the task-list
review; steps 3-5 to the module-step review). There the reviewer retries (``action="retry"``,
``flowkit sas retry``), sends feedback or an edit. ``error`` stays a final state only for a
step 2 that ends in a state it should never reach (the seed's END "for safety").
"""

from __future__ import annotations

from typing import Final

from ..definition._conditions import field
from ..definition._route_table import Route, RouteTable

__all__ = [
    "ERROR",
    "FINAL",
    "GENERATE_INDIVIDUAL_XMLS",
    "INITIAL",
    "MERGE_XML",
    "MODULE_STEPS_REVIEW",
    "PARAMETER_MAPPING",
    "PROGRAM_STEPS",
    "REVIEW_STATES",
    "TASK_LIST_REVIEW",
    "TASK_LIST_TO_MODULE_STEPS",
    "USER_INPUT_TO_TASK_LIST",
    "review_table",
    "route_after_initialize",
    "route_after_merge",
    "route_after_module_steps_review",
    "route_after_parameter_mapping",
    "route_after_sas_step2",
    "route_after_task_list",
    "route_after_task_list_review",
    "route_after_xml_generation",
]

INITIAL: Final = "initial"
USER_INPUT_TO_TASK_LIST: Final = "user_input_to_task_list"
TASK_LIST_REVIEW: Final = "sas_awaiting_task_list_review"
TASK_LIST_TO_MODULE_STEPS: Final = "task_list_to_module_steps"
MODULE_STEPS_REVIEW: Final = "sas_awaiting_module_steps_review"
GENERATE_INDIVIDUAL_XMLS: Final = "sas_generating_individual_xmls"
PARAMETER_MAPPING: Final = "parameter_mapping"
MERGE_XML: Final = "merge_xml"
FINAL: Final = "final_xml_generated_success"
ERROR: Final = "error"

#: dialog_state values in which a generated result waits for review (seed 000 and ours).
REVIEW_STATES: Final = (
    "sas_step1_tasks_generated",
    "sas_step2_module_steps_generated_for_review",
    TASK_LIST_REVIEW,
    MODULE_STEPS_REVIEW,
)


def review_table(name: str, review: str) -> RouteTable:
    """Seed 000 §2.1 ``route_after_sas_review_and_refine`` for the review gate ``review``.

    An error still standing keeps the thread at its review (the seed's END: wait for the
    user); then approvals (module steps before the task list, since approving steps implies
    the list was approved); then feedback loops named by dialog_state, and a retry of
    ``initial``; then waiting for the user; else review again, the seed's safe choice.
    """
    return RouteTable(
        name,
        [
            Route(field("is_error"), review),
            Route(field("module_steps_accepted"), GENERATE_INDIVIDUAL_XMLS),
            Route(field("task_list_accepted"), TASK_LIST_TO_MODULE_STEPS),
            Route(field("dialog_state").eq("user_input_to_task_list"), USER_INPUT_TO_TASK_LIST),
            Route(field("dialog_state").eq("task_list_to_module_steps"), TASK_LIST_TO_MODULE_STEPS),
            Route(field("dialog_state").eq(INITIAL), INITIAL),
            Route(
                field("dialog_state").is_in(["needs_clarification", "awaiting_user_input"]), review
            ),
            Route(
                field("dialog_state").is_in(REVIEW_STATES)
                & ~(field("task_list_accepted") & field("module_steps_accepted")),
                review,
            ),
        ],
        default=review,
    )


route_after_task_list_review = review_table("route_after_task_list_review", TASK_LIST_REVIEW)
route_after_module_steps_review = review_table(
    "route_after_module_steps_review", MODULE_STEPS_REVIEW
)

#: Seed 000 §2.2: after step 2. An error goes back to the review it came from (the steps'
#: when there are steps, else the task list's); finished generation goes to review; anything
#: unexpected stops the run (the seed's END "for safety" is our failed final state).
route_after_sas_step2 = RouteTable(
    "route_after_sas_step2",
    [
        Route(field("is_error") & field("sas_step2_module_steps"), MODULE_STEPS_REVIEW),
        Route(field("is_error"), TASK_LIST_REVIEW),
        Route(
            field("dialog_state").eq("sas_step2_module_steps_generated_for_review"),
            MODULE_STEPS_REVIEW,
        ),
    ],
    default=ERROR,
)

#: After initialize (SAS_FACTS §1): a thread that already has results resumes at their review;
#: one that could not be set up waits at the task-list review with the error, to be retried.
route_after_initialize = RouteTable(
    "route_after_initialize",
    [
        Route(field("is_error"), TASK_LIST_REVIEW),
        Route(field("sas_step1_generated_tasks") & ~field("task_list_accepted"), TASK_LIST_REVIEW),
        Route(
            field("sas_step2_module_steps")
            & field("task_list_accepted")
            & ~field("module_steps_accepted"),
            MODULE_STEPS_REVIEW,
        ),
    ],
    default=USER_INPUT_TO_TASK_LIST,
)


def _then(name: str, target: str, review: str) -> RouteTable:
    return RouteTable(name, [Route(field("is_error"), review)], default=target)


route_after_task_list = _then("route_after_task_list", TASK_LIST_REVIEW, TASK_LIST_REVIEW)
route_after_xml_generation = _then(
    "route_after_xml_generation", PARAMETER_MAPPING, MODULE_STEPS_REVIEW
)
route_after_parameter_mapping = _then(
    "route_after_parameter_mapping", MERGE_XML, MODULE_STEPS_REVIEW
)
route_after_merge = _then("route_after_merge", FINAL, MODULE_STEPS_REVIEW)

#: Steps 3-5: no LLM, milliseconds; a retry after any of them runs the three again.
PROGRAM_STEPS: Final = (GENERATE_INDIVIDUAL_XMLS, PARAMETER_MAPPING, MERGE_XML)
