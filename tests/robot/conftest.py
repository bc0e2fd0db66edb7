"""Fixtures of the robot toolkit tests: programs and tables the project owns, and the shared
reference corpus where it is present.

The project's own fixtures live in ``fixtures/`` (see its README): robot programs written for
these tests in the editor's XML form, generator-style files, and a set of parameter tables.
Every behaviour the toolkit promises is tested on them, so a fresh clone tests everything.

The reference corpus (``../shared/reference`` beside the repository clone: the programs people
made in the editor, the generator outputs and the block templates) is read in place, never
copied. Tests over it get their files from ``reference_file``, which skips the test with a reason
naming the expected path where the corpus is missing, or fails it where
``FLOWKIT_REQUIRE_EXTERNAL`` is set, as in CI (``tests/_external.py``). Their parameter lists come
from ``reference_params``, so they show up as one skipped item rather than vanishing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _external import require

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROGRAMS = FIXTURES / "programs"
#: A cell's teaching points, number variables and flags, in the editor's export form.
TABLES = FIXTURES / "tables" / "gear_cell"

#: Our programs in the editor's form (ids, positions, block numbers, timeouts): valid, and
#: compiled back to the same document.
OWN_PROGRAMS = [
    "pick_and_place/flow.xml",
    "guarded_cycle/flow.xml",
    "counters_and_flags/flow.xml",
    "swing_arm_cell/flow.xml",
]
#: Our generator-style files and what a round trip makes of them.
OWN_GENERATED = {
    "generated/flow_equal.xml": "equal",
    "generated/flow_fields_reordered.xml": "equal",
    "generated/block_moveL.xml": "equal",
    "generated/relation.xml": "equal",
}
#: The assembly cell of ``swingarm_example.py`` as a hand-made editor document.
OWN_SWINGARM = "swing_arm_cell/flow.xml"


def own_program(relative: str) -> Path:
    """One of our program fixtures (always present)."""
    path = PROGRAMS / relative
    assert path.is_file(), f"fixture {path} is missing from the repository"
    return path


REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference"
FLOWS = REFERENCE / "flows"
TEMPLATES = REFERENCE / "robot-blocks" / "quick-fcpr-new"
#: The parameter of a corpus test where the corpus is missing: one item, reported as skipped.
CORPUS_MISSING = "(reference corpus missing)"

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
    """A file of the reference corpus. Skips the test (fails it under
    ``FLOWKIT_REQUIRE_EXTERNAL``) when the corpus is missing; fails it when the corpus is there
    but this file is not, since an incomplete corpus is a broken setup, not an absent one."""
    __tracebackhide__ = True  # the skip is reported at the test's line, naming the test
    require(
        base.is_dir(),
        f"the shared reference corpus at {base} (../shared/reference beside the repository clone)",
    )
    path = base / relative
    if not path.is_file():
        pytest.fail(f"Reference file {path} is missing from the shared reference folder.")
    return path


def reference_params(names: list[str], base: Path = FLOWS) -> list[str]:
    """Parameters of a test over corpus files: ``names`` where the corpus is present, else one
    placeholder, so the test is reported as skipped (by ``reference_file``) and never vanishes."""
    return names if base.is_dir() else [CORPUS_MISSING]


def other_reference_files() -> list[str]:
    """Every other .xml under flows/ (generator outputs, relation skeletons, single blocks)."""
    if not FLOWS.is_dir():
        return [CORPUS_MISSING]
    found = sorted(str(p.relative_to(FLOWS)) for p in FLOWS.rglob("*.xml"))
    return [f for f in found if f not in HAND_WRITTEN]
