"""Validation accepts our programs and every hand-written one of the reference corpus, and
names broken programs' problems by line."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from flowkit.robot import (
    Step,
    TaskSteps,
    errors_only,
    validate_steps,
    validate_task,
    validate_xml,
)

from .conftest import (
    HAND_WRITTEN,
    OWN_PROGRAMS,
    own_program,
    reference_file,
    reference_params,
)

HEAD = '<xml xmlns="https://developers.google.com/blockly/xml">'


def _doc(body: str) -> str:
    return HEAD + "\n" + dedent(body).strip("\n") + "\n</xml>"


def _codes_by_line(xml: str) -> list[tuple[str, int | None]]:
    return [(p.code, p.line) for p in errors_only(validate_xml(xml))]


MOVE_FIELDS = "<field name='point_name_list'>P1</field>"


def _only_editor_only_warnings(path: Path) -> None:
    problems = validate_xml(path)
    assert errors_only(problems) == []
    # Warnings are allowed only for the types the editor has but the template set lacks.
    assert {p.code for p in problems} <= {"editor_only_block"}


@pytest.mark.parametrize("relative", OWN_PROGRAMS)
def test_every_own_program_is_valid(relative: str) -> None:
    _only_editor_only_warnings(own_program(relative))


def test_editor_only_types_are_warnings_with_lines() -> None:
    # guarded_cycle uses each of the eight types the editor has and the template set lacks.
    problems = validate_xml(own_program("guarded_cycle/flow.xml"))
    assert [(p.block_type, p.line) for p in problems] == [
        ("wait_ready", 6),
        ("wait_run", 13),
        ("robot_position", 22),
        ("logic_negate", 48),
        ("set_external_io_output", 57),
        ("logic_block", 85),
        ("logic_block", 93),
        ("set_output_during", 103),
        ("raise_error_upon", 123),
    ]
    assert all(p.code == "editor_only_block" and p.severity == "warning" for p in problems)
    assert all("known to the editor, not in the template set" in p.message for p in problems)
    assert str(problems[0]).startswith("line 6, stack 1, step 2, <wait_ready id='gc-ready-b2'>")


@pytest.mark.parametrize("relative", reference_params(HAND_WRITTEN))
def test_every_hand_written_program_is_valid(relative: str) -> None:
    _only_editor_only_warnings(reference_file(relative))


def test_editor_only_types_in_a_hand_written_program_are_warnings_with_lines() -> None:
    problems = validate_xml(reference_file("node_database/program/program1/flow.xml"))
    assert {(p.block_type, p.line) for p in problems} >= {("wait_ready", 6), ("wait_run", 13)}
    assert all("known to the editor, not in the template set" in p.message for p in problems)


CASES = {
    "unknown_type": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next>
            <block type="moveX" id="b"/>
          </next>
        </block>
        """,
        [("unknown_block_type", 4)],
    ),
    "loop_with_next": (
        f"""
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next><block type="loop" id="b">
            <statement name="DO"><block type="return" id="c"/></statement>
            <next>
              <block type="moveP" id="d">{MOVE_FIELDS}</block>
            </next>
          </block></next>
        </block>
        """,
        [("loop_with_next", 6)],
    ),
    "undefined_procedure": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next>
            <block type="procedures_callnoreturn" id="b"><mutation name="Nope"/></block>
          </next>
        </block>
        <block type="procedures_defnoreturn" id="c" x="200" y="0">
          <field name="NAME">Other</field>
          <statement name="STACK"><block type="return" id="d"/></statement>
        </block>
        """,
        [("undefined_procedure", 4)],
    ),
    "bad_values": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next><block type="set_speed" id="b"><field name="speed">150</field>
            <next>
              <block type="moveP" id="c"><field name="point_name_list">P999</field>
                <field name="pallet_list">11</field></block>
            </next>
          </block></next>
        </block>
        """,
        [("bad_field_value", 3), ("bad_field_value", 5), ("bad_field_value", 5)],
    ),
    "duplicate_id": (
        """
        <block type="select_robot" id="same" x="0" y="0"><field name="robotName">r</field>
          <next><block type="set_motor" id="same"/></next>
        </block>
        """,
        [("duplicate_id", 2)],
    ),
    "value_block_as_statement": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next>
            <block type="logic_boolean" id="b"><field name="BOOL">TRUE</field></block>
          </next>
        </block>
        """,
        [("value_block_as_statement", 4)],
    ),
    "event_and_hat_misplaced": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next>
            <block type="stop_robot_upon" id="b">
              <value name="condition"><block type="robot_io" id="c">
                <field name="input_pin_name">1</field></block></value>
              <next>
                <block type="create_event" id="d"><statement name="EVENT"/></block>
              </next>
            </block>
          </next>
        </block>
        """,
        [
            ("event_outside_create_event", 4),
            ("hat_not_top_level", 8),
            ("missing_body", 8),
        ],
    ),
    "placeholder_free_condition": (
        """
        <block type="select_robot" id="a" x="0" y="0"><field name="robotName">r</field>
          <next><block type="wait_block" id="b"/></next>
        </block>
        """,
        [("missing_input", 3)],
    ),
    "schema_order": (
        f"""
        <block type="select_robot" id="a" x="0" y="0">
          <next><block type="moveP" id="b">{MOVE_FIELDS}</block></next>
          <field name="robotName">r</field>
        </block>
        """,
        [("xsd", 4)],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_broken_program_is_rejected_with_line_numbers(case: str) -> None:
    body, expected = CASES[case]
    assert sorted(_codes_by_line(_doc(body)), key=str) == sorted(expected, key=str)


def test_messages_say_what_to_do() -> None:
    body, _ = CASES["loop_with_next"]
    (problem,) = errors_only(validate_xml(_doc(body)))
    assert "move `moveP` into its body or before it" in problem.message
    assert str(problem).startswith("line 6, stack 1, step 3, <moveP id='d'>: error")


def test_not_well_formed_and_wrong_root_are_problems_not_crashes() -> None:
    assert _codes_by_line(HEAD + "\n<block type='a'>\n</xml>") == [("xml_syntax", 3)]
    assert _codes_by_line("<program/>") == [("bad_root", 1)]


def test_steps_validation_names_task_and_step() -> None:
    main = TaskSteps(
        task="Main",
        kind="main",
        steps=[
            Step(type="select_robot", fields={"robotName": "r"}),
            Step(
                type="loop",
                inputs={
                    "DO": [
                        Step(
                            type="controls_if",
                            inputs={
                                "IF0": Step(type="logic_boolean", fields={"BOOL": "TRUE"}),
                                "DO0": [Step(type="moveP", fields={"point_name_list": "home"})],
                            },
                        ),
                        Step(type="procedures_callnoreturn", mutation={"name": "Pick"}),
                    ]
                },
            ),
        ],
    )
    pick = TaskSteps(task="Pick", kind="sub", steps=[Step(type="set_output")])
    found = [(p.task, p.step, p.code) for p in validate_steps([main, pick])]
    assert found == [
        ("Main", "2.1.1", "bad_field_value"),
        ("Pick", "1", "missing_field"),
    ]


def test_task_list_rules() -> None:
    tasks = [
        TaskSteps(task="A", kind="main", steps=[Step(type="set_motor")]),
        TaskSteps(task="A", kind="sub", steps=[]),
    ]
    codes = {p.code for p in validate_steps(tasks)}
    assert {"main_without_select_robot", "duplicate_task", "empty_task"} <= codes
    no_main = [TaskSteps(task="B", kind="sub", steps=[Step(type="set_motor")])]
    assert "main_task_count" in {p.code for p in validate_steps(no_main)}


def test_one_task_is_checked_on_its_own() -> None:
    pick = TaskSteps(
        task="Pick",
        kind="sub",
        steps=[
            Step(type="procedures_callnoreturn", mutation={"name": "Open"}),
            Step(type="moveP", fields={"point_name_list": "P0"}),
        ],
    )
    found = [(p.task, p.step, p.code) for p in validate_task(pick, procedures=["Open"])]
    assert found == [("Pick", "2", "bad_field_value")]
    assert "undefined_procedure" in {p.code for p in validate_task(pick)}
    main = TaskSteps(task="Main", kind="main", steps=[Step(type="set_motor")])
    assert [p.code for p in errors_only(validate_task(main))] == ["main_without_select_robot"]
