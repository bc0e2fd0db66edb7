"""The bearing / housing / pallet assembly cell (SAS_FACTS.md §10) as structured module steps.

Module steps as the sas workflow produces them: a main task whose loop wraps an ``if`` around
the whole cycle, thirteen sub-programs (pick, place and clamp tasks) and the setup stacks
(external I/O thread, event rules). Names, points and pins follow the hand-written
``flows/flow_database/SwingArm20250510/flow.xml`` of the reference corpus; the repository's own
editor document of the cell is ``fixtures/programs/swing_arm_cell/flow.xml``. Each step keeps
the sentence it came from.
Reused by the demo recording of the sas workflow.
"""

from __future__ import annotations

from flowkit.robot import Program, Step, TaskSteps, build_program

__all__ = ["SWINGARM_TASKS", "structure", "swingarm_program"]


def _move(point: str, source: str) -> Step:
    return Step(type="moveP", fields={"point_name_list": point}, source=source)


def _call(name: str, source: str) -> Step:
    return Step(type="procedures_callnoreturn", mutation={"name": name}, source=source)


def _speed(percent: int, source: str) -> Step:
    return Step(type="set_speed", fields={"speed": str(percent)}, source=source)


def _output(pin: str, state: str, source: str) -> Step:
    return Step(
        type="set_output", fields={"output_pin_name": pin, "out_state": state}, source=source
    )


def _wait_input(pin: str, state: str, source: str) -> Step:
    return Step(
        type="wait_input", fields={"input_pin_name": pin, "input_state": state}, source=source
    )


def _is_true(block: Step) -> Step:
    true = Step(type="logic_boolean", fields={"BOOL": "TRUE"})
    return Step(type="logic_compare", fields={"OP": "EQ"}, inputs={"A": block, "B": true})


def _both(op: str, a: Step, b: Step) -> Step:
    return Step(type="logic_operation", fields={"OP": op}, inputs={"A": a, "B": b})


def _external(pin: str) -> Step:
    return Step(type="external_io", fields={"io_no": "1", "input_pin_name": pin})


def _robot_input(pin: str) -> Step:
    return Step(type="robot_io", fields={"input_pin_name": pin})


def _clamp(name: str, timer: str, pin: str, state: str, check_pin: str) -> TaskSteps:
    action = "open" if state == "on" else "close"
    return TaskSteps(
        task=name,
        kind="sub",
        steps=[
            Step(type="wait_timer", fields={"name": timer}, source=f"wait {timer} before acting"),
            _output(pin, state, f"{action} the clamp with output {pin}"),
            _wait_input(check_pin, "on", f"wait until input {check_pin} confirms the clamp"),
        ],
    )


def _flag_rule(pin: str, state: str, flag: str) -> Step:
    return Step(
        type="set_external_io_output_upon",
        fields={
            "io_no": "1",
            "output_pin_name": pin,
            "out_state": state,
            "trigger_condition": "steady",
        },
        inputs={"condition": Step(type="logic_custom_flag", fields={"name": flag})},
        source=f"while flag {flag} is set, switch external output {pin} {state}",
    )


SETUP = TaskSteps(
    task="Cell_Setup",
    kind="setup",
    steps=[
        Step(
            type="start_thread",
            inputs={
                "condition": Step(type="logic_boolean", fields={"BOOL": "TRUE"}),
                "DO": [
                    Step(
                        type="connect_external_io",
                        fields={"devive_name": "DIO000"},
                        source="connect the Contec I/O unit DIO000",
                    )
                ],
            },
            source="in a parallel thread",
        ),
        Step(
            type="create_event",
            inputs={"EVENT": [_flag_rule("14", "on", "F481"), _flag_rule("14", "off", "F482")]},
        ),
        Step(
            type="create_event",
            inputs={"EVENT": [_flag_rule("13", "on", "F482"), _flag_rule("13", "off", "F481")]},
        ),
        Step(
            type="create_event",
            inputs={
                "EVENT": [
                    Step(
                        type="stop_robot_upon",
                        fields={"trigger_condition": "rising"},
                        inputs={
                            "condition": Step(
                                type="logic_compare",
                                fields={"OP": "EQ"},
                                inputs={
                                    "A": _external("12"),
                                    "B": Step(type="logic_boolean", fields={"BOOL": "FALSE"}),
                                },
                            )
                        },
                        source="stop the robot when the safety input 12 drops",
                    )
                ]
            },
        ),
    ],
)

