"""The text form: readable, writable by hand, and parse(render(x)) == x."""

from __future__ import annotations

from textwrap import dedent

import pytest
from hypothesis import HealthCheck, given, settings

from flowkit.errors import StepTextError
from flowkit.robot import Program, Step, TaskSteps
from flowkit.robot.text import (
    parse,
    parse_program,
    parse_tasks,
    render,
    render_program,
    render_tasks,
)

from .strategies import chains

TRUE = Step(type="logic_boolean", fields={"BOOL": "TRUE"})


def _robot_io(pin: str) -> Step:
    return Step(type="robot_io", fields={"input_pin_name": pin})


def _compare(op: str, a: Step, b: Step) -> Step:
    return Step(type="logic_compare", fields={"OP": op}, inputs={"A": a, "B": b})


N5_IS_2 = _compare(
    "EQ",
    Step(type="math_custom_number", fields={"name": "N5"}),
    Step(type="math_number", fields={"NUM": "2"}),
)
MAIN = [
    Step(type="select_robot", fields={"robotName": "dobot_mg400"}, mutation={"timeout": "600000"}),
    Step(type="set_motor", fields={"state_list": "on"}),
    Step(
        type="set_number",
        fields={"name": "N5"},
        inputs={"right_hand_side": Step(type="math_number", fields={"NUM": "2"})},
    ),
    Step(
        type="loop",
        inputs={
            "DO": [
                Step(
                    type="controls_if",
                    inputs={
                        "IF0": N5_IS_2,
                        "DO0": [
                            Step(
                                type="moveP",
                                fields={"point_name_list": "P21", "control_rx": "disable"},
                                source="move above the bearing",
                            ),
                            Step(
                                type="wait_external_io_input",
                                fields={"io_no": "1", "input_pin_name": "0"},
                                disabled=True,
                            ),
                            Step(
                                type="procedures_callnoreturn", mutation={"name": "RMC_Put_BH&BRG"}
                            ),
                            Step(
                                type="wait_block",
                                inputs={
                                    "condition": Step(
                                        type="logic_operation",
                                        fields={"OP": "OR"},
                                        inputs={
                                            "A": _compare("EQ", _robot_io("10"), TRUE),
                                            "B": _robot_io("11"),
                                        },
                                    )
                                },
                            ),
                        ],
                        "ELSE": [
                            Step(
                                type="set_output",
                                fields={"output_pin_name": "6", "out_state": "off"},
                            )
                        ],
                    },
                ),
                Step(type="return"),
            ]
        },
    ),
]
MAIN_TEXT = """\
1. select_robot dobot_mg400 [timeout=600000]
2. set_motor on
3. set_number N5 = 2
4. loop:
   4.1 if N5 == 2:
         4.1.1 moveP P21 rx=disable — "move above the bearing"
         4.1.2 (disabled) wait_external_io_input io=1 pin=0
         4.1.3 procedures_callnoreturn RMC_Put_BH&BRG
         4.1.4 wait_block until robot_io 10 == TRUE or robot_io 11
       else:
         4.1.5 set_output 6 off
   4.2 return
"""


def test_render_is_numbered_indented_and_shows_every_parameter() -> None:
    assert render(MAIN) == MAIN_TEXT
    assert parse(MAIN_TEXT) == MAIN


def test_a_person_can_write_it_loosely() -> None:
    text = """
    # comments and blank lines are ignored; numbers are labels, indentation is structure
    - select_robot dobot_mg400 [timeout=600000]
    - set_motor on
    - set_number N5 = 2

    - loop:
        7. if N5 == 2:
             1. moveP point=P21 control_rx=disable   --   "move above the bearing"
             1. (disabled) wait_external_io_input io=1 input_pin_name=0
             1. procedures_callnoreturn "RMC_Put_BH&BRG"
             1. wait_block until (robot_io 10 == TRUE) or robot_io 11
           else:
             1. set_output 6 off
        8. return
    """
    assert parse(dedent(text)) == MAIN


