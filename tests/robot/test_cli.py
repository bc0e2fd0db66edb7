"""The command functions behind ``flowkit sas compile | validate | decompile``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit.robot import canonical_equal
from flowkit.robot.cli import compile_command, decompile_command, load_steps, validate_command
from flowkit.robot.text import render_tasks

from .conftest import OWN_SWINGARM, own_program
from .swingarm_example import SWINGARM_TASKS


def test_decompile_then_compile_gives_the_program_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = own_program(OWN_SWINGARM)
    for name in ("steps.json", "steps.txt"):
        steps, xml = tmp_path / name, tmp_path / f"{name}.xml"
        assert decompile_command(original, steps) == 0
        assert compile_command(steps, xml) == 0
        compiled = xml.read_text()
        if name.endswith(".json"):
            assert json.loads(steps.read_text())["kind"] == "robot-program"
            assert canonical_equal(original, compiled)
        else:
            lines = steps.read_text().splitlines()
            # The file's final newline comes along on the `## document` line.
            assert lines[0] == '## document @ epilogue="\\n"'
            assert lines[2].startswith("## stack @ x=")
            # The text form keeps ids, positions and block numbers in its annotations.
            assert canonical_equal(original, compiled)
    assert f"wrote {tmp_path / 'steps.json.xml'}" in capsys.readouterr().out


def test_compile_reads_task_lists_as_json_or_text(tmp_path: Path) -> None:
    as_json = tmp_path / "tasks.json"
    as_json.write_text(
        json.dumps(
            {
                "format_version": 1,
                "kind": "robot-tasks",
                "tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in SWINGARM_TASKS],
            }
        )
    )
    as_text = tmp_path / "tasks.txt"
    as_text.write_text(render_tasks(SWINGARM_TASKS))
    assert load_steps(as_json) == load_steps(as_text) == SWINGARM_TASKS
    assert compile_command(as_json, tmp_path / "a.xml") == 0
    assert compile_command(as_text, tmp_path / "b.xml") == 0
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()


def test_compile_refuses_invalid_steps_and_lists_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = tmp_path / "steps.txt"
    steps.write_text("1. select_robot r\n2. loop:\n   2.1 return\n3. moveP P999\n")
    assert compile_command(steps, tmp_path / "out.xml") == 1
    out = capsys.readouterr().err  # problems that stop a command are errors: stderr
    assert "2 problem(s)" in out and "loop_with_next" in out and "bad_field_value" in out
    assert not (tmp_path / "out.xml").exists()
    steps.write_text("1. moveP P1\n   1.1 return\n")
    assert compile_command(steps, tmp_path / "out.xml") == 1
    assert "line 2:" in capsys.readouterr().err


def test_validate_lists_every_problem_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate_command(own_program(OWN_SWINGARM)) == 0
    assert "valid (0 error(s), 0 warning(s))" in capsys.readouterr().out
    broken = tmp_path / "broken.xml"
    broken.write_text(
        '<xml xmlns="https://developers.google.com/blockly/xml">\n'
        '  <block type="select_robot" id="a" x="0" y="0">\n'
        '    <field name="robotName">r</field>\n'
        '    <next><block type="moveX" id="b"/></next>\n'
        "  </block>\n"
        '  <block type="procedures_callnoreturn" id="a" x="9" y="9">\n'
        '    <mutation name="Nowhere"/>\n'
        "  </block>\n"
        "</xml>\n"
    )
    assert validate_command(broken) == 1
    out = capsys.readouterr().out
    assert "line 4," in out and "unknown_block_type" in out
    assert "line 6," in out and "undefined_procedure" in out and "duplicate_id" in out
    assert "invalid (3 error(s)" in out


def test_unreadable_and_unsafe_inputs_fail_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate_command(tmp_path / "missing.xml") == 1
    assert "Cannot read" in capsys.readouterr().err
    unsafe = tmp_path / "x.xml"
    unsafe.write_text('<!DOCTYPE x [<!ENTITY e "e">]><xml/>')
    assert decompile_command(unsafe, tmp_path / "x.json") == 1
    assert "DOCTYPE" in capsys.readouterr().err
    bad_json = tmp_path / "steps.json"
    bad_json.write_text('{"stacks": [[{"tipe": "moveP"}]]}')
    assert compile_command(bad_json, tmp_path / "o.xml") == 1
    assert "is not a program or task list" in capsys.readouterr().err
