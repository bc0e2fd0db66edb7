"""The block catalog as data: complete against the templates (those of the reference corpus,
where present), validated, extensible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit.errors import CatalogError
from flowkit.robot import (
    Step,
    catalog_json_schema,
    default_catalog,
    errors_only,
    load_catalog,
    validate_steps,
)
from flowkit.robot._resources import schema_path
from flowkit.robot._xml import local_name, parse_xml

from .conftest import TEMPLATES, reference_file, reference_params

EDITOR_TYPES = {
    "set_output_during",
    "set_external_io_output",
    "wait_ready",
    "wait_run",
    "raise_error_upon",
    "logic_negate",
    "logic_block",
    "robot_position",
}


def _templates() -> list[Path]:
    reference_file("moveP.xml", base=TEMPLATES)
    return sorted(TEMPLATES.glob("*.xml"))


def test_catalog_has_30_template_types_and_the_8_editor_types() -> None:
    catalog = default_catalog()
    assert len([t for t, s in catalog.blocks.items() if s.origin == "template"]) == 30
    assert {t for t, s in catalog.blocks.items() if s.origin == "editor"} == EDITOR_TYPES
    assert all(spec.description and spec.label for spec in catalog.blocks.values())


def test_catalog_template_types_are_the_reference_templates() -> None:
    templates = {p.stem for p in _templates()}
    assert len(templates) == 30
    catalog = default_catalog()
    assert {t for t, s in catalog.blocks.items() if s.origin == "template"} == templates


TEMPLATE_TYPES = sorted(t for t, s in default_catalog().blocks.items() if s.origin == "template")


@pytest.mark.parametrize("template", reference_params(TEMPLATE_TYPES, base=TEMPLATES))
def test_catalog_entry_matches_its_template(template: str) -> None:
    root, _ = parse_xml(reference_file(f"{template}.xml", base=TEMPLATES))
    (block,) = list(root)
    spec = default_catalog().blocks[template]
    for child in block:
        kind, name = local_name(child), child.get("name")
        if kind == "field":
            rule = spec.field(name)
            assert rule is not None and rule.name == name, f"field {name}"
            assert rule.accepts(child.text or ""), f"template value {child.text!r} of {name}"
        elif kind in ("value", "statement"):
            found = spec.input(name)
            assert found is not None and found.kind == kind, f"input {name}"
        elif kind == "mutation":
            for attribute, value in child.attrib.items():
                rule = spec.attribute(attribute)
                assert rule is not None and rule.accepts(value), f"mutation {attribute}"


def test_connection_rules_follow_the_editor() -> None:
    blocks = default_catalog().blocks
    assert not blocks["loop"].next and not blocks["return"].next
    assert {t for t, s in blocks.items() if s.role == "hat"} == {
        "start_thread",
        "create_event",
        "procedures_defnoreturn",
    }
    assert blocks["select_robot"].role == "chain-head"
    assert blocks["create_event"].inputs[0].accepts == "event"
    assert blocks["wait_block"].inputs[0].check == "Boolean"
    assert blocks["moveP"].attribute("timeout").default == "-1"  # type: ignore[union-attr]


def test_shipped_json_schema_is_up_to_date() -> None:
    shipped = json.loads(schema_path("robot-block-catalog.schema.json").read_text())
    assert shipped == catalog_json_schema(), (
        "regenerate schemas/robot-block-catalog.schema.json from catalog_json_schema()"
    )


def _user_catalog(tmp_path: Path, blocks: dict[str, object]) -> Path:
    path = tmp_path / "gripper.json"
    path.write_text(json.dumps({"name": "gripper", "blocks": blocks}))
    return path


GRIPPER = {
    "grip": {
        "role": "process",
        "description": "Closes the gripper with a force.",
        "label": "Grip",
        "fields": [{"name": "force", "kind": "integer", "min": 1, "max": 50, "default": "10"}],
        "text": {"positional": ["force"]},
    }
}


def test_a_users_catalog_adds_blocks_without_touching_the_package(tmp_path: Path) -> None:
    merged = default_catalog().merge(load_catalog(_user_catalog(tmp_path, GRIPPER)))
    steps = [
        Step(type="select_robot", fields={"robotName": "r"}),
        Step(type="grip", fields={"force": "20"}),
    ]
    assert [p.code for p in errors_only(validate_steps(steps))] == ["unknown_block_type"]
    assert errors_only(validate_steps(steps, merged)) == []
    too_hard = [steps[0], Step(type="grip", fields={"force": "99"})]
    assert [p.code for p in validate_steps(too_hard, merged)] == ["bad_field_value"]
    assert "moveP" in merged and merged.get("grip") is not None


def test_a_broken_catalog_lists_every_problem(tmp_path: Path) -> None:
    broken = {
        "a": {"role": "process", "fields": [{"name": "f", "kind": "enum"}]},
        "b": {
            "role": "value",
            "fields": [{"name": "g", "kind": "integer", "max": 5, "default": "9"}],
        },
        "c": {"role": "process", "text": {"keyword_input": "nope", "keyword": "until"}},
    }
    with pytest.raises(CatalogError) as caught:
        load_catalog(_user_catalog(tmp_path, broken))
    text = "\n".join(caught.value.problems)
    assert "`f` is an enum without `values`" in text
    assert "value blocks need `output`" in text
    assert "default `9` is not a whole number <= 5" in text
    assert "keyword_input `nope`" in text
    assert str(tmp_path / "gripper.json") in str(caught.value)


def test_schema_errors_and_unreadable_files_are_catalog_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"blocks\.a\.role"):
        load_catalog(_user_catalog(tmp_path, {"a": {"role": "sometimes"}}))
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  nope")
    with pytest.raises(CatalogError, match="line 2: not JSON"):
        load_catalog(bad)
    with pytest.raises(CatalogError, match="cannot read the file"):
        load_catalog(tmp_path / "missing.json")


def test_describe_gives_a_reference_for_prompts() -> None:
    text = default_catalog().describe(["moveP", "logic_block", "loop"])
    assert text.startswith("- moveP (process): Moves point-to-point")
    assert "point_name_list = `P1`..`P100` (required)" in text
    assert "control_x = one of `enable`, `disable` (default enable)" in text
    assert "- logic_block (value, gives Boolean) [editor only, not in the template set]" in text
    assert "input DO: body of any blocks, required" in text
    assert "nothing may follow it in its chain" in text
