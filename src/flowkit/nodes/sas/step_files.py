"""Step 3's per-step files (seed 002): each block of a task's module steps in a file of its own,
``steps/NN_<task>/block_<step>_<type>.xml``, beside the per-task files.

A block's file holds the block with its fields and conditions; bodies are left empty (their
steps have files of their own), as in the origin's per-block files, so each is a *fragment*
(``validate_xml(..., fragment=True)``). Ids are those of the task's file, so a block can be
found in ``tasks/NN_<task>.xml`` and in the merged ``flow.xml`` by its id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ...errors import FlowkitError
from ...foundation._atomic import write_atomically
from ...robot.catalog import Catalog
from ...robot.steps import Step, TaskSteps
from ...sas.state import GeneratedStepXml

__all__ = ["numbered_steps", "remove_stale_step_files", "write_step_files"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def numbered_steps(chain: Sequence[Step]) -> list[tuple[str, Step]]:
    """Every statement step of ``chain`` with its number as in the text form (``4.1`` = the
    first step in the bodies of step 4; numbering runs on across an if's bodies)."""
    found: list[tuple[str, Step]] = []
    pending: list[tuple[Sequence[Step], str]] = [(chain, "")]
    while pending:
        steps, prefix = pending.pop(0)
        for index, step in enumerate(steps, 1):
            number = f"{prefix}{index}"
            found.append((number, step))
            bodies = [item for item in step.inputs.values() if isinstance(item, list)]
            flat = [s for body in bodies for s in body]
            if flat:
                pending.append((flat, f"{number}."))
    return sorted(found, key=lambda item: [int(n) for n in item[0].split(".")])


def remove_stale_step_files(out: Path) -> None:
    """Remove what an earlier run wrote under ``out`` (only our ``NN_*/block_*.xml``)."""
    for stale in out.glob("[0-9][0-9]_*/block_*.xml") if out.is_dir() else ():
        stale.unlink(missing_ok=True)


def write_step_files(
    task: TaskSteps, compiled: Sequence[Step], folder: Path, catalog: Catalog
) -> list[GeneratedStepXml]:
    """One file per step of ``task``; ``compiled`` is the same chain as read back from the
    task's XML (it carries the ids the compiler gave). A step that cannot be written is a
    ``failure`` entry with the reason; the others are still written."""
    from ...robot.compile import compile_program

    written: list[GeneratedStepXml] = []
    originals = numbered_steps(task.steps)
    for (number, original), (_, block) in zip(originals, numbered_steps(compiled), strict=True):
        path = folder / f"block_{number.replace('.', '_')}_{_UNSAFE.sub('_', block.type)}.xml"
        entry = GeneratedStepXml(
            step=number,
            block_id=block.id,
            type=block.type,
            source_description=original.source,
            path=str(path),
        )
        alone = block.model_copy(
            update={
                "inputs": {
                    name: ([] if isinstance(item, list) else item)
                    for name, item in block.inputs.items()
                }
            }
        )
        try:
            text = compile_program([alone], catalog=catalog, deterministic=True, validate=False)
            folder.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text)
        except (FlowkitError, OSError) as exc:
            entry = entry.model_copy(update={"status": "failure", "error_message": str(exc)})
        written.append(entry)
    return written
