"""Compiling steps follows the editor's conventions and applies every parameter."""

from __future__ import annotations

import re

import pytest
from lxml import etree

from flowkit.errors import InvalidProgramError
from flowkit.robot import (
    Program,
    Step,
    TaskSteps,
    compile_program,
    decompile,
    validate_steps,
    validate_xml,
)
from flowkit.robot.compile import ID_ALPHABET

NS = "{https://developers.google.com/blockly/xml}"


def _main(*steps: Step) -> list[Step]:
    return [Step(type="select_robot", fields={"robotName": "dobot_mg400"}), *steps]


def _blocks(xml: str) -> list[etree._Element]:
    return list(etree.fromstring(xml.encode()).iter(f"{NS}block"))


def _move(point: str, **kw: object) -> Step:
    return Step(type="moveP", fields={"point_name_list": point}, **kw)  # type: ignore[arg-type]


def test_output_looks_like_an_editor_saved_file() -> None:
    xml = compile_program(_main(Step(type="set_motor")), deterministic=True)
    assert xml.startswith('<xml xmlns="https://developers.google.com/blockly/xml">\n  <block')
    assert not xml.startswith("<?xml") and not xml.endswith("\n")
    head = _blocks(xml)[0]
    assert head.get("editable") == "false"
    assert (head.get("x"), head.get("y"), head.get("data-blockNo")) == ("10", "10", "1")
    assert '<mutation timeout="-1"></mutation>' in xml
    assert compile_program(_main(), xml_declaration=True).startswith("<?xml version=")


def test_same_input_and_seed_give_identical_bytes() -> None:
    steps = _main(Step(type="loop", inputs={"DO": [_move("P1"), Step(type="return")]}))
    first = compile_program(steps, deterministic=True)
    assert compile_program(steps, deterministic=True) == first
    assert compile_program(steps, id_seed=7) == compile_program(steps, id_seed=7)
    assert compile_program(steps, id_seed=7) != first
    assert compile_program(steps) != compile_program(steps)  # random ids otherwise


def test_generated_ids_are_unique_editor_style_and_keep_given_ones() -> None:
    steps = _main(*[_move(f"P{n}") for n in range(1, 40)], _move("P40", id="mine"))
    ids = [b.get("id") for b in _blocks(compile_program(steps))]
    assert len(set(ids)) == len(ids) == 41 and "mine" in ids
    generated = [i for i in ids if i != "mine"]
    assert all(len(i) == 20 and set(i) <= set(ID_ALPHABET) for i in generated)


def test_block_numbers_are_per_type_smallest_unused_and_one_for_values() -> None:
    steps = _main(
        _move("P1", block_no=2),
        _move("P2"),
        _move("P3"),
        Step(
            type="wait_block",
            inputs={"condition": Step(type="robot_io", fields={"input_pin_name": "10"})},
        ),
        Step(type="set_motor"),
    )
    numbers = [(b.get("type"), b.get("data-blockNo")) for b in _blocks(compile_program(steps))]
    assert numbers == [
        ("select_robot", "1"),
        ("moveP", "2"),
        ("moveP", "1"),
        ("moveP", "3"),
        ("wait_block", "1"),
        ("robot_io", "1"),
        ("set_motor", "1"),
    ]


def test_every_parameter_is_applied_and_defaults_fill_the_rest() -> None:
    steps = _main(
        Step(type="set_speed", fields={"speed": 10}),
        Step(type="moveP", fields={"control_z": "disable", "point_name_list": "P21"}),
        Step(type="set_output", fields={"output_pin_name": "6", "out_state": "off"}),
    )
    xml = compile_program(steps, deterministic=True)
    fields = [(f.get("name"), f.text) for f in etree.fromstring(xml.encode()).iter(f"{NS}field")]
    assert ("robotName", "dobot_mg400") in fields and ("speed", "10") in fields
    move = [f for f in fields if f[0] in ("point_name_list", "control_x", "control_z")]
    assert move == [("point_name_list", "P21"), ("control_x", "enable"), ("control_z", "disable")]
    names = [f[0] for f in fields]
    assert names[names.index("point_name_list") :][:9] == [
        "point_name_list",
        "control_x",
        "control_y",
        "control_z",
        "control_rz",
        "control_ry",
        "control_rx",
        "pallet_list",
        "camera_list",
    ]
    assert ("output_pin_name", "6") in fields and ("out_state", "off") in fields


def test_mutations_none_false_empty_and_explicit() -> None:
    steps = _main(
        _move("P1"),
        _move("P2", mutation=False),
        _move("P3", mutation={}),
        _move("P4", mutation={"timeout": "60000"}),
    )
    mutations = [b.find(f"{NS}mutation") for b in _blocks(compile_program(steps))[1:]]
    assert mutations[0] is not None and dict(mutations[0].attrib) == {"timeout": "-1"}
    assert mutations[1] is None
    assert mutations[2] is not None and dict(mutations[2].attrib) == {}
    assert mutations[3] is not None and dict(mutations[3].attrib) == {"timeout": "60000"}


