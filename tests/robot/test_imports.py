"""Importing flowkit (or its robot toolkit) loads no XML library; that happens on first use."""

from __future__ import annotations

import subprocess
import sys

import flowkit.robot


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_importing_flowkit_and_the_robot_toolkit_loads_no_xml_library() -> None:
    for statement in ("import flowkit", "import flowkit.robot", "import flowkit.robot.text"):
        loaded = _loaded_after(statement)
        assert not {"lxml", "lxml.etree", "xmlschema"} & loaded, statement


def test_xml_libraries_load_when_xml_is_touched() -> None:
    loaded = _loaded_after(
        "from flowkit.robot import Step, compile_program\n"
        "compile_program([Step(type='select_robot', fields={'robotName': 'r'})])"
    )
    assert "lxml.etree" in loaded and "xmlschema" not in loaded


def test_public_names_are_locked() -> None:
    assert sorted(flowkit.robot.__all__) == flowkit.robot.__all__
    assert set(flowkit.robot.__all__) == {
        "AttributeSpec",
        "BlockSpec",
        "Catalog",
        "FieldSpec",
        "InputSpec",
        "Problem",
        "Program",
        "Step",
        "TaskSteps",
        "TextSpec",
        "build_program",
        "canonical_diff",
        "canonical_equal",
        "canonical_form",
        "catalog_json_schema",
        "compile_program",
        "decompile",
        "default_catalog",
        "errors_only",
        "load_catalog",
        "to_program",
        "validate_steps",
        "validate_task",
        "validate_xml",
        "without_editor_attributes",
    }
