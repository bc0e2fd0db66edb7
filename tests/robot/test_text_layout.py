"""The text form keeps the editor layout: ids, block numbers, positions, comments (with pin and
size), ``collapsed``/``deletable``/``editable``/``disabled``; and a program edited as text (a
moved stack, a changed field, a new block, a deleted annotation) compiles to what the editor
would show."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.errors import StepTextError
from flowkit.robot import (
    Program,
    Step,
    canonical_diff,
    canonical_equal,
    compile_program,
    decompile,
    default_catalog,
)
from flowkit.robot.compile import ID_ALPHABET
from flowkit.robot.text import parse, parse_program, render, render_program

from .conftest import own_program
from .strategies import chains

GUARDED = "guarded_cycle/flow.xml"

DECORATED = """<xml xmlns="https://developers.google.com/blockly/xml">
  <block type="select_robot" id="head" x="-170" y="40" data-blockNo="3" collapsed="true">
    <mutation timeout="600000"></mutation>
    <field name="robot_name">fairino_FR</field>
    <comment pinned="true" h="80" w="160">the main program</comment>
    <next>
      <block type="set_motor" id="motor" data-blockNo="7" deletable="false" editable="false"
          disabled="true">
        <mutation timeout="600000"></mutation>
        <field name="state_list">on</field>
        <comment pinned="false">switch on</comment>
        <next>
          <block type="set_motor" id="motor2" data-blockNo="8" editable="true">
            <mutation timeout="600000"></mutation>
            <field name="state_list">off</field>
          </block>
        </next>
      </block>
    </next>
  </block>
  <block type="select_robot" id="second" x="1030" y="40" data-blockNo="4">
    <mutation timeout="600000"></mutation>
    <field name="robot_name">fairino_FR</field>
  </block>
