"""Steps 3-5 of sas: per-task XML, parameter mapping, and the merged, validated program.

No LLM is involved: XML comes from the structured steps through ``flowkit.robot.compile``.
The final ``flow.xml`` is validated (XSD and semantic checks) before it is written, and is
written atomically, so a reader never sees half a program.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...definition._node import Context, node
from ...errors import FlowkitError
from ...foundation._atomic import write_atomically
from ...robot.steps import Program, TaskSteps, build_program
from ...routing.sas import GENERATE_INDIVIDUAL_XMLS, MERGE_XML, PARAMETER_MAPPING
from ...sas.catalogs import catalog_for
from ...sas.demo_cell import teaching_for
from ...sas.state import GeneratedXml, SasState
from .step_files import remove_stale_step_files, write_step_files

__all__ = ["generate_individual_xmls", "merge_xml", "parameter_mapping"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _ordered_tasks(state: SasState, steps: dict[str, TaskSteps]) -> list[TaskSteps]:
    return [steps[t.name] for t in state.sas_step1_generated_tasks if t.name in steps]


def _on_robot(program: Program, robot: str | None) -> Program:
    """``program`` with the configured robot's name in its ``select_robot`` blocks (the
    editor fills it from its settings; the model's guess stands only where none is set)."""
    if not robot:
        return program
    stacks = [
        [
            step.model_copy(update={"fields": {**step.fields, "robotName": robot}})
            if step.type == "select_robot"
            else step
            for step in stack
        ]
        for stack in program.stacks
    ]
    return program.model_copy(update={"stacks": stacks})


def _fail(step: str, message: str) -> dict[str, Any]:
    """Back to the module-step review with the error; approval withdrawn until a retry."""
    return {
        "is_error": True,
        "error_message": message,
        "failed_step": step,
        "module_steps_accepted": False,
        "completion_status": "error",
        "messages": [f"assistant: {message}"],
    }


@node(
    reads=["sas_step1_generated_tasks", "sas_step2_module_steps", "run_output_directory", "config"],
    writes=[
        "generated_node_xmls",
        "messages",
        "current_step_description",
        "is_error",
        "error_message",
        "failed_step",
        "module_steps_accepted",
        "completion_status",
    ],
)
def generate_individual_xmls(state: SasState, ctx: Context) -> dict[str, Any]:
    """One XML file per task (its stack alone) and one per step (``steps/NN_<task>/``, see
    ``step_files``), for inspection before the merge."""
    from ...robot.compile import compile_program
    from ...robot.decompile import decompile

    base = Path(state.run_output_directory or ".")
    out, step_out = base / "tasks", base / "steps"
    # A revision may have fewer or renamed tasks: files an earlier run wrote here would pass
    # for part of this program. Only our own `NN_<task>.xml` files are removed.
    for stale in out.glob("[0-9][0-9]_*.xml") if out.is_dir() else ():
        stale.unlink(missing_ok=True)
    remove_stale_step_files(step_out)
    catalog = catalog_for(state.config)
    generated: list[GeneratedXml] = []
    for index, task in enumerate(_ordered_tasks(state, state.sas_step2_module_steps), 1):
        stem = f"{index:02d}_{_UNSAFE.sub('_', task.task)}"
        path = out / f"{stem}.xml"
        try:
            # Alone, a task calls sub-programs defined elsewhere: validated after the merge.
            text = compile_program([task], catalog=catalog, deterministic=True, validate=False)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text)
            stacks = decompile(text, catalog=catalog).stacks
            chain = {
                "main": stacks[0] if stacks else [],
                "sub": stacks[0][0].body("STACK") if stacks else [],
                "setup": [stack[0] for stack in stacks],  # each step is a stack of its own
            }[task.kind]
            steps = write_step_files(task, chain, step_out / stem, catalog)
            generated.append(GeneratedXml(task=task.task, path=str(path), steps=steps))
        except (FlowkitError, OSError) as exc:
            generated.append(
                GeneratedXml(
                    task=task.task, path=str(path), status="failure", error_message=str(exc)
                )
            )
    failed = [g for g in generated if g.status == "failure"]
    failed += [
        GeneratedXml(task=f"{g.task} step {s.step}", path=s.path, error_message=s.error_message)
        for g in generated
        for s in g.steps
        if s.status == "failure"
    ]
    if failed:
        detail = "; ".join(f"{g.task}: {g.error_message}" for g in failed)
        return {
            **_fail(
                GENERATE_INDIVIDUAL_XMLS,
                f"Generating XML failed for {len(failed)} task(s): {detail}",
            ),
            "generated_node_xmls": generated,
        }
    return {
        "generated_node_xmls": generated,
        "messages": [
            f"assistant: wrote {len(generated)} task program(s) to {out} and "
            f"{sum(len(g.steps) for g in generated)} step file(s) to {step_out}"
        ],
        "current_step_description": "task programs generated; mapping parameters",
    }


