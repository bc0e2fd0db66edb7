"""The sas workflow's recovery policy: seed 000 §3 as data, on this flow's states.

Rules (§3.1): the engine's own (a node that started and never finished; a run that stopped
between nodes), then the seed's three heuristics: an XML-generation state with no step
description or stalled too long; a message list that is empty or holds only the request
where work should have happened; an advanced state with fewer than 3 messages. Strategies
(§3.2), chosen by the state the thread stands in: XML generation completes only if the robot
program really exists (else back to module-step review); step 1, step 2 and per-task XML
generation go back to their last stable state; anything else is reset fully.

A thread whose step failed (``is_error``: it waits at a review gate with the error, or an
older thread that ended in ``error``) is never healthy: rule ``step_failed`` reports it, and
the plan is the retry ``flowkit sas retry`` would do: back to the failed step (steps 3-5 from
step 3), error cleared; an old ``error`` thread names no failed step and is reset fully.

Seed 000's states map onto this flow's as in ``flowkit.routing.sas``; the seed's
``generating_xml_relation`` / ``generating_xml_final`` are ``parameter_mapping`` /
``merge_xml``, and its ``subgraph_completion_status`` is ``completion_status``.
"""

from __future__ import annotations

from typing import Any, Final

from ..definition._conditions import field
from ..routing.sas import (
    ERROR,
    FINAL,
    GENERATE_INDIVIDUAL_XMLS,
    INITIAL,
    MERGE_XML,
    MODULE_STEPS_REVIEW,
    PARAMETER_MAPPING,
    PROGRAM_STEPS,
    TASK_LIST_REVIEW,
    TASK_LIST_TO_MODULE_STEPS,
    USER_INPUT_TO_TASK_LIST,
)
from ..runtime.policy import (
    DEFAULT_POLICY,
    DetectionRule,
    RecoveryPolicy,
    StrategyRoute,
    number,
    size,
)
from ..runtime.strategies import BackToStable, Complete, Reset

__all__ = ["ADVANCED_STATES", "STALLED_AFTER_S", "XML_STATES", "policy"]

#: Seed ``generating_xml_relation`` / ``generating_xml_final``: the whole-program XML steps.
XML_STATES: Final = (PARAMETER_MAPPING, MERGE_XML)
#: Seed ``advanced_states``: module steps generated for review, XML phase, finished.
ADVANCED_STATES: Final = (MODULE_STEPS_REVIEW, GENERATE_INDIVIDUAL_XMLS, FINAL)
#: How long a thread may sit pending in an XML state (the seed's "long stop", left open there).
STALLED_AFTER_S: Final = 300.0

_pending_in_xml = field("status").eq("pending") & field("node").is_in(XML_STATES)


def _cleared(description: str) -> dict[str, Any]:
    """The seed's common reset items: no error, and a step description saying what happened."""
    return {"is_error": False, "error_message": None, "current_step_description": description}


#: Seed strategy 2, third branch: back to module-step review, approval withdrawn.
_TO_MODULE_STEPS_REVIEW = BackToStable(
    goto=MODULE_STEPS_REVIEW,
    values={
        "module_steps_accepted": False,
        **_cleared("recovered: XML generation stopped; review the module steps again"),
    },
)


def _retry(step: str, goto: str, **values: Any) -> StrategyRoute:
    """A thread that came back to review because ``step`` failed: run ``goto`` again."""
    return StrategyRoute(
        field("state.is_error") & field("state.failed_step").eq(step),
        BackToStable(
            goto=goto,
            values={**values, "failed_step": None, **_cleared(f"recovered: retrying {step}")},
        ),
    )


