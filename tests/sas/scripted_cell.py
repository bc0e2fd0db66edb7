"""A small pick-and-place cell as scripted LLM answers, for end-to-end tests of the sas flow.

The main program loops: go to the safe point, pick, place. Points are logical names
("safe point", "above the part" ...) that parameter mapping assigns to teaching slots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flowkit.testing import ScriptedLLM

TASKS: dict[str, Any] = {
    "tasks": [
        {
            "name": "Main_Task",
            "type": "MainTask",
            "description": "Cycle: safe point, pick the part, place it.",
            "sub_tasks": ["Pick_Part", "Place_Part"],
        },
        {
            "name": "Pick_Part",
            "type": "GraspTask",
            "description": "Pick the part from the feeder.",
            "sub_tasks": ["Close_Gripper"],
        },
        {
            "name": "Place_Part",
            "type": "PlaceTask",
            "description": "Place the part on the pallet.",
            "sub_tasks": ["Open_Gripper"],
        },
        {"name": "Close_Gripper", "type": "CloseClampTask", "description": "Close the gripper."},
        {"name": "Open_Gripper", "type": "OpenClampTask", "description": "Open the gripper."},
    ]
}


def move(point: str, source: str) -> dict[str, Any]:
    return {"type": "moveP", "fields": {"point_name_list": point}, "source": source}


def call(name: str) -> dict[str, Any]:
    return {"type": "procedures_callnoreturn", "mutation": {"name": name}}


def gripper(pin: str, state: str) -> list[dict[str, Any]]:
    return [
        {"type": "wait_timer", "fields": {"name": "N482"}},
        {"type": "set_output", "fields": {"output_pin_name": pin, "out_state": state}},
        {"type": "wait_input", "fields": {"input_pin_name": pin, "input_state": state}},
    ]


STEPS: dict[str, list[dict[str, Any]]] = {
    "Main_Task": [
        {"type": "select_robot", "fields": {"robotName": "dobot_mg400"}},
        {"type": "set_motor", "fields": {"state_list": "on"}},
        {
            "type": "loop",
            "inputs": {
                "DO": [
                    move("safe point", "start every cycle at the safe point"),
                    call("Pick_Part"),
                    call("Place_Part"),
                    {"type": "return"},
                ]
            },
        },
    ],
    "Pick_Part": [
        move("above the part", "approach the part"),
        {"type": "set_speed", "fields": {"speed": "10"}},
        move("part", "go down slowly"),
        call("Close_Gripper"),
        {"type": "set_speed", "fields": {"speed": "100"}},
        move("above the part", "lift it"),
    ],
    "Place_Part": [
        move("above the pallet", "approach the pallet"),
        move("pallet", "put it down"),
        call("Open_Gripper"),
        move("above the pallet", "retreat"),
    ],
    "Close_Gripper": gripper("1", "on"),
    "Open_Gripper": gripper("1", "off"),
}

_TASK = re.compile(r'Task to write:\n\{"name": "(?P<name>[^"]+)"')


def steps_for(prompt: str) -> dict[str, Any]:
    match = _TASK.search(prompt)
    assert match, "a module-steps prompt names its task"
    return {"steps": STEPS[match.group("name")]}


def scripted(**overrides: Any) -> ScriptedLLM:
    """Answers for the cell; ``overrides`` maps a task name to other steps (or an error)."""

    def answer(prompt: str) -> Any:
        name = _TASK.search(prompt)
        if name and name.group("name") in overrides:
            value = overrides[name.group("name")]
            return value(prompt) if callable(value) else value
        return steps_for(prompt)

    return ScriptedLLM([("Current plan:", TASKS), ("Task to write:", answer)])


TEACHING = """\
P1:
  name: safe point
  x_pos: 200.0
  y_pos: 0.0
  z_pos: 150.0
  rx_pos: 0.0
  ry_pos: 0.0
  rz_pos: 0.0
  vel: 100.0
  acc: 100.0
  dec: 100.0
  dist: 0.1
  stime: 0.0
  tool: 0.0
"""


def teaching_file(folder: Path, free_slots: int = 8) -> Path:
    """A teaching table with the safe point taught and ``free_slots`` empty slots."""
    lines = [TEACHING]
    for n in range(2, 2 + free_slots):
        lines.append(
            f"P{n}:\n  name: ''\n"
            + "".join(
                f"  {key}: 0.0\n"
                for key in (
                    "x_pos",
                    "y_pos",
                    "z_pos",
                    "rx_pos",
                    "ry_pos",
                    "rz_pos",
                    "vel",
                    "acc",
                    "dec",
                    "dist",
                    "stime",
                    "tool",
                )
            )
        )
    path = folder / "teaching.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
