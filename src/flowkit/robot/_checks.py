"""Semantic checks of a program against a block catalog: types, fields, mutations, inputs,
connection rules, procedures and ids. Shared by ``validate_steps``, ``validate_xml`` and the
compiler; each finding is returned with the step it concerns so callers can add lines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ._check_blocks import Context, Finding, Unit, top_chain
from ._depth import MAX_XML_DEPTH, first_too_deep
from .catalog import Catalog
from .problems import Problem
from .steps import Program, Step

__all__ = ["FRAGMENT_WARNINGS", "Finding", "Unit", "as_fragment", "check_program", "check_units"]

#: Checks that ask whether a program is *complete*. A fragment (a procedure file the
#: controller wrote out, a loop whose body is filled elsewhere, a relation file recording
#: only how blocks connect) is incomplete by design, so with ``fragment=True`` these are
#: warnings. Whatever is *present* is still checked as strictly as in a whole program: a bad
#: field value, a block after a loop, a duplicate id stay errors.
FRAGMENT_WARNINGS = frozenset(
    {
        "missing_field",
        "missing_input",
        "missing_body",
        "missing_mutation",
        "undefined_procedure",
        "unknown_block_type",  # placeholders (``unknown_operation``) for steps not yet chosen
        "no_main_program",
        "main_task_count",
        "main_without_select_robot",
        "stray_stack",
        "empty_task",
    }
)


def check_program(program: Program, catalog: Catalog) -> list[Finding]:
    """Check every stack of ``program``; stacks are numbered from 1 in problems."""
    units = [Unit(chain=stack, stack=i + 1) for i, stack in enumerate(program.stacks)]
    findings = check_units(units, catalog)
    heads = [
        i + 1 for i, stack in enumerate(program.stacks) if stack and stack[0].type == "select_robot"
    ]
    if len(heads) > 1:  # as a task list with two main tasks is refused
        message = (
            f"{len(heads)} stacks start with select_robot (stacks {', '.join(map(str, heads))}); "
            "a program has one main program: make the others sub-programs"
        )
        findings.append((Problem(severity="error", code="main_task_count", message=message), None))
    if program.main() is None:
        message = (
            "no stack starts with select_robot, so the program has no main program; add one "
            "unless this file only holds sub-programs"
            if program.stacks
            else "the program is empty: it has no blocks, so no main program"
        )
        findings.append(
            (
                Problem(severity="warning", code="no_main_program", message=message),
                None,
            )
        )
    return findings


def as_fragment(problems: list[Problem]) -> list[Problem]:
    """``problems`` judged as those of a part: the completeness checks
    (``FRAGMENT_WARNINGS``) become warnings, every other problem keeps its severity."""
    return [
        p.model_copy(update={"severity": "warning"})
        if p.severity == "error" and p.code in FRAGMENT_WARNINGS
        else p
        for p in problems
    ]


def check_units(
    units: Sequence[Unit], catalog: Catalog, *, procedures: Iterable[str] = ()
) -> list[Finding]:
    """Check top-level chains together (ids and procedure calls span all of them).

    ``procedures`` are sub-program names defined elsewhere (calls to them are fine).
    """
    findings: list[Finding] = []
    calls: list[tuple[str, Step, str, Unit, bool]] = []
    defined: Counter[str] = Counter()
    ids: Counter[str] = Counter()
    for unit in units:
        ctx = Context(catalog, unit)
        top_chain(ctx, unit)
        deep = first_too_deep(unit.chain, wrapper=unit.wrapper)
        if deep is not None:
            step, path = deep
            ctx.add(
                "too_deep",
                f"the program nests deeper here than the {MAX_XML_DEPTH} XML levels readers "
                "accept (Blockly writes each next block inside the one before: a chain of "
                "about 127 blocks, less with bodies); move steps into sub-programs "
                "(procedures_callnoreturn) to shorten the chain",
                step,
                path,
            )
        findings.extend(ctx.findings)
        calls.extend(ctx.calls)
        head = unit.chain[0] if unit.chain else None
        if head is not None and head.type == "procedures_defnoreturn":
            name = head.field("NAME")
            if name is not None:
                defined[name] += 1
        for step in unit.chain:
            ids.update(s.id for s in step.walk() if s.id is not None)
    for unit in units:
        ctx = Context(catalog, unit)
        head = unit.chain[0] if unit.chain else None
        name = head.field("NAME") if head else None
        if head is not None and name is not None and defined[name] > 1:
            ctx.add(
                "duplicate_procedure",
                f"sub-program `{name}` is defined {defined[name]} times; rename or remove "
                "the extra definitions",
                head,
                "" if unit.wrapper else "1",
            )
            defined[name] = 1  # report each name once
        findings.extend(ctx.findings)
    elsewhere = set(procedures)
    known = ", ".join(f"`{n}`" for n in sorted(elsewhere.union(defined))) or "none"
    for name, step, path, unit, disabled in calls:
        if name not in defined and name not in elsewhere:
            ctx = Context(catalog, unit)
            ctx.add(
                "undefined_procedure",
                f"call to sub-program `{name}`, which is not defined; define it "
                f"(procedures_defnoreturn NAME={name}) or call one of: {known}",
                step,
                path,
                disabled=disabled,
            )
            findings.extend(ctx.findings)
    seen: set[str] = set()
    for unit in units:
        ctx = Context(catalog, unit)
        for path, step in _numbered(unit):
            if step.id is not None and ids[step.id] > 1 and step.id not in seen:
                seen.add(step.id)
                ctx.add(
                    "duplicate_id",
                    f"block id `{step.id}` is used {ids[step.id]} times; ids must be unique "
                    "(remove the ids and the compiler generates new ones)",
                    step,
                    path,
                )
        findings.extend(ctx.findings)
    return findings


def _numbered(unit: Unit) -> list[tuple[str, Step]]:
    found: list[tuple[str, Step]] = []

    def visit(chain: Sequence[Step], prefix: str, start: int = 1) -> None:
        for index, step in enumerate(chain, start=start):
            path = f"{prefix}{index}"
            found.append((path, step))
            seen = 0
            for item in step.inputs.values():
                if isinstance(item, Step):
                    found.extend((path, s) for s in item.walk())
                else:
                    visit(item, f"{path}.", seen + 1)  # numbering runs on across bodies
                    seen += len(item)

    if unit.wrapper and unit.chain:
        head = unit.chain[0]
        found.append(("", head))
        visit(head.body("STACK"), "")
    else:
        visit(unit.chain, "")
    return found