policy = RecoveryPolicy(
    name="sas",
    description="Stuck-thread detection and recovery for the robot-flow workflow",
    rules=(
        *DEFAULT_POLICY.rules,
        DetectionRule(
            "step_failed",
            field("state.is_error") | field("node").eq(ERROR),
            "a step failed; the thread stands at `{node}` until the step is retried "
            "(flowkit sas retry {thread_id}) or the reviewer answers",
        ),
        DetectionRule(
            "xml_state_without_description",
            _pending_in_xml & ~field("state.current_step_description"),
            "XML generation state `{node}` has an empty step description",
        ),
        DetectionRule(
            "xml_state_stalled",
            _pending_in_xml & number("in_state_s").gt(STALLED_AFTER_S),
            "in XML generation state `{node}` for {in_state_s:.0f} s without progress",
        ),
        DetectionRule(
            "no_messages",
            size("state.messages").eq(0) & ~field("node").is_in([INITIAL, ERROR]),
            "the message list is empty in `{node}`",
        ),
        DetectionRule(
            "only_initial_message",
            size("state.messages").eq(1)
            & ~field("node").is_in([INITIAL, USER_INPUT_TO_TASK_LIST, ERROR]),
            "only the initial message in `{node}`: processing has not progressed",
        ),
        DetectionRule(
            "advanced_state_few_messages",
            field("node").is_in(ADVANCED_STATES) & size("state.messages").lt(3),
            "advanced state `{node}` with only {messages} message(s)",
        ),
    ),
    strategies=(
        # A failed step is retried, as `flowkit sas retry` would (an older thread that ended
        # in `error` names no failed step: it is reset, strategy 3).
        _retry(INITIAL, INITIAL, task_list_accepted=False, module_steps_accepted=False),
        _retry(
            USER_INPUT_TO_TASK_LIST,
            USER_INPUT_TO_TASK_LIST,
            task_list_accepted=False,
            module_steps_accepted=False,
        ),
        _retry(TASK_LIST_TO_MODULE_STEPS, TASK_LIST_TO_MODULE_STEPS, module_steps_accepted=False),
        *(
            _retry(step, GENERATE_INDIVIDUAL_XMLS, module_steps_accepted=True)
            for step in PROGRAM_STEPS
        ),
        # Strategy 1: only a program that exists and was written in this state completes.
        StrategyRoute(
            field("node").is_in(XML_STATES),
            Complete(
                goto=FINAL,
                output="final_flow_xml_path",
                candidates=("{run_output_directory}/flow.xml",),
                values={
                    "completion_status": "completed_success",
                    **_cleared("recovered: the robot program had been written"),
                },
                otherwise=_TO_MODULE_STEPS_REVIEW,
            ),
        ),
        # Strategy 2: back to the stable state before the step that stopped.
        StrategyRoute(
            field("node").eq(USER_INPUT_TO_TASK_LIST),
            BackToStable(
                goto=INITIAL,
                values={
                    "task_list_accepted": False,
                    **_cleared("recovered: task list generation stopped; starting over"),
                },
                reset=("sas_step1_generated_tasks",),
            ),
        ),
        StrategyRoute(
            field("node").eq(TASK_LIST_TO_MODULE_STEPS),
            BackToStable(
                goto=TASK_LIST_REVIEW,
                values={
                    "module_steps_accepted": False,
                    **_cleared("recovered: module step generation stopped; review the tasks"),
                },
                reset=("sas_step2_module_steps",),
            ),
        ),
        StrategyRoute(field("node").eq(GENERATE_INDIVIDUAL_XMLS), _TO_MODULE_STEPS_REVIEW),
    ),
    # Strategy 3: a severe inconsistency; the seed's fields, plus the outputs this flow keeps.
    default=Reset(
        goto=INITIAL,
        values={
            "task_list_accepted": False,
            "module_steps_accepted": False,
            "revision_iteration": 0,
            **_cleared("recovered by a full reset after an inconsistent state"),
        },
        reset=(
            "completion_status",
            "sas_step1_generated_tasks",
            "sas_step2_module_steps",
            "clarification_question",
            "module_step_failures",
            "regenerate_tasks",
            "generated_node_xmls",
            "mapped_program",
            "sas_step3_mapping_report",
            "final_flow_xml_path",
        ),
    ),
)
