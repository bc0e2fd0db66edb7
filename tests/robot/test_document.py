"""The JSON form keeps what the element tree forgets: the text around the root (declaration,
comments, final newline) and ``<block ...></block>`` against ``<block .../>``, so an editor
document comes back byte for byte."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flowkit.robot import Program, Step, compile_program, decompile
from flowkit.robot.steps import Document
from flowkit.robot.text import parse_program, render_program

EDITOR_FILE = """<?xml version="1.0" encoding="UTF-8"?>
<!-- saved by the editor; <block type="moveP"> in a comment is not a block -->
<xml xmlns="https://developers.google.com/blockly/xml">
  <block type="loop" id="a" x="10" y="10" data-blockNo="1">
    <statement name="DO">
      <block type="return" id="b" data-blockNo="1"></block>
    </statement>
  </block>
  <block type="return" id="c" x="210" y="10" data-blockNo="2">
    </block>
</xml>
<!-- what this program does -->
"""


def _json_round_trip(xml: str) -> str:
    return compile_program(Program.from_json(decompile(xml).to_json()), validate=False)


def test_an_editor_file_comes_back_byte_for_byte_through_json() -> None:
    program = decompile(EDITOR_FILE)
    assert program.document is not None
    assert program.document.prolog.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<!--')
    assert program.document.epilogue == "\n<!-- what this program does -->\n"
    assert program.stacks[0][0].body("DO")[0].empty_text == ""
    assert program.stacks[1][0].empty_text == "\n    "
    assert _json_round_trip(EDITOR_FILE) == EDITOR_FILE


def test_a_file_as_the_compiler_writes_it_needs_no_document() -> None:
    xml = compile_program([Step(type="return", id="r", block_no=1)], validate=False)
    program = decompile(xml)
    assert program.document is None
    assert program.stacks[0][0].empty_text is None
    assert _json_round_trip(xml) == xml


def test_the_declaration_is_not_written_twice() -> None:
    program = decompile(EDITOR_FILE)
    assert compile_program(program, validate=False, xml_declaration=True).count("<?xml") == 1
    plain = program.model_copy(update={"document": Document(epilogue="\n")})
    assert compile_program(plain, validate=False, xml_declaration=True).startswith("<?xml")


@pytest.mark.parametrize(
    ("prolog", "epilogue"),
    [
        ("<block type='x'/>", ""),
        ("", "<?xml version='1.0'?>"),
        ("<!-- a -- b -->", ""),
        ("text", ""),
        ("", "<x/>"),
    ],
)
def test_the_text_around_the_root_cannot_hold_markup(prolog: str, epilogue: str) -> None:
    with pytest.raises(ValidationError, match="only space"):
        Document(prolog=prolog, epilogue=epilogue)


def test_empty_text_is_whitespace_only() -> None:
    with pytest.raises(ValidationError, match="spaces and line breaks only"):
        Step(type="return", empty_text="<x/>")


def test_a_block_with_inputs_ignores_empty_text() -> None:
    step = Step(type="loop", inputs={"DO": [Step(type="return")]}, empty_text="")
    assert '<block type="loop"' in compile_program([step], validate=False)
    assert "></block>" not in compile_program([step], validate=False).split("return")[0]


GENERATED = """<xml xmlns="https://developers.google.com/blockly/xml">
  <block type="loop">
    <statement name="DO">
      <block type="return" id="r"/>
    </statement>
  </block>
</xml>"""


def test_bookkeeping_a_generator_left_out_stays_out() -> None:
    program = decompile(GENERATED)
    head = program.stacks[0][0]
    assert head.absent == ["id", "data-blockNo", "x", "y"]
    assert head.body("DO")[0].absent == ["data-blockNo"]
    assert _json_round_trip(GENERATED) == GENERATED
    text = render_program(program)
    assert "1. loop:  @ -id -no -x -y\n" in text
    assert parse_program(text) == program


def test_a_deleted_absence_lets_the_compiler_fill_in() -> None:
    text = render_program(decompile(GENERATED)).replace("  @ -id -no -x -y", "")
    xml = compile_program(parse_program(text), validate=False, deterministic=True)
    head = xml.splitlines()[1]
    assert ' id="' in head and 'x="10" y="10" data-blockNo="1"' in head


PREFIXED = """<?xml version='1.0' encoding='utf-8'?>
<blockly:xml xmlns:blockly="https://developers.google.com/blockly/xml">
  <blockly:block type="loop" id="a" data-blockNo="1" x="10" y="10">
    <blockly:statement name="DO">
      <!-- filled in by relation.xml -->
    </blockly:statement>
  </blockly:block>
</blockly:xml>"""


def test_prefix_comments_and_attribute_order_come_back_byte_for_byte() -> None:
    program = decompile(PREFIXED)
    assert program.document is not None and program.document.prefix == "blockly"
    markup = program.stacks[0][0].markup
    assert markup is not None
    assert markup.attributes == ["type", "id", "data-blockNo", "x", "y"]
    assert "<!-- filled in by relation.xml -->" in markup.space["statement:DO.text"]
    assert _json_round_trip(PREFIXED) == PREFIXED


def test_an_edit_in_text_keeps_prefix_comment_and_order() -> None:
    text = render_program(decompile(PREFIXED)).replace("x=10", "x=400")
    xml = compile_program(parse_program(text), validate=False)
    assert xml == PREFIXED.replace('x="10"', 'x="400"')


def test_markup_space_holds_only_space_and_comments() -> None:
    with pytest.raises(ValidationError, match="only space"):
        Step(type="return", markup={"space": {"tail": "<x/>"}})
