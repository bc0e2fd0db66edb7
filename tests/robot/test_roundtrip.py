"""Round trips over the real programs: XML -> steps -> XML, steps -> JSON -> steps, and
steps -> text -> steps, for every hand-written program (and a report on every other file)."""

from __future__ import annotations

import pytest

from flowkit.robot import (
    Program,
    canonical_diff,
    canonical_equal,
    compile_program,
    decompile,
    without_editor_attributes,
)
from flowkit.robot.text import parse_program, render_program

from .conftest import FLOWS, HAND_WRITTEN, other_reference_files, reference_file

OTHERS = other_reference_files()
# Generator outputs that round-trip exactly; the rest differ in ways the editor would also
# change (x/y and defaults the originals lack, fields written in template order).
OTHERS_EQUAL = {
    "synced_files/flow.xml",
    "synced_files/llm_test/program/flow-old.xml",
}
OTHERS_EQUAL_BUT_FIELD_ORDER = {
    "synced_files/llm_test/program/flow.xml",
    "synced_files/llm_test/program/PARTflow.xml",
    "synced_files/llm_test/program/flow_main_wrong.xml",
}


def test_the_shared_reference_folder_is_beside_the_clone() -> None:
    assert reference_file("FLOWS.md").is_file()
    assert len(OTHERS) >= 40, f"expected the generator outputs under {FLOWS}"


@pytest.mark.parametrize("relative", HAND_WRITTEN, ids=HAND_WRITTEN)
def test_hand_written_program_compiles_back_to_the_same_document(relative: str) -> None:
    path = reference_file(relative)
    program = decompile(path)
    xml = compile_program(program)  # validates too: a hand-written program has no errors
    assert canonical_equal(path, xml), canonical_diff(path, xml, names=(relative, "compiled"))


@pytest.mark.parametrize("relative", OTHERS, ids=OTHERS)
def test_other_reference_file_round_trip_is_reported(
    relative: str, record_property: pytest.RecordProperty
) -> None:
    path = reference_file(relative)
    xml = compile_program(decompile(path), validate=False)
    if canonical_equal(path, xml):
        result = "equal"
    elif canonical_equal(path, xml, ignore_field_order=True):
        result = "equal except field order"
    elif canonical_equal(path, xml, ignore_attributes=("x", "y")):
        result = "differs: x/y added (the original stack has no position)"
    else:
        changed = [
            line
            for line in canonical_diff(path, xml).splitlines()
            if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))
        ]
        result = f"differs: {changed[0].strip()}"
    record_property("round_trip", result)
    print(f"{relative}: {result}")
    if relative in OTHERS_EQUAL:
        assert result == "equal"
    elif relative in OTHERS_EQUAL_BUT_FIELD_ORDER:
        assert result == "equal except field order"
    else:
        assert result.startswith("differs")


@pytest.mark.parametrize("relative", HAND_WRITTEN + OTHERS, ids=HAND_WRITTEN + OTHERS)
def test_program_survives_json_and_text(relative: str) -> None:
    program = decompile(reference_file(relative))
    assert Program.from_json(program.to_json()) == program
    stripped = Program(stacks=[without_editor_attributes(s) for s in program.stacks])
    assert parse_program(render_program(program)) == stripped