CYCLE = [
    _move("P1", "go to the safe home point"),
    Step(
        type="wait_external_io_input",
        fields={"io_no": "1", "input_pin_name": "0", "in_state": "on"},
        disabled=True,
        source="(optional) wait for the start button",
    ),
    _call("BRG_Get_BRG", "fetch a bearing"),
    Step(
        type="wait_block",
        inputs={"condition": _both("AND", _is_true(_external("3")), _is_true(_external("4")))},
        source="wait until the housing is in place (external inputs 3 and 4)",
    ),
    _call("CNV_Get_BH", "fetch a bearing housing from the conveyor"),
    _move("P1", "back to the home point"),
    _wait_input("12", "on", "wait until the right machining center is ready"),
    _call("RMC_Put_BH&BRG", "put housing and bearing into the right machining center"),
    _wait_input("12", "off", "wait until the right machining center has taken them"),
    _output("6", "on", "start press-fitting"),
    Step(
        type="wait_block",
        inputs={
            "condition": _both("OR", _is_true(_robot_input("10")), _is_true(_robot_input("11")))
        },
        source="wait until press-fitting is done (robot input 10 or 11)",
    ),
    _call("RMC_Get_BH", "take the assembly out of the right machining center"),
    _move("P1", "back to the home point"),
    _call("LMC_Put_BH", "park the assembly in the left machining center"),
    _move("P1", "back to the home point"),
    _call("CNV_Get_PLT", "fetch an empty pallet"),
    _call("CNV_Put_PLT", "put the pallet on the conveyor"),
    _move("P1", "back to the home point"),
    _call("LMC_Get_BH", "take the assembly from the left machining center"),
    _move("P1", "back to the home point"),
    _call("CNV_Put_BH", "place the assembly on the pallet"),
    Step(
        type="set_external_io_output_during",
        fields={"io_no": "1", "output_pin_name": "3", "out_state": "on", "name": "N483"},
        source="signal the conveyor for the time in N483",
    ),
    Step(type="return", source="start the next cycle"),
]

MAIN = TaskSteps(
    task="Main_Task",
    kind="main",
    steps=[
        Step(type="select_robot", fields={"robotName": "fairino_FR"}, source="use the FR robot"),
        Step(type="set_motor", fields={"state_list": "on"}, source="switch the servos on"),
        Step(
            type="set_number",
            fields={"name": "N5"},
            inputs={"right_hand_side": Step(type="math_number", fields={"NUM": "2"})},
            source="set the cycle mode N5 to 2",
        ),
        Step(
            type="loop",
            source="repeat the assembly cycle",
            inputs={
                "DO": [
                    Step(
                        type="controls_if",
                        source="only while the cycle mode N5 is 2",
                        inputs={
                            "IF0": Step(
                                type="logic_compare",
                                fields={"OP": "EQ"},
                                inputs={
                                    "A": Step(type="math_custom_number", fields={"name": "N5"}),
                                    "B": Step(type="math_number", fields={"NUM": "2"}),
                                },
                            ),
                            "DO0": CYCLE,
                        },
                    )
                ]
            },
        ),
    ],
)


def _sub(name: str, *steps: Step) -> TaskSteps:
    return TaskSteps(task=name, kind="sub", steps=list(steps))


