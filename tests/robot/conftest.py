"""Fixtures of the robot toolkit tests: the shared reference programs beside the clone.

The reference folder is read in place (``../shared/reference`` next to the repository), never
copied. If it is missing the tests fail and say where it should be; they do not skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference"
FLOWS = REFERENCE / "flows"
TEMPLATES = REFERENCE / "robot-blocks" / "quick-fcpr-new"

#: The programs people made in the editor (FLOWS.md section 1).
HAND_WRITTEN = [
    "node_database/program/test/flow.xml",
    "node_database/program/2point/flow.xml",
    "node_database/program/KitamuraTest20250416/flow.xml",
    "document_database/flow.xml",
    "node_database/program/Furuta_Test/flow.xml",
    "node_database/program/program1/flow.xml",
    "node_database/program/Furuta_Test2/flow.xml",
    "node_database/program/Furuta_Test20250404-1/flow.xml",
    "node_database/program/Furuta_Test20250404-2/flow.xml",
    "node_database/program/Furuta_Test20250404-3/flow.xml",
    "node_database/program/Furuta_Test20250407-11bk/flow.xml",
    "node_database/program/Swing_Arm/flow.xml",
    "node_database/program/FurutaTest20250408/flow.xml",
    "node_database/program/FurutaTest20250408B/flow.xml",
    "node_database/program/FurutaTest20250409/flow.xml",
    "node_database/program/FurutaTest20250410/flow.xml",
    "node_database/program/FurutaTest20250410b/flow.xml",
    "node_database/program/FurutaTest20250411/flow.xml",
    "node_database/program/FurutaTest20250414/flow.xml",
    "node_database/program/FurutaTest20250415/flow.xml",
    "node_database/program/FurutaTest20250421/flow.xml",
    "node_database/program/FurutaTest20250425/flow.xml",
    "flow_database/SwingArm20250510/flow.xml",
]
SWINGARM = "flow_database/SwingArm20250510/flow.xml"


def reference_file(relative: str, base: Path = FLOWS) -> Path:
    """The reference file, or a test failure that says what is missing and where."""
    path = base / relative
    if not base.is_dir():
        pytest.fail(
            f"The shared reference folder {base} is missing. The robot tests read the real "
            "programs from ../shared/reference beside the repository clone; put it there."
        )
    if not path.is_file():
        pytest.fail(f"Reference file {path} is missing from the shared reference folder.")
    return path


def other_reference_files() -> list[str]:
    """Every other .xml under flows/ (generator outputs, relation skeletons, single blocks)."""
    if not FLOWS.is_dir():
        # One placeholder, so the parametrized tests run and fail instead of being skipped.
        return ["(shared reference folder missing)"]
    found = sorted(str(p.relative_to(FLOWS)) for p in FLOWS.rglob("*.xml"))
    return [f for f in found if f not in HAND_WRITTEN]