@node(
    reads=[
        "sas_step1_generated_tasks",
        "sas_step2_module_steps",
        "run_output_directory",
        "config",
        "current_user_request",
    ],
    writes=[
        "mapped_program",
        "sas_step3_mapping_report",
        "messages",
        "warnings",
        "current_step_description",
        "is_error",
        "error_message",
        "failed_step",
        "module_steps_accepted",
        "completion_status",
    ],
)
def parameter_mapping(state: SasState, ctx: Context) -> dict[str, Any]:
    """Map logical point/number/flag names onto the teaching tables (seed 002 node 6); the
    demo's own request, given no table, maps onto the demo cell's."""
    from ...robot.params import apply_teaching

    program = _on_robot(
        build_program(_ordered_tasks(state, state.sas_step2_module_steps)), state.config.robot
    )
    out = Path(state.run_output_directory or ".")
    teaching = state.config.teaching_file or teaching_for(state.current_user_request)
    try:
        mapped, report = apply_teaching(program, teaching, out, catalog=catalog_for(state.config))
    except (FlowkitError, OSError) as exc:
        return _fail(PARAMETER_MAPPING, f"Parameter mapping failed: {exc}; fix it, then retry.")
    summary = report.to_markdown()
    unmapped = [e.logical for e in report.entries if e.action in ("unmapped", "error")]
    update: dict[str, Any] = {
        "mapped_program": mapped,
        "sas_step3_mapping_report": summary,
        "messages": [
            f"assistant: parameters mapped ({len(report.entries)} name(s))"
            + ("" if teaching == state.config.teaching_file else f" onto the demo's {teaching}")
        ],
        "current_step_description": "parameters mapped; merging the program",
    }
    if unmapped:
        update["warnings"] = [f"not mapped: {', '.join(sorted(set(unmapped)))}"]
    return update


@node(
    reads=["mapped_program", "run_output_directory", "config"],
    writes=[
        "final_flow_xml_path",
        "completion_status",
        "messages",
        "current_step_description",
        "is_error",
        "error_message",
        "failed_step",
        "module_steps_accepted",
    ],
)
def merge_xml(state: SasState, ctx: Context) -> dict[str, Any]:
    """Compile the whole program, validate it, write ``flow.xml`` atomically."""
    from ...errors import InvalidProgramError
    from ...robot.compile import compile_program
    from ...robot.validate import validate_xml

    program = state.mapped_program or Program()
    catalog = catalog_for(state.config)
    try:
        text = compile_program(program, catalog=catalog, deterministic=True)
    except InvalidProgramError as exc:
        listed = "; ".join(str(p) for p in exc.problems[:10])
        return _fail(
            MERGE_XML, f"The program is not valid ({len(exc.problems)} problem(s)): {listed}"
        )
    errors = [p for p in validate_xml(text, catalog=catalog) if p.severity == "error"]
    if errors:
        return _fail(
            MERGE_XML, "The merged XML failed validation: " + "; ".join(map(str, errors[:10]))
        )
    path = Path(state.run_output_directory or ".") / "flow.xml"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
    except OSError as exc:
        return _fail(MERGE_XML, f"Cannot write {path}: {exc.strerror or exc}; fix it, then retry.")
    return {
        "final_flow_xml_path": str(path),
        "completion_status": "completed_success",
        "messages": [f"assistant: robot program written to {path}"],
        "current_step_description": "done",
    }
