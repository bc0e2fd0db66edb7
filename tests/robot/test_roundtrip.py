"""Round trips: XML -> steps -> XML, steps -> JSON -> steps, and steps -> text -> steps, for our
own programs always, and for every program of the reference corpus where it is present (with a
report on every other file there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.robot import (
    Program,
    Step,
    canonical_diff,
    canonical_equal,
    compile_program,
    decompile,
    default_catalog,
    without_editor_attributes,
)
from flowkit.robot._text_annotate import text_markup
from flowkit.robot._text_document import text_document
from flowkit.robot.text import parse_program, render_program

from .conftest import (
    FLOWS,
    HAND_WRITTEN,
    OWN_GENERATED,
    OWN_PROGRAMS,
    other_reference_files,
    own_program,
    reference_file,
    reference_params,
)

OTHERS = other_reference_files()
# Files whose round trips are not exact, with the reason: none. Every program of the reference
# set and of our fixtures comes back byte for byte through the JSON form (namespace prefixes,
# XML comments inside the root, ` />`, attribute and child order, partial field lists and odd
# indentation are kept as ``Markup``/``Document``), and through the text form up to its
# whitespace normalisation (docs/robot-steps.md).
OTHERS_JSON_NOT_EXACT: dict[str, str] = {}
OWN_JSON_NOT_EXACT: dict[str, str] = {}


def _round_trip_result(path: Path) -> str:
    """How a program compares with its decompiled-and-compiled self, in a few words."""
    xml = compile_program(decompile(path), validate=False)
    if canonical_equal(path, xml):
        return "equal"
    if canonical_equal(path, xml, ignore_field_order=True):
        return "equal except field order"
    if canonical_equal(path, xml, ignore_attributes=("x", "y")):
        return "differs: x/y added (the original stack has no position)"
    changed = [
        line
        for line in canonical_diff(path, xml).splitlines()
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))
    ]
    return f"differs: {changed[0].strip()}"


def _json_bytes(path: Path) -> str:
    """The program read into steps, through JSON and back, compiled as it was."""
    program = Program.from_json(decompile(path).to_json())
    return compile_program(program, validate=False)


def _unformatted(program: Program) -> Program:
    """``program`` without what the text form normalises: whitespace between elements (the
    compiler indents) and the inside of empty blocks (``<block ...></block>`` becomes
    ``<block .../>``); declaration, comments, prefix and order stay."""

    def plain(step: Step) -> Step:
        inputs = {
            name: plain(item) if isinstance(item, Step) else [plain(s) for s in item]
            for name, item in step.inputs.items()
        }
        update = {"inputs": inputs, "empty_text": None, "markup": text_markup(step.markup)}
        return step.model_copy(update=update)

    stacks = [[plain(step) for step in stack] for stack in program.stacks]
    return Program(stacks=stacks, document=text_document(program.document))


def _survives_json_and_text(path: Path) -> None:
    program = decompile(path)
    assert Program.from_json(program.to_json()) == program
    # The text form keeps the editor layout in its annotations, so the text gives the program
    # back up to the whitespace normalisation, and compiles to the same document up to it.
    text = render_program(program)
    assert parse_program(text) == _unformatted(program)
    via_text = compile_program(parse_program(text), validate=False)
    assert via_text == compile_program(_unformatted(program), validate=False)
    assert canonical_equal(via_text, compile_program(program, validate=False))
    stripped = Program(stacks=[without_editor_attributes(s) for s in program.stacks])
    assert parse_program(render_program(program, annotations=False)) == stripped


def _text_compiles_to_the_document(path: Path) -> None:
    xml = compile_program(parse_program(render_program(decompile(path))))
    assert canonical_equal(path, xml), canonical_diff(path, xml, names=(str(path), "via text"))


# --- our own programs: always -------------------------------------------------------------


def test_own_programs_use_every_block_type_of_the_catalog() -> None:
    used = {step.type for name in OWN_PROGRAMS for step in decompile(own_program(name)).walk()}
    assert used == set(default_catalog().blocks)


@pytest.mark.parametrize("relative", OWN_PROGRAMS)
def test_own_program_compiles_back_to_the_same_document(relative: str) -> None:
    path = own_program(relative)
    xml = compile_program(decompile(path))  # validates too: our programs have no errors
    assert canonical_equal(path, xml), canonical_diff(path, xml, names=(relative, "compiled"))


@pytest.mark.parametrize("relative", sorted(OWN_GENERATED))
def test_own_generator_style_file_round_trip_is_reported(relative: str) -> None:
    result = _round_trip_result(own_program(relative))
    assert result.startswith(OWN_GENERATED[relative]), result


@pytest.mark.parametrize("relative", OWN_PROGRAMS + sorted(OWN_GENERATED))
def test_own_program_survives_json_and_text(relative: str) -> None:
    _survives_json_and_text(own_program(relative))


@pytest.mark.parametrize("relative", OWN_PROGRAMS + sorted(OWN_GENERATED))
def test_own_program_round_trips_byte_exact_through_json(relative: str) -> None:
    path = own_program(relative)
    exact = _json_bytes(path) == path.read_text(encoding="utf-8")
    assert exact != (relative in OWN_JSON_NOT_EXACT), OWN_JSON_NOT_EXACT.get(relative)


@pytest.mark.parametrize("relative", OWN_PROGRAMS)
def test_own_program_through_the_text_form_compiles_to_the_same_document(relative: str) -> None:
    _text_compiles_to_the_document(own_program(relative))


def test_a_changed_document_is_not_called_equal() -> None:
    path = own_program("pick_and_place/flow.xml")
    changed = path.read_text(encoding="utf-8").replace(">P3<", ">P30<")
    assert not canonical_equal(path, changed)
    changed_lines = [
        line[0] + line[1:].strip()
        for line in canonical_diff(path, changed).splitlines()
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))
    ]
    assert changed_lines == [
        '-<field name="point_name_list"> "P3"',
        '+<field name="point_name_list"> "P30"',
    ]


# --- the reference corpus: where it is present ------------------------------------------------


def test_the_reference_corpus_has_the_expected_files() -> None:
    assert reference_file("FLOWS.md").is_file()
    assert len(OTHERS) >= 40, f"expected the generator outputs under {FLOWS}"


@pytest.mark.parametrize("relative", reference_params(HAND_WRITTEN))
def test_hand_written_program_compiles_back_to_the_same_document(relative: str) -> None:
    path = reference_file(relative)
    program = decompile(path)
    xml = compile_program(program)  # validates too: a hand-written program has no errors
    assert canonical_equal(path, xml), canonical_diff(path, xml, names=(relative, "compiled"))


@pytest.mark.parametrize("relative", reference_params(HAND_WRITTEN))
def test_hand_written_program_through_the_text_form_compiles_to_the_same_document(
    relative: str,
) -> None:
    _text_compiles_to_the_document(reference_file(relative))


@pytest.mark.parametrize("relative", reference_params(HAND_WRITTEN))
def test_hand_written_program_round_trips_byte_exact_through_json(relative: str) -> None:
    path = reference_file(relative)
    assert _json_bytes(path) == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("relative", OTHERS)
def test_other_reference_file_json_round_trip_is_byte_exact_where_listed(
    relative: str, record_property: pytest.RecordProperty
) -> None:
    path = reference_file(relative)
    exact = _json_bytes(path) == path.read_text(encoding="utf-8")
    record_property("json_byte_exact", exact)
    assert exact != (relative in OTHERS_JSON_NOT_EXACT), OTHERS_JSON_NOT_EXACT.get(relative)


@pytest.mark.parametrize("relative", OTHERS)
def test_other_reference_file_round_trip_is_reported(
    relative: str, record_property: pytest.RecordProperty
) -> None:
    result = _round_trip_result(reference_file(relative))
    record_property("round_trip", result)
    assert result == "equal"


@pytest.mark.parametrize("relative", reference_params(HAND_WRITTEN + OTHERS))
def test_program_survives_json_and_text(relative: str) -> None:
    _survives_json_and_text(reference_file(relative))
