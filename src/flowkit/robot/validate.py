"""Validate robot programs: the XML against ``schemas/blockly-robot.xsd`` (with xmlschema) and
the content against the block catalog (types, fields, values, connections, procedures, ids).

``validate_xml`` reports every problem with its line; ``validate_steps`` does the same checks
on module steps and names the task and step instead. Neither raises for a bad program.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from flowkit.errors import InvalidProgramError

from ._checks import Finding, Unit, as_fragment, check_program, check_units
from ._resources import schema_path
from ._xml import BLOCKLY_NS, Element, local_name, parse_xml
from .catalog import Catalog, default_catalog
from .decompile import decompile_with_lines
from .problems import Problem
from .steps import Program, Step, TaskSteps, build_program

__all__ = ["MAX_PROBLEMS", "validate_steps", "validate_task", "validate_xml"]

#: The most problems ``validate_xml`` lists; one more says it stopped there.
MAX_PROBLEMS = 100
#: More attributes on one element than this and the document is refused before the schema.
MAX_ATTRIBUTES = 64
#: A guard on the schema check of pathological documents (real programs take milliseconds).
_MAX_SECONDS = 20.0

_ORDER_HINT = (
    "a <block> holds, in this order: <mutation>?, <field>*, <comment>?, <value>/<statement>* "
    "and <next>? last"
)


@cache
def _schema() -> Any:
    import xmlschema

    return xmlschema.XMLSchema(str(schema_path("blockly-robot.xsd")))


def validate_xml(
    source: str | bytes | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    fragment: bool = False,
) -> list[Problem]:
    """Every problem of a program given as XML text or bytes, a ``Path``, or ``path=`` a file
    name, each with its line (a ``str`` source is always XML text, never a file name).

    With ``fragment`` the file is judged as a part of a program (a procedure file, a loop
    with its body left empty, a relation file): what it lacks (``FRAGMENT_WARNINGS``: missing
    fields and bodies, calls to sub-programs defined elsewhere, placeholder block types, no
    main program) and child elements in another order than the editor writes them (when the
    blocks still read) are warnings; everything present is checked as for a whole program.

    Not well-formed XML is reported as a problem too; the list is empty for a clean program
    and may hold warnings only (e.g. editor-only block types) for a valid one.

    Raises:
        UnsafeXMLError: the document has a DOCTYPE or entities (it is not read at all).
        RobotProgramError: the file cannot be read (see ``read_source``).
    """
    try:
        root, _path = parse_xml(source, path=path)
    except InvalidProgramError as exc:
        return list(exc.problems)
    problems = _attribute_problems(root) or _xsd_problems(root)
    if problems and problems[-1].code in ("too_many_problems", "too_many_attributes"):
        return problems
    try:
        program, lines = decompile_with_lines(root, catalog=catalog)
    except InvalidProgramError as exc:
        # The schema already explains most unreadable documents; add only what is new.
        seen = {p.line for p in problems}
        return _capped(problems + [p for p in exc.problems if p.line not in seen])
    findings = check_program(program, catalog or default_catalog())
    found = problems + _with_lines(findings, lines)
    if fragment:
        # The blocks were read, so an order the editor would not write is cosmetic here:
        # tools that cut parts out of programs often put <mutation> after the fields.
        found = [_order_as_warning(p) for p in as_fragment(found)]
    return _capped(found)


def validate_steps(
    steps: Program | Sequence[TaskSteps] | Sequence[Step],
    catalog: Catalog | None = None,
    *,
    fragment: bool = False,
) -> list[Problem]:
    """Every problem of module steps: a program, the workflow's task list, or one chain.

    With ``fragment`` the steps are judged as a part of a program, as in ``validate_xml``.

    For a task list, problems name the task and the step (``4.1`` = first step in the body
    of step 4, numbered as in the text form); the main task must start with
    ``select_robot``, and task names must be unique.
    """
    found = _steps_problems(steps, catalog or default_catalog())
    return as_fragment(found) if fragment else found


def _steps_problems(
    steps: Program | Sequence[TaskSteps] | Sequence[Step], catalog: Catalog
) -> list[Problem]:
    if isinstance(steps, Program):
        return [p for p, _ in check_program(steps, catalog)]
    items = list(steps)
    if items and all(isinstance(i, TaskSteps) for i in items):
        tasks = [i for i in items if isinstance(i, TaskSteps)]
        return _task_problems(tasks) + [p for p, _ in check_units(_units(tasks), catalog)]
    chain = [i for i in items if isinstance(i, Step)]
    if len(chain) != len(items):
        raise TypeError("pass a Program, a list of TaskSteps, or a list of Step")
    return [p for p, _ in check_units([Unit(chain=chain)], catalog)] if chain else []


def validate_task(
    task: TaskSteps, *, procedures: Iterable[str] = (), catalog: Catalog | None = None
) -> list[Problem]:
    """The problems of one task's steps on their own, as they will sit in the program.

    ``procedures`` names the sub-programs the task may call (the other tasks of the list);
    a main task must start with ``select_robot``. Use it to check one LLM answer, or the
    one task a reviewer's feedback regenerated, without the rest of the list.
    """
    catalog = catalog or default_catalog()
    own = [p for p in _task_problems([task]) if p.code != "main_task_count"]
    findings = check_units(_units([task]), catalog, procedures=procedures)
    return own + [p for p, _ in findings]


def _units(tasks: list[TaskSteps]) -> list[Unit]:
    units: list[Unit] = []
    for task in tasks:
        if task.kind == "main" and task.steps:
            units.append(Unit(chain=task.steps, task=task.task))
        elif task.kind == "sub":
            stack = build_program([task]).stacks[0]
            units.append(Unit(chain=stack, task=task.task, wrapper=True))
        elif task.kind == "setup":
            units.extend(Unit(chain=[step], task=task.task) for step in task.steps)
    return units


def _task_problems(tasks: list[TaskSteps]) -> list[Problem]:
    problems: list[Problem] = []

    def add(code: str, message: str, task: str | None = None) -> None:
        problems.append(Problem(severity="error", code=code, message=message, task=task))

    mains = [t for t in tasks if t.kind == "main"]
    if len(mains) != 1:
        add("main_task_count", f"there must be exactly one main task, found {len(mains)}")
    names: set[str] = set()
    for task in tasks:
        if task.task in names:
            add("duplicate_task", "two tasks have this name; rename one", task.task)
        names.add(task.task)
        if task.kind == "main" and (not task.steps or task.steps[0].type != "select_robot"):
            add(
                "main_without_select_robot",
                "the main task's first step must be select_robot (the robot to use)",
                task.task,
            )
        if task.kind != "main" and not task.steps:
            add("empty_task", "the task has no steps; generate or write them", task.task)
    return problems


def _with_lines(findings: list[Finding], lines: dict[int, int]) -> list[Problem]:
    return [
        problem.model_copy(update={"line": lines.get(id(step))}) if step is not None else problem
        for problem, step in findings
    ]


def _xsd_problems(root: Element) -> list[Problem]:
    problems: list[Problem] = []
    started = time.monotonic()
    # xmlschema yields errors lazily; each costs time in the size of its element, so an
    # element with thousands of bad attributes made the whole list cubic. Stop early.
    for error in _schema().iter_errors(root):
        if len(problems) >= MAX_PROBLEMS:
            problems.append(_stopped(f"after {MAX_PROBLEMS} schema problems"))
            break
        if time.monotonic() - started > _MAX_SECONDS:
            problems.append(_stopped(f"after {_MAX_SECONDS:g} s"))
            break
        reason = _plain(str(error.reason or error.message))
        hint = _ORDER_HINT if "Unexpected child" in reason or "not complete" in reason else ""
        elem = error.elem
        line = error.sourceline
        index = getattr(error, "index", None)
        if elem is not None and isinstance(index, int) and 0 <= index < len(elem):
            line = elem[index].sourceline  # the offending child, not its parent
        problems.append(
            Problem(
                severity="error",
                code="xsd",
                message=f"{reason}{'; ' + hint if hint else ''}",
                line=line,
                block_type=elem.get("type") if elem is not None else None,
                block_id=elem.get("id") if elem is not None else None,
            )
        )
    return problems


def _attribute_problems(root: Element) -> list[Problem]:
    """Elements with more attributes than any Blockly element has, found in one pass.

    The schema checker builds every attribute error of an element before it yields the
    first, each in time linear in the attributes: thousands of them made validation take
    minutes. Such a document is refused here, without the schema check.
    """
    problems: list[Problem] = []
    for element in root.iter():
        count = len(element.attrib)
        if count > MAX_ATTRIBUTES:
            problems.append(
                Problem(
                    severity="error",
                    code="too_many_attributes",
                    message=(
                        f"<{local_name(element)}> has {count} attributes; Blockly elements have "
                        f"at most a few, so the document was not checked further"
                    ),
                    line=element.sourceline,
                )
            )
            if len(problems) >= MAX_PROBLEMS:
                break
    return problems


def _order_as_warning(problem: Problem) -> Problem:
    if (
        problem.code == "xsd"
        and problem.severity == "error"
        and "Unexpected child" in problem.message
    ):
        return problem.model_copy(update={"severity": "warning"})
    return problem


def _stopped(when: str) -> Problem:
    return Problem(
        severity="error",
        code="too_many_problems",
        message=f"validation stopped {when}; fix the problems above and validate again",
    )


def _capped(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= MAX_PROBLEMS + 1:
        return problems
    return [*problems[:MAX_PROBLEMS], _stopped(f"after {MAX_PROBLEMS} problems")]


def _plain(text: str) -> str:
    # xmlschema names elements with their namespace ({uri}tag or ns0:tag); ours are all Blockly.
    text = text.replace(f"{{{BLOCKLY_NS}}}", "")
    return re.sub(r"\bns\d+:", "", text).rstrip(".")
