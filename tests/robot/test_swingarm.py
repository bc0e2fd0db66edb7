"""The §10 assembly cell example, built from module steps, has the structure of the cell drawn
in the editor: our own document of it always, the hand-written reference flow where present."""

from __future__ import annotations

from pathlib import Path

from flowkit.robot import compile_program, decompile, validate_steps, validate_xml
from flowkit.robot.text import parse_tasks, render_tasks

from .conftest import OWN_SWINGARM, SWINGARM, own_program, reference_file
from .swingarm_example import SWINGARM_TASKS, structure, swingarm_program


def test_module_steps_are_valid() -> None:
    assert validate_steps(SWINGARM_TASKS) == []


def _has_the_compiled_structure(drawn: Path) -> None:
    xml = compile_program(SWINGARM_TASKS, deterministic=True)
    assert validate_xml(xml) == []
    compiled = decompile(xml)
    original = decompile(drawn)
    assert len(compiled.stacks) == len(original.stacks) == 18
    assert structure(compiled) == structure(original)
    assert sorted(compiled.procedures()) == sorted(original.procedures())


def test_compiled_program_has_the_structure_of_our_editor_document() -> None:
    _has_the_compiled_structure(own_program(OWN_SWINGARM))


def test_compiled_program_has_the_structure_of_the_hand_written_flow() -> None:
    _has_the_compiled_structure(reference_file(SWINGARM))


def test_a_different_structure_is_told_apart() -> None:
    original = decompile(own_program(OWN_SWINGARM))
    xml = own_program(OWN_SWINGARM).read_text(encoding="utf-8")
    # One call in the cycle goes to another sub-program: same shape, different program.
    changed = decompile(
        xml.replace('name="LMC_Get_BH"></mutation>', 'name="LMC_Put_BH"></mutation>')
    )
    assert structure(changed) != structure(original)


def test_parameters_survive_into_the_xml() -> None:
    xml = compile_program(SWINGARM_TASKS, deterministic=True)
    for fragment in (
        '<field name="point_name_list">P23</field>',
        '<field name="speed">10</field>',
        '<field name="output_pin_name">6</field>',
        '<field name="robotName">fairino_FR</field>',
        '<mutation name="RMC_Put_BH&amp;BRG"></mutation>',
        '<field name="name">N483</field>',
    ):
        assert fragment in xml, fragment


def test_review_text_round_trips() -> None:
    text = render_tasks(SWINGARM_TASKS)
    assert '4.1 if N5 == 2: — "only while the cycle mode N5 is 2"' in text
    assert parse_tasks(text) == SWINGARM_TASKS
    assert structure(swingarm_program()) == structure(
        decompile(compile_program(parse_tasks(text), deterministic=True))
    )