def test_if_mutation_is_derived_from_its_branches() -> None:
    def if_block(**inputs: object) -> str:
        step = Step(type="controls_if", inputs=inputs)  # type: ignore[arg-type]
        return compile_program(_main(step), deterministic=True)

    true = Step(type="logic_boolean", fields={"BOOL": "TRUE"})
    plain = if_block(IF0=true, DO0=[_move("P1")])
    assert "<mutation" not in plain.split("controls_if")[1].split("logic_boolean")[0]
    full = if_block(IF0=true, DO0=[_move("P1")], IF1=true, DO1=[_move("P2")], ELSE=[])
    assert re.search(r'<mutation (else="1" elseif="1"|elseif="1" else="1")></mutation>', full)


def test_stacks_get_a_row_layout_when_none_is_positioned() -> None:
    sub = Step(type="procedures_defnoreturn", fields={"NAME": "A"}, inputs={"STACK": []})
    program = Program(stacks=[_main(), [sub]])
    heads = [b for b in _blocks(compile_program(program)) if b.get("x") is not None]
    assert [(b.get("x"), b.get("y")) for b in heads] == [("10", "10"), ("210", "10")]


def test_new_stacks_go_below_the_positioned_ones_without_overlap() -> None:
    sub = Step(type="procedures_defnoreturn", fields={"NAME": "A"}, inputs={"STACK": []})
    placed = sub.model_copy(update={"x": -170, "y": 30, "fields": {"NAME": "B"}})
    program = Program(stacks=[_main(), [sub], [placed]])
    heads = [b for b in _blocks(compile_program(program)) if b.get("x") is not None]
    places = [(int(b.get("x")), int(b.get("y"))) for b in heads]
    # The positioned stack keeps its place; the others share its column, one under the other,
    # each starting below the stack above by at least 48 px per block it holds.
    assert places[2] == (-170, 30)
    assert [x for x, _y in places] == [-170, -170, -170]
    main_blocks = sum(len(list(s.walk())) for s in _main())
    assert places[0][1] >= 30 + 48
    assert places[1][1] >= places[0][1] + 48 * main_blocks


def test_task_list_compiles_to_main_then_sub_programs() -> None:
    tasks = [
        TaskSteps(
            task="Main",
            kind="main",
            steps=_main(
                Step(type="procedures_callnoreturn", mutation={"name": "Open_BRG&PLT_Crump"})
            ),
        ),
        TaskSteps(
            task="Open_BRG&PLT_Crump",
            kind="sub",
            steps=[Step(type="wait_timer", fields={"name": "N482"})],
        ),
    ]
    xml = compile_program(tasks, deterministic=True)
    assert xml.count('name="Open_BRG&amp;PLT_Crump"') == 1  # escaped once (defect 7)
    assert ">Open_BRG&amp;PLT_Crump</field>" in xml and "&amp;amp;" not in xml
    tops = list(etree.fromstring(xml.encode()))
    assert [t.get("type") for t in tops] == ["select_robot", "procedures_defnoreturn"]


def test_missing_condition_is_an_error_never_a_placeholder() -> None:
    with pytest.raises(InvalidProgramError) as caught:
        compile_program(_main(Step(type="wait_block")))
    assert [p.code for p in caught.value.problems] == ["missing_input"]
    assert "TRUE" not in compile_program(_main(Step(type="wait_block")), validate=False)


def test_loop_with_a_following_block_is_not_compiled() -> None:
    steps = _main(Step(type="loop", inputs={"DO": [_move("P1")]}), _move("P2"))
    with pytest.raises(InvalidProgramError) as caught:
        compile_program(steps)
    assert caught.value.problems[0].code == "loop_with_next"
    assert "loop_with_next" in str(caught.value)


def test_source_comments_are_opt_in_and_read_back() -> None:
    steps = _main(_move("P1", source="go to the safe point"))
    assert "<comment" not in compile_program(steps)
    xml = compile_program(steps, source_comments=True, deterministic=True)
    assert '<comment pinned="false">go to the safe point</comment>' in xml
    assert decompile(xml).stacks[0][1].source == "go to the safe point"


def _long_chain(moves: int) -> list[Step]:
    head = [
        Step(type="select_robot", fields={"robotName": "dobot_mg400"}),
        Step(type="set_motor", fields={"state_list": "on"}),
    ]
    return head + [Step(type="moveP", fields={"point_name_list": "P1"})] * moves


def test_a_chain_the_xml_readers_refuse_is_refused_before_it_is_written() -> None:
    """Blockly nests each next block inside the one before, and XML readers refuse documents
    deeper than 256 elements: a chain that long validates as steps only if its XML reads back.
    Refused with the step where it gets too deep, before any (quadratically large) XML is
    written."""
    longest = _long_chain(125)  # 127 blocks: the deepest field sits at level 255
    assert validate_steps(longest) == []
    assert validate_xml(compile_program(longest, deterministic=True)) == []
    problems = validate_steps(_long_chain(126))
    assert [(p.code, p.step) for p in problems] == [("too_deep", "128")]
    with pytest.raises(InvalidProgramError) as caught:
        compile_program(_long_chain(1_000), deterministic=True)
    assert [p.code for p in caught.value.problems] == ["too_deep"]


def test_bodies_nested_inside_each_other_count_towards_the_depth() -> None:
    body: list[Step] = [Step(type="moveP", fields={"point_name_list": "P1"})]
    for _ in range(200):
        body = [Step(type="loop", inputs={"DO": body})]
    steps = [Step(type="select_robot", fields={"robotName": "dobot_mg400"}), *body]
    codes = [p.code for p in validate_steps(steps)]
    assert codes.count("too_deep") == 1
