"""``flowkit sas compile | validate | decompile``: the robot-program tools, no LLM, no store.

``compile`` maps logical point names onto a teaching table first when ``--teaching`` is given
(the updated table and the mapping report are written beside the output, never over the
input table, and each file written is named). Results go to stdout, errors to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from ..errors import CatalogError, FlowkitError, InvalidProgramError
from ..foundation._plain import shorten
from ..robot.catalog import Catalog
from ..terminal.errors import CommandError

__all__ = ["compile_file", "decompile_file", "validate_file"]


def compile_file(
    steps: str,
    output: str,
    teaching: str | None,
    out: TextIO,
    err: TextIO | None = None,
    *,
    fragment: bool = False,
    catalog: str | None = None,
) -> int:
    """Compile ``steps`` into ``output``, checked against the shipped block catalog merged
    with ``catalog`` (a file of your own, as a run's ``--catalog``)."""
    from ..foundation._atomic import write_atomically
    from ..robot.cli import compile_command, load_steps, report_problems, writable_output
    from ..robot.compile import compile_program, to_program
    from ..robot.params import apply_teaching

    err = err or sys.stderr
    blocks = _catalog(catalog)
    if teaching is None:
        return compile_command(steps, output, fragment=fragment, catalog=blocks, out=out, err=err)
    try:
        target = writable_output(output)
        program, report = apply_teaching(
            to_program(load_steps(steps, blocks)), teaching, target.parent, catalog=blocks
        )
        xml = compile_program(program, catalog=blocks, deterministic=True, fragment=fragment)
        write_atomically(target, xml)
    except InvalidProgramError as exc:
        report_problems(f"{steps}: not compiled", exc, err)
        return 1
    except FlowkitError as exc:
        err.write(f"flowkit: error: {exc}\n")
        return 1
    except OSError as exc:
        err.write(
            f"flowkit: error: Cannot write {exc.filename or output}: {exc.strerror or exc}.\n"
        )
        return 1
    counts = ", ".join(f"{n} {action}" for action, n in sorted(report.counts().items()))
    out.write(f"wrote {output} (parameters: {counts or 'none'})\n")
    out.writelines(f"wrote {path}\n" for path in _written_beside(Path(teaching), target.parent))
    return 0


def _written_beside(teaching: Path, folder: Path) -> list[Path]:
    """The files ``apply_teaching`` writes next to the program (see its docstring)."""
    from ..robot._tables import FlagTable, NumberTable, TeachingTable

    names = [TeachingTable.filename]
    names += [
        t.filename for t in (NumberTable, FlagTable) if (teaching.parent / t.filename).is_file()
    ]
    return [folder / name for name in (*names, "parameter_mapping.md", "parameter_mapping.json")]


def validate_file(
    path: str,
    out: TextIO,
    *,
    as_json: bool = False,
    fragment: bool = False,
    catalog: str | None = None,
    err: TextIO | None = None,
) -> int:
    """Validate the program at ``path`` against the shipped block catalog merged with
    ``catalog`` (a file of your own, as a run's ``--catalog``)."""
    from ..robot.cli import validate_command

    return validate_command(
        path,
        as_json=as_json,
        fragment=fragment,
        catalog=_catalog(catalog),
        out=out,
        err=err or sys.stderr,
    )


def _catalog(path: str | None) -> Catalog:
    """The catalog for ``--catalog``; a file that cannot be used is a usage error (exit 2)."""
    from .catalogs import catalog_from_file

    if path is not None and not Path(path).is_file():
        raise CommandError(f"--catalog {shorten(path)}: no such file.", code=2)
    try:
        return catalog_from_file(path)
    except CatalogError as exc:
        raise CommandError(f"--catalog {shorten(path or '')}: {exc}", code=2) from exc


def decompile_file(path: str, output: str, out: TextIO, err: TextIO | None = None) -> int:
    from ..robot.cli import decompile_command

    return decompile_command(path, output, out=out, err=err or sys.stderr)
