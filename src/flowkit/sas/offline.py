"""``flowkit sas compile | validate | decompile``: the robot-program tools, no LLM, no store.

``compile`` maps logical point names onto a teaching table first when ``--teaching`` is given
(the updated table and the mapping report are written beside the output, never over the
input table).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from ..errors import FlowkitError, InvalidProgramError

__all__ = ["compile_file", "decompile_file", "validate_file"]


def compile_file(steps: str, output: str, teaching: str | None, out: TextIO) -> int:
    from .._atomic import write_atomically
    from ..robot.cli import compile_command, load_steps
    from ..robot.compile import compile_program, to_program
    from ..robot.params import apply_teaching

    if teaching is None:
        return compile_command(steps, output)
    target = Path(output)
    try:
        program, report = apply_teaching(to_program(load_steps(steps)), teaching, target.parent)
        xml = compile_program(program, deterministic=True)
    except InvalidProgramError as exc:
        out.write(f"{steps}: not compiled, {len(exc.problems)} problem(s):\n")
        out.writelines(f"  {problem}\n" for problem in exc.problems)
        return 1
    except FlowkitError as exc:
        out.write(f"error: {exc}\n")
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, xml)
    counts = ", ".join(f"{n} {action}" for action, n in sorted(report.counts().items()))
    out.write(f"wrote {output} (parameters: {counts or 'none'}; report in {target.parent})\n")
    return 0


def validate_file(path: str, out: TextIO) -> int:
    from ..robot.cli import validate_command

    return validate_command(path)


def decompile_file(path: str, output: str, out: TextIO) -> int:
    from ..robot.cli import decompile_command

    return decompile_command(path, output)
