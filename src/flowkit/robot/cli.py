"""Command functions behind ``flowkit sas compile | validate | decompile``: plain functions that
print what they did and return the process exit code (0 = success, 1 = failure)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from flowkit.errors import InvalidProgramError, RobotProgramError

from .._atomic import write_atomically
from .compile import compile_program
from .decompile import decompile
from .problems import errors_only
from .steps import Program, Step, TaskSteps
from .text import parse, parse_program, parse_tasks, render_program
from .validate import validate_xml

__all__ = ["compile_command", "decompile_command", "load_steps", "validate_command"]

_TASKS = TypeAdapter(list[TaskSteps])
_SECTION = re.compile(r"^##\s+(\w+)", re.MULTILINE)


def load_steps(path: str | Path) -> Program | list[TaskSteps] | list[Step]:
    """Read module steps from a file: JSON (a program, ``{"kind": "robot-tasks", "tasks":
    [...]}`` or a list of tasks) or the text form (``## stack`` sections = a program,
    ``## main``/``## sub`` sections = tasks, no sections = one chain).

    Raises:
        RobotProgramError: the file cannot be read or is not steps (``StepTextError`` with
            the line for the text form).
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RobotProgramError(f"Cannot read {where}: {exc}; check the path.", path=where) from exc
    if Path(path).suffix.lower() != ".json":
        section = _SECTION.search(text)
        if section is None:
            return parse(text)
        return parse_program(text) if section.group(1) == "stack" else parse_tasks(text)
    try:
        data = json.loads(text)
        if isinstance(data, list):
            return _TASKS.validate_python(data)
        if isinstance(data, dict) and data.get("kind") == "robot-tasks":
            return _TASKS.validate_python(data.get("tasks"))
        return Program.model_validate(data)
    except json.JSONDecodeError as exc:
        raise RobotProgramError(
            f"{where}:{exc.lineno}: not JSON ({exc.msg}); fix the file.", path=where
        ) from exc
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10]
        )
        raise RobotProgramError(
            f"{where} is not a program or task list: {detail}", path=where
        ) from exc


def compile_command(steps_path: str | Path, output: str | Path) -> int:
    """Compile a steps file (JSON or text) into Blockly XML at ``output``; offline."""
    try:
        xml = compile_program(load_steps(steps_path), deterministic=True)
    except InvalidProgramError as exc:
        print(f"{steps_path}: not compiled, {len(exc.problems)} problem(s):")
        for problem in exc.problems:
            print(f"  {problem}")
        return 1
    except RobotProgramError as exc:
        print(f"error: {exc}")
        return 1
    _write(Path(output), xml)
    print(f"wrote {output}")
    return 0


def validate_command(path: str | Path) -> int:
    """Validate a Blockly XML program; print every problem with its line; 1 on any error."""
    try:
        problems = validate_xml(Path(path))
    except RobotProgramError as exc:
        print(f"error: {exc}")
        return 1
    errors = errors_only(problems)
    for problem in problems:
        print(f"{path}: {problem}")
    warnings = len(problems) - len(errors)
    verdict = "invalid" if errors else "valid"
    print(f"{path}: {verdict} ({len(errors)} error(s), {warnings} warning(s))")
    return 1 if errors else 0


def decompile_command(path: str | Path, output: str | Path) -> int:
    """Read a Blockly XML program into steps: JSON if ``output`` ends in ``.json``, else text."""
    try:
        program = decompile(Path(path))
    except InvalidProgramError as exc:
        print(f"{path}: cannot be read:")
        for problem in exc.problems:
            print(f"  {problem}")
        return 1
    except RobotProgramError as exc:
        print(f"error: {exc}")
        return 1
    is_json = Path(output).suffix.lower() == ".json"
    _write(Path(output), program.to_json() + "\n" if is_json else render_program(program))
    print(f"wrote {output}")
    return 0


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)
