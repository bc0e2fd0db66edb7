"""Parts of programs (procedure files, loop fragments with an empty body, relation files)
validate and compile with ``fragment=True`` / ``--fragment``: what a part lacks is a warning,
what it holds is checked as strictly as in a whole program."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.cli import main
from flowkit.errors import InvalidProgramError
from flowkit.robot import errors_only, validate_xml
from flowkit.robot.compile import compile_program
from flowkit.robot.decompile import decompile
from flowkit.robot.validate import validate_steps

from .conftest import own_program, reference_file, reference_params

#: The fragment files of the reference corpus, all refused without ``fragment``.
REFERENCE_FRAGMENTS = [
    "flow_database/result/5.15_test/block_5_loop.xml",
    "flow_database/result/5.15_test/relation.xml",
    "synced_files/llm_test/program/07_Place_BearingHousing_BH_To_RMC_flow.xml",
    "synced_files/llm_test/program/PARTflow.xml",
    "synced_files/llm_test/program/flow_part.xml",
    "synced_files/llm_test/program/pickflow.xml",
    "test_database/test_robot_flow/20250529_052110/block_uuid_4_loop.xml",
    "test_database/test_robot_flow/20250529_052110/relation.xml",
    "test_database/test_robot_flow/20250529_072410/block_uuid_4_loop.xml",
    "test_database/test_robot_flow/20250529_072410/relation.xml",
    "test_database/test_robot_flow/20250529_073104/block_uuid_8_loop.xml",
    "test_database/test_robot_flow/20250529_073104/relation.xml",
    "test_database/test_robot_flow/block_uuid_4_loop.xml",
    "test_database/test_robot_flow/relation.xml",
]
#: A whole program with a real error (a block after a loop): a fragment too, still refused.
MAIN_WRONG = "synced_files/llm_test/program/flow_main_wrong.xml"

OWN_FRAGMENTS = [
    "fragments/procedure_file.xml",
    "fragments/loop_fragment.xml",
    "fragments/relation.xml",
]


def _codes(problems: list[object]) -> set[str]:
    return {p.code for p in problems}  # type: ignore[attr-defined]


@pytest.mark.parametrize("relative", OWN_FRAGMENTS)
def test_our_fragments_are_refused_whole_and_valid_as_parts(relative: str) -> None:
    path = own_program(relative)
    assert errors_only(validate_xml(path))
    problems = validate_xml(path, fragment=True)
    assert not errors_only(problems)
    assert problems  # what the part lacks is still said, as warnings


def test_what_a_part_lacks_becomes_warnings_with_the_same_codes() -> None:
    whole = validate_xml(own_program("fragments/relation.xml"))
    part = validate_xml(own_program("fragments/relation.xml"), fragment=True)
    assert [(p.code, p.line) for p in whole] == [(p.code, p.line) for p in part]
    assert {p.severity for p in part} == {"warning"}
    assert {"missing_field", "missing_body", "unknown_block_type"} <= _codes(part)


def test_a_procedure_file_calling_another_file_and_mutation_after_fields() -> None:
    part = validate_xml(own_program("fragments/procedure_file.xml"), fragment=True)
    assert {(p.code, p.severity) for p in part} == {
        ("xsd", "warning"),
        ("undefined_procedure", "warning"),
        ("no_main_program", "warning"),
    }


def test_what_a_part_holds_is_checked_as_strictly_as_a_whole_program() -> None:
    part = validate_xml(own_program("fragments/broken_part.xml"), fragment=True)
    assert _codes(errors_only(part)) == {"loop_with_next", "bad_field_value"}


def test_steps_of_a_fragment_compile_only_as_a_fragment() -> None:
    program = decompile(own_program("fragments/loop_fragment.xml"))
    with pytest.raises(InvalidProgramError) as caught:
        compile_program(program)
    assert _codes(list(caught.value.problems)) == {"missing_body"}
    xml = compile_program(program, fragment=True)
    assert 'type="loop"' in xml
    assert not errors_only(validate_xml(xml, fragment=True))
    assert not errors_only(validate_steps(program, fragment=True))


def test_cli_validate_and_compile_take_fragment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = own_program("fragments/loop_fragment.xml")
    assert main(["sas", "validate", str(path)]) == 1
    assert main(["sas", "validate", "--fragment", str(path)]) == 0
    assert "valid fragment (0 error(s), 3 warning(s))" in capsys.readouterr().out
    steps = tmp_path / "loop.txt"
    assert main(["sas", "decompile", str(path), "-o", str(steps)]) == 0
    out = tmp_path / "loop.xml"
    assert main(["sas", "compile", str(steps), "-o", str(out)]) == 1
    assert main(["sas", "compile", "--fragment", str(steps), "-o", str(out)]) == 0
    assert out.is_file()


@pytest.mark.parametrize("relative", reference_params(REFERENCE_FRAGMENTS))
def test_the_reference_fragments_validate_and_compile_as_fragments(relative: str) -> None:
    path = reference_file(relative)
    assert errors_only(validate_xml(path)), "refused as a whole program"
    assert not errors_only(validate_xml(path, fragment=True))
    program = decompile(path)
    xml = compile_program(program, fragment=True, deterministic=True)
    assert not errors_only(validate_xml(xml, fragment=True))


def test_a_wrong_main_program_stays_refused_as_a_fragment() -> None:
    path = reference_file(MAIN_WRONG)
    assert _codes(errors_only(validate_xml(path, fragment=True))) == {"loop_with_next"}
