"""Hostile program input: huge attribute lists, floods of problems, NUL characters, and
file names that are not regular files. Each is a typed error or a short problem list, fast
(the test's own timeout bounds it; nothing is timed here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowkit.errors import InvalidProgramError, RobotProgramError
from flowkit.robot.decompile import decompile
from flowkit.robot.validate import MAX_PROBLEMS, validate_xml

pytestmark = pytest.mark.timeout(60)

NS = "https://developers.google.com/blockly/xml"
BLOCK = '<block type="set_motor"{attrs}><field name="STATE">on</field></block>'


def document(body: str) -> str:
    return f'<xml xmlns="{NS}">{body}</xml>'


def test_a_48_kib_element_with_thousands_of_attributes_is_one_problem() -> None:
    attrs = "".join(f' a{i}="1"' for i in range(5200))
    xml = document(BLOCK.format(attrs=attrs))
    assert len(xml) > 48 * 1024
    (problem,) = validate_xml(xml)
    assert problem.code == "too_many_attributes" and "5201 attributes" in problem.message
    assert problem.line == 1


def test_many_elements_with_many_bad_attributes_stay_fast_and_capped() -> None:
    attrs = "".join(f' a{i}="1"' for i in range(60))
    xml = document(BLOCK.format(attrs=attrs) * 300)
    assert len(xml) > 48 * 1024
    problems = validate_xml(xml)
    assert 0 < len(problems) <= MAX_PROBLEMS + 1
    assert all(p.severity == "error" for p in problems)


def test_the_problems_listed_are_capped_with_a_last_one_saying_so() -> None:
    xml = document(BLOCK.format(attrs=' bad="1" worse="2"') * 400)
    problems = validate_xml(xml)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].code == "too_many_problems"


@pytest.mark.parametrize("text", [document(BLOCK.format(attrs="") + "\x00"), "<xml>\x00</xml>"])
def test_a_nul_in_the_xml_is_a_problem_with_its_line(text: str) -> None:
    (problem,) = validate_xml(text)
    assert problem.code == "xml_syntax" and "NUL" in problem.message and problem.line == 1
    with pytest.raises(InvalidProgramError, match="NUL"):
        decompile(text.encode())


@pytest.mark.parametrize("call", [validate_xml, decompile])
def test_a_str_is_program_text_never_a_file_name(call: object, tmp_path: Path) -> None:
    path = tmp_path / "flow.xml"
    path.write_text(document(BLOCK.format(attrs="")), encoding="utf-8")
    assert callable(call)
    with pytest.raises(RobotProgramError, match=r"not XML .*pass Path\(\.\.\.\) or path="):
        call(str(path))
    with pytest.raises(RobotProgramError, match="not XML"):
        call("/dev/zero")
    assert call(path) is not None
    assert call(path=str(path)) is not None


@pytest.mark.parametrize("call", [validate_xml, decompile])
def test_fifos_and_devices_are_refused_without_blocking(call: object, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)
    assert callable(call)
    for target in (fifo, Path("/dev/zero")):
        with pytest.raises(RobotProgramError, match="not a regular file"):
            call(target)
        with pytest.raises(RobotProgramError, match="not a regular file"):
            call(path=str(target))


def test_text_and_path_together_or_neither_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RobotProgramError, match="both"):
        validate_xml(document(""), path=tmp_path / "x.xml")
    with pytest.raises(RobotProgramError, match="neither"):
        decompile()
