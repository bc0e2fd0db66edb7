"""The task list of step 1: what the robot program is made of, before any block is chosen.

One ``MainTask`` (the main program) and sub-programs (grasp, place, clamp tasks) that it
calls. A task list is validated as a whole: unique names, sub-task references that exist,
exactly one main task, and no task calling itself through its sub-tasks.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flowkit.errors import TaskCycleError

__all__ = ["TaskDefinition", "TaskList", "TaskType", "find_cycle"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_&.\-]{0,63}$")


class TaskType(StrEnum):
    MAIN = "MainTask"
    GRASP = "GraspTask"
    PLACE = "PlaceTask"
    OPEN_CLAMP = "OpenClampTask"
    CLOSE_CLAMP = "CloseClampTask"


class TaskDefinition(BaseModel):
    """One task: a program (``MainTask``) or a sub-program the main program calls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Program name, e.g. Main_Task, BRG_Get_BRG, Open_BRG_Clamp")
    type: TaskType
    description: str = Field(default="", max_length=2000)
    sub_tasks: list[str] = Field(default_factory=list, description="Names of tasks it calls")

    @field_validator("name")
    @classmethod
    def _name_is_a_program_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                "task names are 1-64 characters of letters, digits, '_', '&', '.', '-' "
                "(they become sub-program names in the robot editor)"
            )
        return value


class TaskList(BaseModel):
    """The whole plan, validated as a unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: list[TaskDefinition] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[str] = []
        names = [t.name for t in self.tasks]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            problems.append(f"task names must be unique; repeated: {', '.join(duplicates)}")
        mains = [t.name for t in self.tasks if t.type is TaskType.MAIN]
        if len(mains) != 1:
            problems.append(f"exactly one MainTask is needed; found {len(mains)}")
        known = set(names)
        for task in self.tasks:
            missing = [s for s in task.sub_tasks if s not in known]
            if missing:
                problems.append(f"task {task.name} calls unknown tasks: {', '.join(missing)}")
            if task.name in task.sub_tasks:
                problems.append(f"task {task.name} lists itself as a sub-task")
        if problems:
            raise ValueError("; ".join(problems))
        cycle = find_cycle(self.tasks)
        if cycle:
            raise TaskCycleError(cycle)
        return self

    @property
    def main(self) -> TaskDefinition:
        return next(t for t in self.tasks if t.type is TaskType.MAIN)

    def get(self, name: str) -> TaskDefinition | None:
        return next((t for t in self.tasks if t.name == name), None)


def find_cycle(tasks: list[TaskDefinition]) -> list[str] | None:
    """The first circle of sub-task calls, from a task back to it (``["A", "B", "A"]``), or
    ``None``. Tasks are visited in list order, so the answer is the same for the same list."""
    calls = {t.name: t.sub_tasks for t in tasks}
    done: set[str] = set()
    for task in tasks:
        # Depth-first without recursion: a task list is outside text, and a chain of a few
        # thousand tasks must be an answer, not a RecursionError.
        path: list[str] = []
        stack: list[tuple[str, int]] = [(task.name, 0)]
        while stack:
            name, index = stack.pop()
            if index == 0:
                if name in path:
                    return [*path[path.index(name) :], name]
                if name in done or name not in calls:
                    continue
                path.append(name)
            subs = calls[name]
            if index < len(subs):
                stack.append((name, index + 1))
                stack.append((subs[index], 0))
            else:
                path.pop()
                done.add(name)
    return None
