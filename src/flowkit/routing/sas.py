"""Route tables of the robot-flow (sas) workflow, as data.

These reproduce the ``route_after_*`` functions of seed 000 §2 rule for rule, in the same
order, so each branch can be tested in isolation with ``table.resolve(state)``. Targets are
the node names of the workflow; ``END`` means "stop and wait for the front end".
"""

from __future__ import annotations

from typing import Final

from .._conditions import field
from .._route_table import END, Route, RouteTable

__all__ = [
    "GENERATE_INDIVIDUAL_XMLS",
    "REVIEW_STATES",
    "SAS_REVIEW_AND_REFINE",
    "SAS_TASK_LIST_TO_MODULE_STEPS",
    "SAS_USER_INPUT_TO_TASK_LIST",
    "route_after_sas_review_and_refine",
    "route_after_sas_step2",
]

SAS_USER_INPUT_TO_TASK_LIST: Final = "sas_user_input_to_task_list"
SAS_REVIEW_AND_REFINE: Final = "sas_review_and_refine"
SAS_TASK_LIST_TO_MODULE_STEPS: Final = "sas_task_list_to_module_steps"
GENERATE_INDIVIDUAL_XMLS: Final = "generate_individual_xmls"

#: dialog_state values in which a generated result waits for the user's review.
REVIEW_STATES: Final = ("sas_step1_tasks_generated", "sas_step2_module_steps_generated_for_review")

#: Seed 000 §2.1: after the review-and-refine node. Errors end the run first; then approvals
#: (module steps before the task list, since approving steps implies the list was approved);
#: then feedback loops named by dialog_state; then waiting for the user; else review again.
route_after_sas_review_and_refine = RouteTable(
    "route_after_sas_review_and_refine",
    [
        Route(field("is_error"), END),
        Route(field("module_steps_accepted"), GENERATE_INDIVIDUAL_XMLS),
        Route(field("task_list_accepted"), SAS_TASK_LIST_TO_MODULE_STEPS),
        Route(field("dialog_state").eq("user_input_to_task_list"), SAS_USER_INPUT_TO_TASK_LIST),
        Route(field("dialog_state").eq("task_list_to_module_steps"), SAS_TASK_LIST_TO_MODULE_STEPS),
        Route(field("dialog_state").is_in(["needs_clarification", "awaiting_user_input"]), END),
        Route(
            field("dialog_state").is_in(REVIEW_STATES)
            & ~(field("task_list_accepted") & field("module_steps_accepted")),
            SAS_REVIEW_AND_REFINE,
        ),
    ],
    # Seed: an unexpected state goes back to review, the safe choice.
    default=SAS_REVIEW_AND_REFINE,
)

#: Seed 000 §2.2: after step 2 (module steps). Errors end; a finished generation goes to
#: review; anything unexpected ends the run for safety.
route_after_sas_step2 = RouteTable(
    "route_after_sas_step2",
    [
        Route(field("is_error"), END),
        Route(
            field("dialog_state").eq("sas_step2_module_steps_generated_for_review"),
            SAS_REVIEW_AND_REFINE,
        ),
    ],
    default=END,
)