</xml>"""


def _via_text(text: str) -> str:
    return compile_program(parse_program(text), validate=False)


def _ids(program: Program) -> set[str | None]:
    return {step.id for step in program.walk()}


def test_annotations_keep_ids_numbers_positions_comments_and_editor_attributes() -> None:
    program = decompile(DECORATED)
    text = render_program(program)
    assert text.splitlines()[:3] == [
        "## stack @ x=-170 y=40",
        '1. select_robot robot_name=fairino_FR [timeout=600000] — "the main program"  @ id=head '
        "no=3 editable=true collapsed=true comment.pinned=true comment.h=80 comment.w=160",
        '2. (disabled) set_motor on [timeout=600000] — "switch on"  @ id=motor no=7 '
        'editable=false deletable=false attrs="type id data-blockNo deletable editable disabled" '
        "comment.pinned=false",
    ]
    assert parse_program(text) == program
    xml = _via_text(text)
    assert canonical_equal(DECORATED, xml), canonical_diff(DECORATED, xml)


def test_the_text_form_without_annotations_leaves_the_layout_to_the_compiler() -> None:
    text = render_program(decompile(DECORATED), annotations=False)
    assert "@" not in text and "## stack\n1. select_robot" in text
    assert parse_program(text).stacks[0][0].id is None


def test_a_chain_renders_annotations_on_request_and_parse_reads_them() -> None:
    steps = decompile(DECORATED).stacks[0]
    assert "@" not in render(steps)
    assert parse(render(steps, annotations=True)) == steps


def test_a_moved_stack_compiles_to_the_moved_position() -> None:
    path = own_program(GUARDED)
    text = render_program(decompile(path)).replace("## stack @ x=640 y=40", "## stack @ x=700 y=90")
    expected = path.read_text(encoding="utf-8").replace(
        'id="gc-event-s19" x="640" y="40"', 'id="gc-event-s19" x="700" y="90"'
    )
    xml = _via_text(text)
    assert canonical_equal(expected, xml), canonical_diff(expected, xml)


def test_a_changed_field_compiles_to_the_changed_field_and_nothing_else() -> None:
    path = own_program(GUARDED)
    text = render_program(decompile(path))
    assert text.count(" P10 ") == 1
    expected = path.read_text(encoding="utf-8").replace(">P10<", ">P11<")
    xml = _via_text(text.replace(" P10 ", " P11 "))
    assert canonical_equal(expected, xml), canonical_diff(expected, xml)


def test_a_new_block_gets_a_fresh_id_and_the_next_free_number() -> None:
    original = decompile(own_program(GUARDED))
    lines = render_program(original).splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("7. "))
    lines.insert(last + 1, "8. set_motor off")
    edited = decompile(_via_text("\n".join(lines)))
    added = edited.stacks[0][-1]
    assert added.type == "set_motor" and added.fields["state_list"] == "off"
    assert added.id and added.id not in _ids(original)
    used = {s.block_no for s in original.walk() if s.type == "set_motor"}
    assert added.block_no == min(set(range(1, len(used) + 2)) - used)
    assert edited.stacks[0][:-1] == original.stacks[0]
    assert edited.stacks[1:] == original.stacks[1:]


def test_a_deleted_annotation_means_a_generated_one() -> None:
    original = decompile(own_program(GUARDED))
    lines = render_program(original).splitlines()
    index = next(i for i, line in enumerate(lines) if "@ id=gc-motor-c3" in line)
    lines[index] = lines[index].split("  @ ")[0]
    edited = decompile(_via_text("\n".join(lines)))
    motor = edited.stacks[0][2]
    assert motor.type == "set_motor" and motor.id not in _ids(original)
    assert motor.block_no == 1  # the number its old self had is free again
    others = [s.id for s in edited.walk() if s is not motor]
    assert others == [s.id for s in original.walk() if s.id != "gc-motor-c3"]


def test_a_stack_without_a_position_goes_below_the_others() -> None:
    original = decompile(own_program(GUARDED))
    text = render_program(original) + "\n## stack\n1. set_motor off\n"
    text = text.replace("## stack @ x=640 y=40", "## stack")  # a deleted stack annotation
    edited = decompile(_via_text(text))
    heads = [stack[0] for stack in edited.stacks]
    kept = [0, 2]  # the stacks that still have a position keep it
    assert [(heads[i].x, heads[i].y) for i in kept] == [(60, 40), (640, 300)]
    # Each of them ends, at the most, 48 px per block below its top.
    lowest = max(
        (original.stacks[i][0].y or 0) + 48 * sum(len(list(s.walk())) for s in original.stacks[i])
        for i in kept
    )
    moved, added = heads[1], heads[3]
    assert moved.x == added.x == 60  # the leftmost column
    assert moved.y is not None and added.y is not None
    assert lowest <= moved.y < added.y


def test_value_annotations_follow_their_blocks_when_the_condition_changes() -> None:
    program = decompile(own_program(GUARDED))
    text = render_program(program)
    # Swap the two sides of `robot_position z < 120`: each block keeps its own id.
    edited = parse_program(text.replace("robot_position z < 120", "120 > robot_position z"))
    condition = edited.stacks[0][4].inputs["IF0"]
    assert isinstance(condition, Step)
    assert [condition.id, condition.value("A").id, condition.value("B").id] == [  # type: ignore[union-attr]
        "gc-cmp1-f6",
        "gc-num1-h8",
        "gc-pos1-g7",
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1. set_motor on  @ no=one", "must be a whole number"),
        ("1. set_motor on  @ id=a id=b", "given twice"),
        ("1. set_motor on  @ editable=maybe", "true or false"),
        ("1. set_motor on  @ id=a | id=b", "starts with its block type"),
        ("1. set_motor on  @ id=", "expected a value"),
        ("1. set_motor on  @ type=moveP", "attributes must not hold"),
        ("1. set_motor on  @ x=1 x=2", "given twice"),
        ("1. set_motor on  @ collapsed=true @collapsed=false", "given twice"),
        ("1. set_motor on  @ comment=yes", "comment"),
    ],
)
def test_a_bad_annotation_is_a_step_text_error_with_its_line(line: str, message: str) -> None:
    with pytest.raises(StepTextError, match=message) as caught:
        parse_program(f"## stack\n{line}\n")
    assert caught.value.line == 2


def test_a_stack_line_holds_only_a_position() -> None:
    with pytest.raises(StepTextError, match="only the position") as caught:
        parse_program("## stack @ id=a\n1. set_motor on\n")
    assert caught.value.line == 1


def test_a_block_with_every_field_keeps_their_order_as_written() -> None:
    spec = default_catalog().get("moveL")
    assert spec is not None
    names = [f.name for f in spec.fields]
    assert names.index("control_rz") < names.index("control_rx")  # the catalog's order
    order = sorted(names, key=lambda n: n != "point_name_list")
    order = [n for n in order if n not in ("control_rz", "control_ry", "control_rx")]
    order[1:1] = ["control_rx", "control_ry", "control_rz"]
    assert sorted(order) == sorted(names)
    step = Step(type="moveL", fields={n: "P1" if n == "point_name_list" else "none" for n in order})
    compiled = compile_program([step], validate=False)
    written = [compiled.index(f'name="{n}"') for n in order]
    assert written == sorted(written)
    assert parse(render([step])) == [step]
    # A partial list (an LLM's parameters) is written in the catalog's order.
    partial = Step(type="moveL", fields={"control_rx": "enable", "point_name_list": "P1"})
    compiled = compile_program([partial], validate=False)
    assert compiled.index('"point_name_list"') < compiled.index('"control_rx"')


_ID = st.text(
    st.sampled_from([*ID_ALPHABET, "@", "|", '"', " ", "—", "\\"]), min_size=1, max_size=6
)
_NUMBER = st.integers(min_value=-5000, max_value=5000)
_ATTRIBUTE_NAME = st.sampled_from(
    ["collapsed", "deletable", "movable", "data-x", "no", "comment", "comment.h"]
)
# Built once (not on every draw, where building and validating them cost most of the test).
_COMMENT = st.none() | st.dictionaries(st.sampled_from(["pinned", "h", "w"]), _ID)
_MAYBE_ID = st.none() | _ID
_MAYBE_NUMBER = st.none() | _NUMBER
_MAYBE_BOOL = st.none() | st.booleans()
_ATTRIBUTES = st.dictionaries(_ATTRIBUTE_NAME, _ID, max_size=2)
_ABSENT = st.lists(st.sampled_from(["id", "x", "y", "data-blockNo"]), unique=True)


@st.composite
def _bookkeeping(draw: st.DrawFn, step: Step) -> Step:
    """``step`` and everything in it with random ids, numbers, positions and attributes."""
    inputs: dict[str, Step | list[Step]] = {}
    for name, item in step.inputs.items():
        if isinstance(item, Step):
            inputs[name] = draw(_bookkeeping(item))
        else:
            inputs[name] = [draw(_bookkeeping(s)) for s in item]
    comment = draw(_COMMENT)
    return step.model_copy(
        update={
            "inputs": inputs,
            "id": draw(_MAYBE_ID),
            "block_no": draw(_MAYBE_NUMBER),
            "x": draw(_MAYBE_NUMBER),
            "y": draw(_MAYBE_NUMBER),
            "editable": draw(_MAYBE_BOOL),
            "attributes": draw(_ATTRIBUTES),
            "comment": comment,
            "absent": draw(_ABSENT),
            "source": step.source if comment is None or step.source is not None else "note",
        }
    )


@pytest.mark.slow
@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.data())
def test_parse_of_an_annotated_program_is_the_identity(data: st.DataObject) -> None:
    chain = data.draw(chains())
    steps = [data.draw(_bookkeeping(s)) for s in chain]
    if not steps:
        return
    program = Program(stacks=[steps])
    assert parse_program(render_program(program)) == program
    assert parse(render(steps, annotations=True)) == steps
