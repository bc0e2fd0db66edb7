"""Where the shipped schema files live: the repository's ``schemas/`` folder.

An installed package may carry a copy as ``flowkit/_schemas``; a source checkout (or an
editable install) uses ``<repo>/schemas`` next to ``src/``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from flowkit.errors import RobotProgramError

__all__ = ["schema_path"]

_PACKAGE = Path(__file__).resolve().parents[1]


@cache
def _schemas_dir() -> Path:
    for candidate in (_PACKAGE / "_schemas", _PACKAGE.parents[1] / "schemas"):
        if (candidate / "blockly-robot.xsd").is_file():
            return candidate
    raise RobotProgramError(
        "flowkit's schema files (blockly-robot.xsd, robot-blocks/*.json) are missing; "
        "reinstall flowkit, or run from a checkout that has the schemas/ folder."
    )


def schema_path(*parts: str) -> Path:
    """The path of a shipped schema file, e.g. ``schema_path("blockly-robot.xsd")``."""
    return _schemas_dir().joinpath(*parts)
