"""Errors of the workflows' own inputs: robot programs, parameter tables, task lists, dialogue
domains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._base import FlowkitError, listed_problems

__all__ = [
    "CatalogError",
    "DomainError",
    "InvalidProgramError",
    "ParameterTableError",
    "RobotProgramError",
    "StepTextError",
    "TaskCycleError",
    "UnsafeXMLError",
]


class RobotProgramError(FlowkitError):
    """A robot program (Blockly XML or module steps) cannot be read, checked or written."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class UnsafeXMLError(RobotProgramError):
    """The XML declares a DOCTYPE, entities or external references; it was not read."""


class InvalidProgramError(RobotProgramError):
    """A program fails validation; ``problems`` lists every problem (with line numbers for XML).

    Each problem has ``severity``, ``message``, ``line``, ``block_id``, ``block_type``,
    ``task`` and ``step``; ``str(problem)`` is one readable line.
    """

    def __init__(self, problems: Sequence[Any], *, path: str | None = None) -> None:
        self.problems = list(problems)
        where = f"{path}: " if path else ""
        super().__init__(
            listed_problems(f"{where}the robot program", self.problems, "try again"), path=path
        )


class StepTextError(RobotProgramError):
    """The text form of module steps does not parse; ``line`` is the 1-based line number."""

    def __init__(self, message: str, *, line: int, path: str | None = None) -> None:
        self.line = line
        where = f"{path}:{line}" if path else f"line {line}"
        super().__init__(f"{where}: {message}", path=path)


class CatalogError(RobotProgramError):
    """A block catalog file is not valid; ``problems`` lists every problem with its fix."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"Block catalog {path or '(in memory)'} has {count} problem"
            f"{'s' if count != 1 else ''}:\n{lines}",
            path=path,
        )


class ParameterTableError(FlowkitError):
    """A parameter table (teaching points, number variables, flags) cannot be read, written or
    mapped onto; ``path`` is the file and ``key`` the slot or entry (``P3.x_pos``) at fault."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        self.path = path
        self.key = key
        where = ", ".join(x for x in (path, f"key {key!r}" if key else None) if x)
        super().__init__(f"{where}: {message}" if where else message)


class TaskCycleError(FlowkitError, ValueError):
    """A sas task list whose tasks call each other in a circle; ``cycle`` names it from the
    first task back to it (``("A", "B", "A")``). A ``ValueError`` too, so ``TaskList`` reports
    it inside its ``ValidationError`` and an LLM answer with a cycle is retried like any
    invalid answer."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__(
            f"the tasks call each other in a circle: {' -> '.join(self.cycle)}; a robot "
            f"program cannot run that, so remove one of these sub-task calls"
        )


class DomainError(FlowkitError):
    """A dialogue domain (or conversation test file) is invalid; ``problems`` lists each one as
    ``"location: what is wrong and what to do"``; ``path`` is the file, when there is one."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.path = path
        self.problems = list(problems)
        super().__init__(
            listed_problems(path or "The dialogue domain", self.problems, "load it again")
        )