SUBS = [
    _sub(
        "BRG_Get_BRG",
        _move("P21", "standby above the bearing"),
        _move("P22", "approach the bearing"),
        _call("Open_BRG&PLT_Crump", "open the bearing clamp"),
        _move("P23", "move to the bearing grasp point"),
        _call("Close_BRG&PLT_Crump", "close the bearing clamp"),
        _move("P25", "lift the bearing"),
        _move("P26", "retreat"),
        _move("P21", "back to standby"),
    ),
    _sub(
        "CNV_Get_BH",
        _move("P31", "standby above the conveyor"),
        _move("P32", "approach the housing"),
        _call("Open_BH_Crump", "open the housing clamp"),
        _move("P33", "move to the housing grasp point"),
        _call("Close_BH_Crump", "close the housing clamp"),
        _move("P32", "lift the housing"),
        _move("P31", "back to standby"),
    ),
    _sub(
        "RMC_Put_BH&BRG",
        _move("P20", "standby at the right machining center"),
        _move("P11", "approach"),
        _move("P12", "above the chuck"),
        _move("P14", "above the housing seat"),
        _move("P15", "housing seat"),
        _call("Open_BH_Crump", "release the housing"),
        _speed(10, "slow down"),
        _move("P14", "leave the housing seat slowly"),
        _speed(100, "full speed again"),
        _move("P13", "above the bearing seat"),
        _move("P16", "approach the bearing seat"),
        _move("P17", "bearing seat"),
        _call("Open_BRG&PLT_Crump", "release the bearing"),
        _speed(10, "slow down"),
        _move("P16", "leave the bearing seat slowly"),
        _speed(100, "full speed again"),
        _move("P12", "above the chuck"),
        _move("P11", "retreat"),
    ),
    _sub(
        "RMC_Get_BH",
        _move("P11", "approach the right machining center"),
        _move("P12", "above the chuck"),
        _move("P14", "above the assembly"),
        _move("P15", "assembly grasp point"),
        _call("Close_BH_Crump", "grasp the assembly"),
        _move("P14", "lift"),
        _move("P12", "above the chuck"),
        _move("P11", "retreat"),
        _move("P20", "standby"),
    ),
    _sub(
        "LMC_Put_BH",
        _move("P41", "standby at the left machining center"),
        _move("P42", "approach"),
        _move("P43", "put-down point"),
        _call("Open_BH_Crump", "release the assembly"),
        _move("P42", "retreat"),
        _move("P41", "standby"),
        _move("P1", "home"),
    ),
    _sub(
        "CNV_Get_PLT",
        _move("P34", "standby above the pallet stack"),
        _move("P35", "approach the pallet"),
        _speed(10, "slow down"),
        _move("P36", "pallet grasp point"),
        _call("Close_BRG&PLT_Crump", "grasp the pallet"),
        _move("P35", "lift the pallet"),
        _speed(100, "full speed again"),
        _move("P34", "back to standby"),
    ),
    _sub(
        "CNV_Put_PLT",
        _move("P37", "above the conveyor"),
        _move("P38", "pallet put-down point"),
        _call("Open_BRG&PLT_Crump", "release the pallet"),
        _move("P37", "retreat"),
        _move("P34", "standby"),
    ),
    _sub(
        "LMC_Get_BH",
        _move("P41", "standby at the left machining center"),
        _move("P42", "approach"),
        _move("P43", "assembly grasp point"),
        _call("Close_BH_Crump", "grasp the assembly"),
        _move("P42", "lift"),
        _move("P41", "retreat"),
    ),
    _sub(
        "CNV_Put_BH",
        _move("P39", "above the pallet"),
        _move("P40", "put-down point on the pallet"),
        _call("Open_BH_Crump", "release the assembly"),
        _move("P39", "retreat"),
        _move("P1", "home"),
        Step(type="return", source="back to the loop start"),
    ),
    _clamp("Open_BH_Crump", "N483", "1", "on", "0"),
    _clamp("Close_BH_Crump", "N482", "1", "off", "1"),
    _clamp("Open_BRG&PLT_Crump", "N482", "2", "on", "2"),
    _clamp("Close_BRG&PLT_Crump", "N482", "2", "off", "3"),
]

#: The task list: main task, thirteen sub-programs, and the setup stacks.
SWINGARM_TASKS: list[TaskSteps] = [MAIN, *SUBS, SETUP]


def swingarm_program() -> Program:
    """The example assembled into one program."""
    return build_program(SWINGARM_TASKS)


Signature = tuple[object, ...]


def _signature(step: Step) -> Signature:
    name = step.param("name") if step.type == "procedures_callnoreturn" else step.field("NAME")
    inputs = tuple(
        (key, _signature(item) if isinstance(item, Step) else tuple(map(_signature, item)))
        for key, item in step.inputs.items()
    )
    return (step.type, name, step.disabled, inputs)


def structure(program: Program) -> list[Signature]:
    """Stacks as nested (type, procedure name, disabled, inputs) tuples, sorted: what a
    program does and calls, without ids, block numbers, points, pins or positions."""
    return sorted((tuple(map(_signature, stack)) for stack in program.stacks), key=repr)
