"""The state of a sas run (seed 002 ``RobotFlowAgentState``), as flowkit state.

Field names follow the seeds so their routing tables read unchanged. Differences that fix the
origin's defects: the original request is kept and every piece of feedback is appended
(``feedback``), module steps are structured per task (``sas_step2_module_steps``), and
per-task failures are kept apart (``module_step_failures``) instead of failing the step.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ..definition._reducers import append
from ..robot.steps import Program, TaskSteps
from .tasks import TaskDefinition

__all__ = [
    "SEED000_STATE_NAMES",
    "Feedback",
    "GeneratedStepXml",
    "GeneratedXml",
    "SasConfig",
    "SasState",
]

#: Seed 000 names of this flow's states (``dialog_state``), for front ends keyed on them.
#: States seed 000 has no name for keep their own (``initial``, ``parameter_mapping`` ...).
SEED000_STATE_NAMES: dict[str, str] = {
    "user_input_to_task_list": "sas_step1_tasks_generation",
    "sas_awaiting_task_list_review": "sas_step1_tasks_generated",
    "task_list_to_module_steps": "sas_step2_module_steps_generation",
    "sas_awaiting_module_steps_review": "sas_step2_module_steps_generated_for_review",
    "sas_generating_individual_xmls": "sas_all_steps_accepted_proceed_to_xml",
}


class SasConfig(BaseModel):
    """Per-run settings, given at start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_dir: str | None = Field(default=None, description="Where to write; created if missing")
    base_output_dir: str | None = Field(
        default=None, description="Parent of run_<timestamp> folders when output_dir is unusable"
    )
    teaching_file: str | None = Field(default=None, description="teaching.yaml to map points onto")
    catalog_file: str | None = Field(default=None, description="Extra block catalog (JSON)")
    robot: str | None = Field(default=None, description="Robot name for select_robot")
    llm: str | None = Field(
        default=None,
        description="The LLM spec the CLI started with; later commands without --llm use it",
    )
    max_parallel: int = Field(default=4, ge=1, le=32, description="Concurrent step-2 LLM calls")
    task_attempts: int = Field(default=2, ge=1, le=5, description="Tries per task in step 2")


class Feedback(BaseModel):
    """One piece of reviewer feedback; ``task`` targets one task's module steps."""

    model_config = ConfigDict(frozen=True)

    stage: Literal["tasks", "steps"]
    text: str
    task: str | None = None


class GeneratedStepXml(BaseModel):
    """One step's block, written on its own (seed 002's ``GeneratedXmlFile``)."""

    model_config = ConfigDict(frozen=True)

    step: str = Field(description="Its number as in the text form: 4.1 = first in step 4's body")
    block_id: str | None = Field(description="The block's id in the task file and flow.xml")
    type: str = Field(description="Block type, e.g. moveL")
    source_description: str | None = Field(description="The sentence the step came from")
    path: str = Field(description="The file written")
    status: Literal["success", "failure"] = "success"
    error_message: str | None = None


class GeneratedXml(BaseModel):
    """One task's compiled stack, written on its own before the merge, and its steps' files."""

    model_config = ConfigDict(frozen=True)

    task: str
    path: str
    status: Literal["success", "failure"] = "success"
    error_message: str | None = None
    steps: list[GeneratedStepXml] = []


class SasState(BaseModel):
    """Everything a sas thread knows; persisted after every step."""

    dialog_state: str = "initial"
    messages: Annotated[list[str], append] = []
    user_input: str = ""
    current_user_request: str = ""
    feedback: Annotated[list[Feedback], append] = []
    feedback_seen: int = 0
    config: SasConfig = SasConfig()
    run_output_directory: str | None = None

    sas_step1_generated_tasks: list[TaskDefinition] = []
    task_list_accepted: bool = False
    sas_step2_module_steps: dict[str, TaskSteps] = {}
    module_step_failures: dict[str, str] = {}
    module_steps_accepted: bool = False
    regenerate_tasks: list[str] = []
    revision_iteration: int = 0

    generated_node_xmls: list[GeneratedXml] = []
    mapped_program: Program | None = None
    sas_step3_mapping_report: str | None = None
    final_flow_xml_path: str | None = None

    is_error: bool = False
    error_message: str | None = None
    #: The step that set ``is_error``; a retry at the review gate runs it again.
    failed_step: str | None = None
    current_step_description: str = ""
    completion_status: str | None = None
    clarification_question: str | None = None
    warnings: Annotated[list[str], append] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def seed000_state(self) -> str:
        """``dialog_state`` under seed 000's name (``sas_step1_tasks_generated`` for the
        task-list review ...): in every dump of the state, so a UI written against seed 000
        reads it without a table of its own. Derived, never stored apart from ``dialog_state``."""
        return SEED000_STATE_NAMES.get(self.dialog_state, self.dialog_state)
