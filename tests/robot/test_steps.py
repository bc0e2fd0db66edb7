"""The step model: exact JSON round trips, task assembly and the helpers the workflow uses."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import TypeAdapter, ValidationError

from flowkit.robot import Program, Step, TaskSteps, build_program, without_editor_attributes

from .strategies import STEPS, chains


@pytest.mark.slow
@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(chains())
def test_program_json_round_trip_is_exact(chain: list[Step]) -> None:
    program = Program(stacks=[chain])
    assert Program.from_json(program.to_json()) == program
    assert Program.from_json(program.to_json(indent=None)) == program
    assert Program.model_validate_json(program.model_dump_json()) == program


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=list(HealthCheck), deadline=None)
@given(STEPS)
def test_task_json_round_trip_is_exact(step: Step) -> None:
    tasks = [TaskSteps(task="T", kind="sub", steps=[step])]
    adapter = TypeAdapter(list[TaskSteps])
    assert adapter.validate_json(adapter.dump_json(tasks)) == tasks


def test_mutation_absent_false_and_empty_stay_distinct_in_json() -> None:
    steps = [
        Step(type="return"),
        Step(type="return", mutation=False),
        Step(type="return", mutation={}),
    ]
    data = json.loads(Program(stacks=[steps]).to_json())
    assert data["format_version"] == 1 and data["kind"] == "robot-program"
    assert data["stacks"][0] == [
        {"type": "return"},
        {"type": "return", "mutation": False},
        {"type": "return", "mutation": {}},
    ]
    assert [s.mutation for s in Program.from_json(json.dumps(data)).stacks[0]] == [None, False, {}]


def test_inputs_keep_order_and_kind() -> None:
    step = Step.model_validate_json(
        '{"type": "controls_if", "inputs": {"IF0": {"type": "logic_boolean"}, "DO0": [],'
        ' "IF1": {"type": "logic_boolean"}, "DO1": [{"type": "return"}], "ELSE": []}}'
    )
    assert list(step.inputs) == ["IF0", "DO0", "IF1", "DO1", "ELSE"]
    assert list(step.values) == ["IF0", "IF1"] and list(step.statements) == ["DO0", "DO1", "ELSE"]
    assert step.body("DO1")[0].type == "return" and step.body("missing") == []
    assert step.value("IF1") is not None and step.value("DO0") is None
    assert [s.type for s in step.walk()] == [
        "controls_if",
        "logic_boolean",
        "logic_boolean",
        "return",
    ]


def test_parameters_read_from_fields_or_mutation() -> None:
    call = Step(type="procedures_callnoreturn", mutation={"name": "Pick"})
    move = Step(type="moveP", fields={"point_name_list": 21, "control_x": "enable"})
    assert call.param("name") == "Pick" and call.field("name") is None
    assert move.field("point_name_list") == "21" and move.param("control_x") == "enable"


def test_build_program_places_main_subs_and_setup() -> None:
    thread = Step(type="start_thread", inputs={"condition": Step(type="logic_boolean"), "DO": []})
    event = Step(type="create_event", inputs={"EVENT": []})
    defined = Step(type="procedures_defnoreturn", inputs={"STACK": [Step(type="return")]})
    tasks = [
        TaskSteps(task="Setup", kind="setup", steps=[thread, event]),
        TaskSteps(task="Pick", kind="sub", steps=[Step(type="return")]),
        TaskSteps(task="Main", kind="main", steps=[Step(type="select_robot")]),
        TaskSteps(task="Place", kind="sub", steps=[defined]),
    ]
    program = build_program(tasks)
    assert [s[0].type for s in program.stacks] == [
        "select_robot",
        "procedures_defnoreturn",
        "procedures_defnoreturn",
        "start_thread",
        "create_event",
    ]
    assert list(program.procedures()) == ["Pick", "Place"]
    assert program.procedures()["Place"][0].type == "return"
    assert program.main() == [Step(type="select_robot")]


def test_editor_attributes_can_be_stripped() -> None:
    step = Step(
        type="loop",
        id="a",
        block_no=3,
        x=1,
        y=2,
        editable=False,
        attributes={"collapsed": "true"},
        inputs={"DO": [Step(type="return", id="b", block_no=1)]},
    )
    (bare,) = without_editor_attributes([step])
    assert bare == Step(type="loop", inputs={"DO": [Step(type="return")]})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "moveP", "fields": {"p": "a\x01"}}, r"U\+0001"),
        ({"type": "a b"}, "must match"),
        ({"type": "a", "fields": {"1x": "v"}}, "must match"),
        ({"type": "a", "attributes": {"id": "x"}}, "must not hold"),
        ({"type": "a", "disabled_reasons": ["X"]}, "disabled=true"),
        ({"type": "a", "id": ""}, "must not be empty"),
        ({"type": "a", "unknown": 1}, "unknown"),  # the key, by name
    ],
)
def test_invalid_steps_are_rejected_with_a_reason(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Step.model_validate(data)


def test_programs_and_tasks_reject_empty_parts() -> None:
    with pytest.raises(ValidationError, match="stack 1 is empty"):
        Program(stacks=[[]])
    with pytest.raises(ValidationError, match="task name must not be empty"):
        TaskSteps(task=" ", kind="main")