def test_axes_group_and_defaults_stay_out_unless_given() -> None:
    move = Step(
        type="moveP",
        fields={
            "point_name_list": "P1",
            "control_x": "enable",
            "control_y": "enable",
            "control_z": "disable",
            "control_rz": "disable",
            "pallet_list": "none",
        },
    )
    assert render([move]) == "1. moveP P1 x,y=enable z,rz=disable pallet=none\n"
    assert parse("1. moveP P1") == [Step(type="moveP", fields={"point_name_list": "P1"})]


def test_conditions_keep_their_exact_tree() -> None:
    a, b, c = _robot_io("1"), _robot_io("2"), _robot_io("3")
    right = Step(
        type="logic_operation",
        fields={"OP": "AND"},
        inputs={
            "A": a,
            "B": Step(type="logic_operation", fields={"OP": "AND"}, inputs={"A": b, "B": c}),
        },
    )
    negated = Step(type="logic_negate", inputs={"BOOL": _compare("NEQ", a, b)})
    step = Step(type="controls_if", inputs={"IF0": right, "DO0": [], "IF1": negated, "DO1": []})
    text = render([step])
    assert text == (
        "1. if robot_io 1 and (robot_io 2 and robot_io 3):\n   elif not robot_io 1 != robot_io 2:\n"
    )
    assert parse(text) == [step]


def test_unusual_blocks_use_the_explicit_form() -> None:
    odd = Step(
        type="controls_if",
        fields={"X": "1"},
        mutation={"else": "0", "elseif": "0"},
        inputs={
            "IF0": Step(
                type="logic_block",
                mutation={"timeout": "30000"},
                fields={"block_type": "moveP", "block_no": "1", "block_status": "stop"},
            ),
            "DO0": [Step(type="return")],
        },
    )
    text = render([odd])
    assert text == (
        "1. controls_if X=1 [else=0 elseif=0]:\n"
        "   IF0 = logic_block(moveP 1 stop [timeout=30000])\n"
        "   DO0:\n"
        "     1.1 return\n"
    )
    assert parse(text) == [odd]


def test_tasks_and_programs_have_sections() -> None:
    tasks = [
        TaskSteps(task="Main_Task", kind="main", steps=MAIN[:2]),
        TaskSteps(
            task="Open BRG clamp",
            kind="sub",
            steps=[Step(type="wait_timer", fields={"name": "N482"})],
        ),
    ]
    text = render_tasks(tasks)
    assert text.startswith("## main Main_Task\n1. select_robot")
    assert '## sub "Open BRG clamp"\n1. wait_timer N482\n' in text
    assert parse_tasks(text) == tasks
    program = Program(stacks=[MAIN[:1], [Step(type="create_event", inputs={"EVENT": []})]])
    assert parse_program(render_program(program)) == program


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(chains())
def test_parse_of_render_is_the_identity(chain: list[Step]) -> None:
    assert parse(render(chain)) == chain


ERRORS = {
    "missing value": ("1. moveP P1 x=", 1, "expected a value for `x`"),
    "bad condition": ("1. select_robot r\n2. if N5 == :\n   2.1 return", 2, "expected a condition"),
    "unclosed quote": ('1. select_robot "abc', 1, "not closed"),
    "indent without colon": ("1. loop\n   1.1 return", 2, "end that line with `:`"),
    "misaligned step": ("1. loop:\n     1.1 return\n   1.2 return", 3, "indented differently"),
    "if without colon": ("1. if TRUE", 1, "ends with `:`"),
    "elif outside if": ("1. loop:\n   elif TRUE:", 2, "expected a step"),
    "too many values": ("1. moveP P1 P2", 1, "name it like key=value"),
    "tab": ("1. loop:\n\t1.1 return", 2, "spaces, not tabs"),
    "bad header": ("## task X\n1. return", 1, "## main NAME"),
    "sections in parse": ("## main A\n1. return", 1, "parse_tasks"),
    "mutation twice": ("1. return [] [-]", 1, "given twice"),
    "no body name": ("1. wait_block:\n   1.1 return", 1, "has no single body"),
    "no type": ("1. (disabled)", 1, "expected a block type"),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_parse_errors_name_the_line_and_what_is_expected(case: str) -> None:
    text, line, expected = ERRORS[case]
    with pytest.raises(StepTextError) as caught:
        parse(text)
    assert caught.value.line == line
    assert expected in str(caught.value)
    assert str(caught.value).startswith(f"line {line}: ")
