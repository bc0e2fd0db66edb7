"""The sas flow: seed 002's states wired with seed 000's route tables on the flowkit engine.

``initial`` -> ``user_input_to_task_list`` -> gate ``sas_awaiting_task_list_review`` ->
``task_list_to_module_steps`` -> gate ``sas_awaiting_module_steps_review`` ->
``sas_generating_individual_xmls`` -> ``parameter_mapping`` -> ``merge_xml`` ->
``final_xml_generated_success``. A step that fails goes back to the review gate it came from
with ``is_error`` / ``error_message`` / ``failed_step`` set, where ``retry`` runs it again.
"""

from __future__ import annotations

from ..definition._flow import Flow
from ..definition._gate import Gate
from ..nodes.sas.initialize import initialize
from ..nodes.sas.module_steps import task_list_to_module_steps
from ..nodes.sas.program import generate_individual_xmls, merge_xml, parameter_mapping
from ..nodes.sas.review import ReviewInput, review_module_steps, review_task_list
from ..nodes.sas.task_list import user_input_to_task_list
from ..routing import sas as routes
from .state import SasState

__all__ = ["CHANGE_CLASSES", "build_flow", "flow"]

#: Seed 000 §4.1: which changed fields a front end must react to, and how urgently.
CHANGE_CLASSES = {
    "critical": ["clarification_question", "dialog_state", "completion_status"],
    "progress": ["sas_step1_generated_tasks", "sas_step2_module_steps", "current_step_description"],
    "approval": ["task_list_accepted", "module_steps_accepted"],
}


def build_flow() -> Flow:
    return Flow(
        name="sas",
        description="Robot task in natural language -> reviewed plan -> validated Blockly program",
        state=SasState,
        start=routes.INITIAL,
        nodes={
            routes.INITIAL: initialize,
            routes.USER_INPUT_TO_TASK_LIST: user_input_to_task_list,
            routes.TASK_LIST_TO_MODULE_STEPS: task_list_to_module_steps,
            routes.GENERATE_INDIVIDUAL_XMLS: generate_individual_xmls,
            routes.PARAMETER_MAPPING: parameter_mapping,
            routes.MERGE_XML: merge_xml,
        },
        gates={
            routes.TASK_LIST_REVIEW: Gate(
                ReviewInput, apply=review_task_list, description="review the task list"
            ),
            routes.MODULE_STEPS_REVIEW: Gate(
                ReviewInput, apply=review_module_steps, description="review the module steps"
            ),
        },
        finals={routes.FINAL: "done", routes.ERROR: "failed"},
        routes={
            routes.INITIAL: routes.route_after_initialize,
            routes.USER_INPUT_TO_TASK_LIST: routes.route_after_task_list,
            routes.TASK_LIST_REVIEW: routes.route_after_task_list_review,
            routes.TASK_LIST_TO_MODULE_STEPS: routes.route_after_sas_step2,
            routes.MODULE_STEPS_REVIEW: routes.route_after_module_steps_review,
            routes.GENERATE_INDIVIDUAL_XMLS: routes.route_after_xml_generation,
            routes.PARAMETER_MAPPING: routes.route_after_parameter_mapping,
            routes.MERGE_XML: routes.route_after_merge,
        },
        change_classes=CHANGE_CLASSES,
    )


flow = build_flow()
