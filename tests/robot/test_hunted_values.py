"""Field values as a defect hunt found them mishandled: digits of other scripts (full-width,
superscript, Arabic-Indic) and leading zeros are no slot key or number the editor writes, and
are refused with a problem (``int("²")`` raised ValueError out of every check)."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from flowkit.errors import InvalidProgramError, StepTextError
from flowkit.robot import (
    Program,
    Step,
    decompile,
    default_catalog,
    load_catalog,
    validate_steps,
    validate_xml,
)
from flowkit.robot.params import TeachingTable, apply_teaching, map_parameters, name_words
from flowkit.robot.text import parse

H = '<xml xmlns="https://developers.google.com/blockly/xml">'


def _codes(steps: list[Step]) -> list[str]:
    return [p.code for p in validate_steps(steps)]


@pytest.mark.parametrize(
    ("block", "field", "value"),
    [
        ("moveP", "point_name_list", "P\u00b2"),  # superscript two
        ("moveP", "point_name_list", "P\uff12\uff11"),  # full-width 21
        ("moveP", "point_name_list", "P007"),
        ("wait_timer", "name", "N\u0664\u0668\u0662"),  # Arabic-Indic 482
        ("set_speed", "speed", "\uff15\uff10"),  # full-width 50
    ],
)
def test_digits_the_editor_never_writes_are_a_bad_field_value(
    block: str, field: str, value: str
) -> None:
    steps = [Step(type="select_robot", fields={"robotName": "r"}),
             Step(type=block, fields={field: value})]  # fmt: skip
    assert _codes(steps) == ["bad_field_value"]
    fine = {"point_name_list": "P21", "name": "N482", "speed": "50"}[field]
    assert _codes([steps[0], Step(type=block, fields={field: fine})]) == []


def test_a_numbered_input_with_a_superscript_digit_is_a_problem_not_a_crash() -> None:
    xml = (H + '<block type="select_robot" id="s" x="0" y="0"><field name="robotName">r</field>'
           '<next><block type="controls_if" id="i"><value name="IF\u00b2"><block '
           'type="logic_boolean" id="b"><field name="BOOL">TRUE</field></block></value></block>'
           "</next></block></xml>")  # fmt: skip
    assert validate_xml(xml)  # problems, not ValueError
    with pytest.raises(InvalidProgramError):
        decompile(xml)


def test_a_one_letter_label_is_part_of_a_name_not_an_article() -> None:
    table = TeachingTable.from_mapping({"P1": {"name": "pallet"}, "P2": {"name": ""},
                                        "P3": {"name": ""}})  # fmt: skip
    moves = [Step(type="moveP", fields={"point_name_list": f"pallet {x}"}) for x in "AB"]
    program = Program(stacks=[[Step(type="select_robot", fields={"robotName": "r"}), *moves]])
    entries = map_parameters(program, points=table).report.entries
    assert [(e.logical, e.slot, e.action) for e in entries] == [
        ("pallet A", "P2", "assigned"), ("pallet B", "P3", "assigned")]  # fmt: skip
    assert name_words("a pallet", "point") == name_words("pallet", "point")  # still an article
    assert name_words("Point A", "point") != name_words("Point B", "point")


def test_a_long_condition_that_is_refused_says_so_in_a_short_message() -> None:
    text = "1. select_robot r\n2. wait_block until " + " or ".join(["robot_io 1"] * 260) + "\n"
    with pytest.raises(StepTextError) as refused:
        parse(text)
    assert refused.value.line == 2 and len(str(refused.value)) < 2000


def test_decompiling_many_stacks_reads_each_parents_children_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each block asked for the text around it re-read all its parent's children: a file of
    10,000 stacks took 16 s, one of 20,000 over 100 (counted here, not timed)."""
    module = importlib.import_module("flowkit.robot.decompile")  # the package exports the function

    calls = 0
    real = module.gaps

    def counting(element: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(element)

    monkeypatch.setattr(module, "gaps", counting)
    stacks = "".join(f'\n  <block type="return" id="r{i}" x="{i}" y="0"/>' for i in range(300))
    steps = decompile(H + stacks + "\n</xml>\n")
    assert len(steps.stacks) == 300 and calls == 1


def test_a_point_field_of_your_own_block_counts_as_a_used_slot(tmp_path: Any) -> None:
    blocks = tmp_path / "my-blocks.json"
    blocks.write_text(json.dumps({"format_version": 1, "name": "my-cell", "blocks": {
        "vacuum_pick": {"role": "process", "description": "Moves to a point and sucks.",
                        "fields": [{"name": "point", "kind": "ref", "prefix": "P", "min": 1,
                                    "max": 100, "required": True}]}}}))  # fmt: skip
    (tmp_path / "teaching.yaml").write_text("P1:\n  name: safe point\nP2:\n  name: ''\n"
                                            "P3:\n  name: ''\n", encoding="utf-8")  # fmt: skip
    catalog = default_catalog().merge(load_catalog(blocks))
    program = Program(stacks=[[
        Step(type="select_robot", fields={"robotName": "r"}),
        Step(type="vacuum_pick", fields={"point": "P2"}),
        Step(type="moveP", fields={"point_name_list": "above the part"}),
    ]])  # fmt: skip
    mapped, report = apply_teaching(
        program, tmp_path / "teaching.yaml", tmp_path / "out", catalog=catalog
    )
    assert mapped.stacks[0][2].fields["point_name_list"] == "P3"  # P2 is the block's
    assert ("above the part", "P3", "assigned") in [
        (e.logical, e.slot, e.action) for e in report.entries
    ]


def test_a_document_with_two_main_programs_is_refused_like_a_task_list_with_two() -> None:
    main = ('<block type="select_robot" id="{0}" x="{1}" y="0"><field name="robotName">r'
            '</field><next><block type="set_motor" id="{0}m"><field name="state_list">on</field>'
            "</block></next></block>")  # fmt: skip
    xml = H + main.format("a", 0) + main.format("b", 300) + "</xml>"
    assert [p.code for p in validate_xml(xml)] == ["main_task_count"]
    assert [p.code for p in validate_xml(H + main.format("a", 0) + "</xml>")] == []


def test_a_new_name_never_gets_a_free_slot_outside_the_fields_range() -> None:
    table = TeachingTable.from_mapping({"P0": {"name": ""}, "P1": {"name": "safe point"},
                                        "P2": {"name": ""}})  # fmt: skip
    moves = [Step(type="moveP", fields={"point_name_list": n}) for n in ("safe point", "above")]
    program = Program(stacks=[[Step(type="select_robot", fields={"robotName": "r"}), *moves]])
    result = map_parameters(program, points=table)
    assert [s.fields["point_name_list"] for s in result.program.stacks[0][1:]] == ["P1", "P2"]
    assert validate_steps(result.program.stacks[0]) == []  # P0 would be moveP's bad value
