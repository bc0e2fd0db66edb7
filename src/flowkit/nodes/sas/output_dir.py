"""Where a sas run writes its files (seed 000 §1.2.A), without ever touching the package.

A provided directory is used if it is one or can be created; a path that exists but is not a
directory is reported and skipped; otherwise the run gets ``<base>/run_<timestamp>``. The base
defaults to ``$FLOWKIT_OUTPUT_DIR``, else the user's data folder, never the source tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ...robot._tables import TeachingTable, same_file

__all__ = ["OutputChoice", "choose_output_directory", "default_base", "holds_teaching_table"]

_PACKAGE = Path(__file__).resolve().parents[2]  # .../flowkit


@dataclass(frozen=True)
class OutputChoice:
    path: Path | None
    warnings: list[str] = field(default_factory=list)


def default_base() -> Path:
    env = os.environ.get("FLOWKIT_OUTPUT_DIR")
    if env:
        return Path(env)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "flowkit" / "sas-runs"


def _inside_package(path: Path) -> bool:
    try:
        path.resolve().relative_to(_PACKAGE)
    except ValueError:
        return False
    return True


def _make(path: Path, warnings: list[str], what: str) -> Path | None:
    if _inside_package(path):
        warnings.append(f"{what} {path} is inside the flowkit package; not writing there")
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        warnings.append(f"{what} {path} could not be created: {exc.strerror or exc}")
        return None
    return path.resolve()


def choose_output_directory(provided: str | None, base: str | None, now: datetime) -> OutputChoice:
    """Apply the seed's rules; ``path`` is ``None`` only if no directory could be made."""
    warnings: list[str] = []
    if provided:
        candidate = Path(provided).expanduser()
        if candidate.exists() and not candidate.is_dir():
            warnings.append(
                f"output path {candidate} exists but is not a directory; using a "
                "fresh run directory instead"
            )
        else:
            made = _make(candidate, warnings, "output directory")
            if made is not None:
                return OutputChoice(made, warnings)
    root = Path(base).expanduser() if base else default_base()
    stamp = now.strftime("%Y%m%d_%H%M%S_%f")
    candidate = root / f"run_{stamp}"
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = root / f"run_{stamp}_{suffix}"
    return OutputChoice(_make(candidate, warnings, "run directory"), warnings)


def holds_teaching_table(folder: str | os.PathLike[str], teaching_file: str | None) -> bool:
    """Whether ``folder`` holds the input ``teaching_file`` as the file parameter mapping
    writes the updated table to (``teaching.yaml``): that run could only fail at the end, as
    an input table is never modified in place, so it is refused at the start."""
    if not teaching_file:
        return False
    return same_file(Path(folder) / TeachingTable.filename, Path(teaching_file))
