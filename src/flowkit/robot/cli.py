"""Command functions behind ``flowkit sas compile | validate | decompile``: plain functions that
print what they did (stdout) or what went wrong (stderr) and return the process exit code
(0 = success, 1 = failure)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TextIO

from pydantic import TypeAdapter, ValidationError

from flowkit.errors import InvalidProgramError, RobotProgramError, UntrustedInputError
from flowkit.foundation._untrusted import parse_json

from ..foundation._atomic import write_atomically
from ._xml import read_program_file
from .catalog import Catalog
from .compile import compile_program
from .decompile import decompile
from .problems import errors_only
from .steps import Program, Step, TaskSteps
from .text import parse, parse_program, parse_tasks, render_program
from .validate import validate_xml

__all__ = [
    "compile_command",
    "decompile_command",
    "load_steps",
    "report_problems",
    "validate_command",
    "writable_output",
]

_TASKS = TypeAdapter(list[TaskSteps])
_SECTION = re.compile(r"^##\s+(\w+)", re.MULTILINE)


def load_steps(
    path: str | Path, catalog: Catalog | None = None
) -> Program | list[TaskSteps] | list[Step]:
    """Read module steps from a file: JSON (a program, ``{"kind": "robot-tasks", "tasks":
    [...]}`` or a list of tasks) or the text form (``## stack`` sections = a program,
    ``## main``/``## sub`` sections = tasks, no sections = one chain), its blocks read by
    ``catalog`` (default: the shipped one).

    Raises:
        RobotProgramError: the file cannot be read or is not steps (``StepTextError`` with
            the line for the text form).
    """
    where = str(path)
    raw = read_program_file(path, what="steps file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RobotProgramError(
            f"Cannot read {where}: it is not UTF-8 text (byte {exc.start}); save it as UTF-8.",
            path=where,
        ) from exc
    if Path(path).suffix.lower() != ".json":
        section = _SECTION.search(text)
        if section is None:
            return parse(text, catalog)
        if section.group(1) in ("stack", "document"):
            return parse_program(text, catalog)
        return parse_tasks(text, catalog)
    try:
        data = parse_json(text, what="steps file", path=where)
        if isinstance(data, list):
            return _TASKS.validate_python(data)
        if isinstance(data, dict) and data.get("kind") == "robot-tasks":
            return _TASKS.validate_python(data.get("tasks"))
        return Program.model_validate(data)
    except json.JSONDecodeError as exc:
        raise RobotProgramError(
            f"{where}:{exc.lineno}: not JSON ({exc.msg}); fix the file.", path=where
        ) from exc
    except UntrustedInputError as exc:
        raise RobotProgramError(str(exc), path=where) from exc
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10]
        )
        raise RobotProgramError(
            f"{where} is not a program or task list: {detail}", path=where
        ) from exc


def compile_command(
    steps_path: str | Path,
    output: str | Path,
    *,
    fragment: bool = False,
    catalog: Catalog | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Compile a steps file (JSON or text) into Blockly XML at ``output``; offline.

    With ``fragment`` the steps are a part of a program (see ``validate_xml``); ``catalog``
    (default: the shipped one) is the block catalog they are checked against.

    What was written goes to ``out`` (stdout); problems and errors go to ``err`` (stderr).
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        target = writable_output(output)
        xml = compile_program(
            load_steps(steps_path, catalog), catalog=catalog, deterministic=True, fragment=fragment
        )
    except InvalidProgramError as exc:
        report_problems(f"{steps_path}: not compiled", exc, err)
        return 1
    except RobotProgramError as exc:
        err.write(f"flowkit: error: {exc}\n")
        return 1
    if not _write(target, xml, err):
        return 1
    out.write(f"wrote {output}\n")
    return 0


def validate_command(
    path: str | Path,
    *,
    as_json: bool = False,
    fragment: bool = False,
    catalog: Catalog | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Validate a Blockly XML program; print every problem with its line; 1 on any error.
    ``catalog`` (default: the shipped one) is the block catalog it is checked against.

    The findings are the command's output (``out``); a file that cannot be read is an error
    (``err``). With ``as_json``, one JSON object: path, valid, counts and every problem.
    With ``fragment`` the file is judged as a part of a program (see ``validate_xml``).
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        problems = validate_xml(Path(path), catalog, fragment=fragment)
    except RobotProgramError as exc:
        err.write(f"flowkit: error: {exc}\n")
        return 1
    errors = errors_only(problems)
    warnings = len(problems) - len(errors)
    if as_json:
        report = {
            "path": str(path),
            "valid": not errors,
            "fragment": fragment,
            "errors": len(errors),
            "warnings": warnings,
            "problems": [p.model_dump(mode="json", exclude_none=True) for p in problems],
        }
        out.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        return 1 if errors else 0
    for problem in problems:
        out.write(f"{path}: {problem}\n")
    verdict = ("invalid" if errors else "valid") + (" fragment" if fragment else "")
    out.write(f"{path}: {verdict} ({len(errors)} error(s), {warnings} warning(s))\n")
    return 1 if errors else 0


def decompile_command(
    path: str | Path,
    output: str | Path,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Read a Blockly XML program into steps: JSON if ``output`` ends in ``.json``, else text."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        target = writable_output(output)
        program = decompile(Path(path))
    except InvalidProgramError as exc:
        report_problems(f"{path}: cannot be read", exc, err)
        return 1
    except RobotProgramError as exc:
        err.write(f"flowkit: error: {exc}\n")
        return 1
    is_json = target.suffix.lower() == ".json"
    if not _write(target, program.to_json() + "\n" if is_json else render_program(program), err):
        return 1
    out.write(f"wrote {output}\n")
    return 0


def report_problems(what: str, exc: InvalidProgramError, err: TextIO) -> None:
    """``what, N problem(s):`` and one indented line per problem."""
    err.write(f"{what}, {len(exc.problems)} problem(s):\n")
    err.writelines(f"  {problem}\n" for problem in exc.problems)


def writable_output(output: str | Path) -> Path:
    """``output`` as a path whose folder exists or can be made; else ``RobotProgramError``.

    Checked before any work, so a typo in ``-o`` fails at once and names the user's path.
    """
    target = Path(output)
    if target.is_dir():
        raise RobotProgramError(
            f"Cannot write {output}: it is a folder; give a file name, e.g. {target / 'flow.xml'}.",
            path=str(output),
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RobotProgramError(
            f"Cannot write {output}: its folder {target.parent} cannot be created "
            f"({exc.strerror or exc}).",
            path=str(output),
        ) from exc
    return target


def _write(path: Path, text: str, err: TextIO) -> bool:
    try:
        write_atomically(path, text)
    except OSError as exc:
        err.write(f"flowkit: error: Cannot write {path}: {exc.strerror or exc}.\n")
        return False
    return True
