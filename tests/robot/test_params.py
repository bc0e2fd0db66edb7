"""Parameter mapping: logical names in module steps become slots of the parameter tables,
tables load strictly and save to new files, and hostile YAML is refused.

The tables are our own (``fixtures/tables/gear_cell``); the reference corpus's tables are
round-tripped too where the corpus is present."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.errors import FlowkitError, ParameterTableError
from flowkit.robot.params import (
    MAX_TABLE_BYTES,
    PARAMETER_FIELDS,
    FlagTable,
    MappingReport,
    NoFreeSlotError,
    NumberTable,
    ParameterTable,
    Slot,
    TeachingTable,
    apply_teaching,
    map_parameters,
    name_words,
    normalize_name,
    parse_slot_key,
)
from flowkit.robot.steps import Program, Step, TaskSteps, build_program

from .conftest import TABLES, reference_file, reference_params

REFERENCE_TABLES = [
    "flow_database/result/5.15_test/teaching.yaml",
    "synced_files/teaching.yaml",
    "synced_files/number_parameter.yaml",
    "synced_files/flag_parameter.yaml",
    "synced_files/llm_test/config/teaching.yaml",
    "synced_files/llm_test/config/number_parameter.yaml",
    "synced_files/llm_test/config/flag_parameter.yaml",
    "test_database/test_robot_flow/teaching.yaml",
]


OWN_TABLES = ["teaching.yaml", "number_parameter.yaml", "flag_parameter.yaml"]


def own_table(name: str) -> Path:
    path = TABLES / name
    assert path.is_file(), f"fixture {path} is missing from the repository"
    return path


def table_class(path: Path | str) -> type[ParameterTable]:
    name = Path(path).name
    if name.startswith("number"):
        return NumberTable
    return FlagTable if name.startswith("flag") else TeachingTable


def points(*names: str) -> TeachingTable:
    """P1..Pn with these names (empty = free) and made-up coordinates."""
    slots = [
        Slot(f"P{i}", (("name", n), ("x_pos", float(i)), ("tool", None)))
        for i, n in enumerate(names, 1)
    ]
    return TeachingTable(tuple(slots))


def numbers(*names: str) -> NumberTable:
    slots = [Slot(f"N{i}", (("name", n), ("value", 0))) for i, n in enumerate(names, 1)]
    return NumberTable(tuple(slots))


def flags(*names: str) -> FlagTable:
    slots = [Slot(f"F{i}", (("name", n), ("value", False))) for i, n in enumerate(names, 1)]
    return FlagTable(tuple(slots))


def slot(table: ParameterTable, key: str) -> Slot:
    found = table.get(key)
    assert found is not None, f"{key} missing"
    return found


def flag_check(name: str) -> Step:
    return Step(
        type="wait_block",
        inputs={"condition": Step(type="logic_custom_flag", fields={"name": name})},
    )


def move(point: str) -> Step:
    return Step(type="moveP", fields={"point_name_list": point})


def program(*steps: Step) -> Program:
    head = Step(type="select_robot", fields={"robotName": "fairino_FR"})
    return Program(stacks=[[head, *steps]])


def point_fields(prog: Program) -> list[str]:
    return [s.fields["point_name_list"] for s in prog.walk() if s.type in ("moveP", "moveL")]


# --- names -----------------------------------------------------------------------------


def test_normalisation_folds_case_width_separators_and_spaces() -> None:
    assert normalize_name("  Safe_Point ") == "safe point"
    assert normalize_name("ＳＡＦＥ－point\t\n x") == "safe point x"
    assert normalize_name("bearing--pickup__standby") == "bearing pickup standby"


def test_slot_keys_are_recognised_in_any_case_and_width() -> None:
    assert parse_slot_key("P21") == ("point", "P21")
    assert parse_slot_key(" p021 ") == ("point", "P21")
    assert parse_slot_key("Ｎ４８２") == ("number", "N482")
    assert parse_slot_key("F3") == ("flag", "F3")
    assert parse_slot_key("P 21") is None and parse_slot_key("safe point") is None


def test_synonyms_apply_to_whole_names_and_position_words_only_to_points() -> None:
    assert name_words("safe point", "point") == name_words("initial_point", "point") == {"home"}
    assert name_words("Approach the bearing", "point") == name_words("above bearing", "point")
    assert name_words("start", "number") == {"start"} != name_words("home", "number")
    assert name_words("bearing gripped", "flag") == name_words("bearing grasped", "flag")


def test_the_field_table_covers_the_documented_fields() -> None:
    assert dict(PARAMETER_FIELDS) == {
        "moveL": {"point_name_list": "point"},
        "moveP": {"point_name_list": "point"},
        "wait_timer": {"name": "number"},
        "set_number": {"name": "number"},
        "set_external_io_output_during": {"name": "number"},
        "set_output_during": {"name": "number"},
        "math_custom_number": {"name": "number"},
        "logic_custom_flag": {"name": "flag"},
    }


# --- mapping rules ------------------------------------------------------------------------


def test_an_exact_or_normalised_name_reuses_its_slot() -> None:
    table = points("initial_point", "bearing_pickup_standby_point", "")
    result = map_parameters(
        program(move("initial_point"), move("Bearing-Pickup Standby_Point "), move("P2")),
        points=table,
    )
    assert point_fields(result.program) == ["P1", "P2", "P2"]
    actions = [(e.logical, e.slot, e.action, e.note) for e in result.report.entries]
    assert actions == [
        ("initial_point", "P1", "reused", ""),
        ("Bearing-Pickup Standby_Point", "P2", "reused", ""),
        ("P2", "P2", "kept", ""),
    ]
    assert result.points == table  # nothing assigned


def test_a_synonym_match_reuses_the_slot_and_says_so() -> None:
    table = TeachingTable.load(own_table("teaching.yaml"))
    result = map_parameters(
        program(move("safe point"), move("gear pick standby"), move("precise grasp gear")),
        points=table,
    )
    assert point_fields(result.program) == ["P1", "P2", "P4"]
    assert [e.action for e in result.report.entries] == ["reused"] * 3
    assert "by synonyms" in result.report.entries[0].note
    assert result.report.entries[0].slot_name == "initial_point"


def test_one_shared_word_is_never_a_match() -> None:
    table = points("bearing_pickup_standby_point", "above_bearing_for_pickup", "", "")
    result = map_parameters(
        program(move("bearing"), move("standby above the bearing")), points=table
    )
    assert [(e.slot, e.action) for e in result.report.entries] == [
        ("P3", "assigned"),
        ("P4", "assigned"),
    ]
    assert result.points is not None
    assert [s.name for s in result.points] == [
        "bearing_pickup_standby_point",
        "above_bearing_for_pickup",
        "bearing",
        "standby above the bearing",
    ]


def test_an_ambiguous_match_is_reported_and_gets_a_new_slot() -> None:
    table = points("home", "initial position", "")
    result = map_parameters(program(move("safe point")), points=table)
    (entry,) = result.report.entries
    assert (entry.slot, entry.action) == ("P3", "assigned")
    assert entry.candidates == ["P1 'home'", "P2 'initial position'"]
    assert "ambiguous" in entry.note
    assert "ambiguous" in result.report.to_markdown()


def test_free_slots_are_assigned_lowest_number_first_skipping_keys_the_steps_use() -> None:
    table = TeachingTable(
        (
            Slot("P10", (("name", ""),)),
            Slot("P3", (("name", "  "),)),
            Slot("P1", (("name", "home"),)),
            Slot("P2", (("name", ""),)),
            Slot("P7", (("name", ""),)),
        )
    )
    result = map_parameters(
        program(move("first"), move("P3"), move("second"), move("third")), points=table
    )
    assert point_fields(result.program) == ["P2", "P3", "P7", "P10"]
    assert result.points is not None
    # File order of the slots is kept; only names change.
    assert [(s.key, s.name) for s in result.points] == [
        ("P10", "third"),
        ("P3", "  "),
        ("P1", "home"),
        ("P2", "first"),
        ("P7", "second"),
    ]
    kept = result.report.entries[1]
    assert (kept.action, kept.note) == ("kept", "the slot has no name in the teaching table")


def test_the_same_name_always_maps_to_the_same_slot() -> None:
    body = Step(type="loop", inputs={"DO": [move("Clamp Point"), move("clamp_point")]})
    result = map_parameters(program(move("clamp point"), body), points=points("", ""))
    assert point_fields(result.program) == ["P1", "P1", "P1"]
    (entry,) = result.report.entries
    assert entry.spellings == ["Clamp Point", "clamp_point"]
    assert [b.path for b in entry.blocks] == ["main/2", "main/3/DO/1", "main/3/DO/2"]


def test_numbers_and_flags_are_mapped_in_every_documented_field() -> None:
    compare = Step(
        type="logic_compare",
        fields={"OP": "EQ"},
        inputs={"A": Step(type="math_custom_number", fields={"name": "cycle count"})},
    )
    steps = [
        Step(type="wait_timer", fields={"name": "clamp delay"}),
        Step(type="set_number", fields={"name": "Cycle_Count"}),
        Step(type="set_external_io_output_during", fields={"name": "pulse"}),
        Step(type="set_output_during", fields={"name": "N482"}),
        Step(type="controls_if", inputs={"IF0": compare, "DO0": []}),
        flag_check("bearing gripped"),
    ]
    tasks = [TaskSteps(task="Clamp", kind="sub", steps=steps)]
    nums = numbers("cnt", "", "", *[""] * 479, "_const_500")
    result = map_parameters(
        build_program(tasks), points=None, numbers=nums, flags=flags("bearing grasped", "")
    )
    walked = {s.type: s.fields.get("name") for s in result.program.walk()}
    assert walked["wait_timer"] == "N2"
    assert walked["set_number"] == walked["math_custom_number"] == "N3"
    assert walked["set_external_io_output_during"] == "N4"
    assert walked["set_output_during"] == "N482"
    assert walked["logic_custom_flag"] == "F1"  # synonym: gripped ~ grasped
    paths = {e.logical: [b.path for b in e.blocks] for e in result.report.entries}
    assert paths["Cycle_Count"] == ["Clamp/2", "Clamp/5/IF0/A"]
    assert paths["bearing gripped"] == ["Clamp/6/condition"]


def test_a_full_table_raises_listing_every_name_left_over() -> None:
    with pytest.raises(NoFreeSlotError) as caught:
        map_parameters(
            program(move("home"), move("a"), move("b")),
            points=points("home", "x"),
            flags=flags("ok"),
        )
    error = caught.value
    assert isinstance(error, ParameterTableError) and isinstance(error, FlowkitError)
    assert [e.logical for e in error.entries] == ["a", "b"]
    assert "'a'" in str(error) and "'b'" in str(error) and "free slot" in str(error)
    assert error.report.entries[0].action == "reused"


def test_an_unknown_or_wrong_kind_slot_key_is_an_error_and_stays() -> None:
    result = map_parameters(
        program(move("P7"), move("N5"), move("")), points=points("a", ""), numbers=numbers("x")
    )
    assert point_fields(result.program) == ["P7", "N5", ""]
    notes = [(e.action, e.note) for e in result.report.entries]
    assert notes[0] == ("error", "P7 is not in the teaching table (it has P1…P2); use one of those")
    assert notes[1][0] == "error" and "number variable key" in notes[1][1]
    assert notes[2][0] == "error" and "empty" in notes[2][1]
    assert not result.report.ok and len(result.report.problems) == 3


def test_without_a_table_names_stay_in_place_and_are_unmapped() -> None:
    source = program(
        move("safe point"),
        move("P3"),
        Step(type="wait_timer", fields={"name": "clamp delay"}),
    )
    result = map_parameters(source, points=points("", ""))
    assert point_fields(result.program) == ["P1", "P3"]
    timer = next(s for s in result.program.walk() if s.type == "wait_timer")
    assert timer.fields["name"] == "clamp delay"
    entry = result.report.entries[-1]
    assert (entry.kind, entry.action, entry.slot) == ("number", "unmapped", None)
    assert result.numbers is None and result.flags is None
    nothing = map_parameters(source, points=None)
    assert nothing.program == source and nothing.points is None
    assert [e.action for e in nothing.report.entries] == ["unmapped", "kept", "unmapped"]
    assert nothing.report.ok  # unmapped is for the validator to flag, not an error here


def test_the_input_program_and_tables_are_not_modified() -> None:
    source = program(move("home"), move("new place"))
    before = source.model_dump()
    table = points("home", "")
    result = map_parameters(source, points=table)
    assert source.model_dump() == before
    assert [s.name for s in table] == ["home", ""]
    assert result.points is not None and [s.name for s in result.points] == ["home", "new place"]
    assert result.program is not source


# --- report ---------------------------------------------------------------------------------


def test_the_report_reads_as_markdown_and_round_trips_as_json() -> None:
    table = TeachingTable.load(own_table("teaching.yaml"))
    result = map_parameters(
        program(move("safe point"), move("odd | name"), move("P999")), points=table
    )
    text = result.report.to_markdown()
    assert text.startswith("# Parameter mapping\n")
    assert "| point | safe point | P1 | initial_point | reused | main/2 |" in text
    assert "odd \\| name" in text
    assert "Summary: 1 reused, 1 assigned, 1 error." in text
    assert f"`{table.source}`" in text
    data = json.loads(result.report.model_dump_json())
    assert data["entries"][0]["blocks"][0] == {
        "path": "main/2",
        "block_type": "moveP",
        "field": "point_name_list",
        "block_id": None,
    }
    assert MappingReport.model_validate_json(result.report.model_dump_json()) == result.report


# --- tables ----------------------------------------------------------------------------


def _round_trips(path: Path, tmp_path: Path) -> None:
    cls = table_class(path)
    table = cls.load(path)
    saved = table.save(tmp_path / path.name)
    again = cls.load(saved)
    assert again == table
    assert [s.key for s in again] == [s.key for s in table]  # file order kept
    assert [s.entries for s in again] == [s.entries for s in table]  # entry order and types
    assert again.dumps() == saved.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", OWN_TABLES)
def test_own_tables_round_trip(name: str, tmp_path: Path) -> None:
    _round_trips(own_table(name), tmp_path)


@pytest.mark.parametrize("relative", reference_params(REFERENCE_TABLES))
def test_reference_tables_round_trip(relative: str, tmp_path: Path) -> None:
    _round_trips(reference_file(relative), tmp_path)


def test_own_tables_keep_every_key_and_value_as_is() -> None:
    points = TeachingTable.load(own_table("teaching.yaml"))
    assert [s.key for s in points][:5] == ["P1", "P10", "P11", "P12", "P13"]  # file order
    assert slot(points, "P1").get("tool") == 1.0 and slot(points, "P1").get("vel") == 50
    assert isinstance(slot(points, "P1").get("vel"), int)
    assert isinstance(slot(points, "P1").get("acc"), float)
    assert slot(points, "P12").get("tool", "missing") is None
    assert slot(points, "P12").name == "  spaced name "  # never trimmed
    assert slot(points, "P10").name == "ギア仮置き台"
    assert slot(points, "P11").name.startswith("(block type: `moveP`) 4.2. move slowly")
    assert [s.key for s in points.free_slots()][:3] == ["P5", "P9", "P13"]
    nums = NumberTable.load(own_table("number_parameter.yaml"))
    assert (slot(nums, "N5").name, slot(nums, "N5").value) == ("start", 2.0)
    assert slot(nums, "N483").value == 800 and isinstance(slot(nums, "N483").value, int)
    flag = FlagTable.load(own_table("flag_parameter.yaml"))
    assert slot(flag, "F480").name == "_status_ready"
    assert (slot(flag, "F4").name, slot(flag, "F4").value) == ("gear_gripped", True)
    assert [s.key for s in flag.free_slots()][:2] == ["F1", "F2"]


def test_reference_tables_keep_every_key_and_value_as_is() -> None:
    llm = TeachingTable.load(reference_file("synced_files/llm_test/config/teaching.yaml"))
    assert slot(llm, "P1").get("posture") == 0.0
    synced = TeachingTable.load(reference_file("synced_files/teaching.yaml"))
    assert [s.key for s in synced][:3] == ["P1", "P10", "P100"]
    assert slot(synced, "P100").get("tool", "missing") is None
    nums = NumberTable.load(reference_file("synced_files/llm_test/config/number_parameter.yaml"))
    assert (slot(nums, "N5").name, slot(nums, "N5").value) == ("start", 2.0)
    flag = FlagTable.load(reference_file("synced_files/llm_test/config/flag_parameter.yaml"))
    assert slot(flag, "F480").name == "_status_ready"
    assert [s.key for s in flag.free_slots()][:2] == ["F1", "F2"]


def test_save_refuses_the_file_the_table_came_from(tmp_path: Path) -> None:
    original = tmp_path / "teaching.yaml"
    original.write_text("P1:\n  name: a\n  x_pos: 1.0\n", encoding="utf-8")
    table = TeachingTable.load(original)
    with pytest.raises(ParameterTableError, match="never modified in place"):
        table.save(original)
    link = tmp_path / "link.yaml"
    os.link(original, link)
    with pytest.raises(ParameterTableError):
        table.save(link)
    assert original.read_text(encoding="utf-8") == "P1:\n  name: a\n  x_pos: 1.0\n"
    table.save(tmp_path / "copy.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.yaml", "link.yaml", "teaching.yaml"]


BAD_FILES = [
    ("- P1\n- P2\n", TeachingTable, None, "must be a mapping"),
    ("", TeachingTable, None, "an empty file"),
    ("Q1: {name: a}\n", TeachingTable, "Q1", "keys are P1"),
    ("P01: {name: a}\n", TeachingTable, "P01", "keys are P1"),
    ("P1: just text\n", TeachingTable, "P1", "must be a mapping"),
    ("P1: {x_pos: 1.0}\n", TeachingTable, "P1", "has no 'name'"),
    ("P1: {name: 12}\n", TeachingTable, "P1.name", "quote it"),
    ("P1: {name: no}\n", TeachingTable, "P1.name", "must be text"),
    ("P1: {name: a, x_pos: '1.0'}\n", TeachingTable, "P1.x_pos", "finite number or null"),
    ("P1: {name: a, x_pos: .inf}\n", TeachingTable, "P1.x_pos", "finite number"),
    ("P1: {name: a, x_pos: [1, 2]}\n", TeachingTable, "P1.x_pos", "finite number"),
    ("N1: {name: a}\n", NumberTable, "N1", "has no 'value'"),
    ("N1: {name: a, value: true}\n", NumberTable, "N1.value", "finite number"),
    ("N1: {name: a, value: 1, unit: ms}\n", NumberTable, "N1.unit", "only 'name' and 'value'"),
    ("F1: {name: a, value: 1}\n", FlagTable, "F1.value", "true or false"),
    ("P1: {name: a}\nP1: {name: b}\n", TeachingTable, None, "twice"),
    ("P1: {name: 'a'\n", TeachingTable, None, "not a valid parameter table YAML"),
    ("P1: {name: a}\n---\nP2: {name: b}\n", TeachingTable, None, "single document"),
]


@pytest.mark.parametrize(("text", "cls", "key", "fragment"), BAD_FILES)
def test_malformed_tables_raise_a_typed_error_naming_file_and_key(
    text: str, cls: type[ParameterTable], key: str | None, fragment: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParameterTableError) as caught:
        cls.load(path)
    assert caught.value.path == str(path) and str(path) in str(caught.value)
    assert caught.value.key == key
    assert fragment in str(caught.value)


def test_missing_unreadable_and_non_utf8_files_raise_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ParameterTableError, match="not found"):
        TeachingTable.load(tmp_path / "nope.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"P1: {name: caf\xe9}\n")
    with pytest.raises(ParameterTableError, match="not UTF-8"):
        TeachingTable.load(tmp_path / "latin1.yaml")
    with pytest.raises(ParameterTableError, match="cannot be read"):
        TeachingTable.load(tmp_path)


HOSTILE = {
    "python object": "P1: !!python/object/apply:os.system ['touch {marker}']\n",
    "python name": "P1: {name: !!python/name:os.system ''}\n",
    "anchor and alias": "P1: &p {name: a}\nP2: *p\n",
    "merge key": "P1: &p {name: a}\nP2:\n  <<: *p\n",
    "billion laughs": (
        "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n"
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
    ),
    "deep nesting": "P1: " + "[" * 5000 + "]" * 5000 + "\n",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_yaml_is_refused_quickly_without_side_effects(kind: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "teaching.yaml"
    path.write_text(HOSTILE[kind].replace("{marker}", str(marker)), encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(ParameterTableError) as caught:
        TeachingTable.load(path)
    assert time.perf_counter() - started < 2.0
    assert caught.value.path == str(path)
    assert not marker.exists()


def test_a_huge_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "teaching.yaml"
    line = "P1: {name: a}\n"
    path.write_text("#" * (MAX_TABLE_BYTES - len(line) + 1) + "\n" + line, encoding="utf-8")
    with pytest.raises(ParameterTableError, match="larger than"):
        TeachingTable.load(path)
    many = "".join(f"- {i}\n" for i in range(250_000))[: MAX_TABLE_BYTES - 10]
    path.write_text(many, encoding="utf-8")
    with pytest.raises(ParameterTableError, match="over 200000 values"):
        TeachingTable.load(path)


# --- apply_teaching ---------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_apply_teaching_writes_new_files_and_never_touches_the_inputs(tmp_path: Path) -> None:
    inputs = tmp_path / "config"
    shutil.copytree(TABLES, inputs)
    before = _snapshot(inputs)
    source = program(
        move("P1"),
        move("standby above the gear"),
        Step(type="wait_timer", fields={"name": "clamp delay"}),
        flag_check("_status_ready"),
    )
    time.sleep(0.01)  # so a rewrite of an input would show in its mtime
    out = tmp_path / "run" / "params"
    mapped, report = apply_teaching(source, str(inputs / "teaching.yaml"), out)
    assert _snapshot(inputs) == before
    assert sorted(p.name for p in out.iterdir()) == [
        "flag_parameter.yaml",
        "number_parameter.yaml",
        "parameter_mapping.json",
        "parameter_mapping.md",
        "teaching.yaml",
    ]
    assert point_fields(mapped) == ["P1", "P5"]
    assert [e.action for e in report.entries] == ["kept", "assigned", "assigned", "reused"]
    written = TeachingTable.load(out / "teaching.yaml")
    assert slot(written, "P5").name == "standby above the gear"
    assert slot(NumberTable.load(out / "number_parameter.yaml"), "N2").name == "clamp delay"
    saved_report = (out / "parameter_mapping.json").read_bytes()
    assert MappingReport.model_validate_json(saved_report) == report
    assert (out / "parameter_mapping.md").read_text(encoding="utf-8") == report.to_markdown()
    # Re-running into the same output directory replaces the outputs, still not the inputs.
    apply_teaching(mapped, inputs / "teaching.yaml", out)
    assert _snapshot(inputs) == before


def test_apply_teaching_refuses_to_write_over_its_input(tmp_path: Path) -> None:
    shutil.copy(own_table("teaching.yaml"), tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(ParameterTableError, match="never modified in place"):
        apply_teaching(program(move("new point")), tmp_path / "teaching.yaml", tmp_path)
    assert _snapshot(tmp_path) == before
    # A differently named teaching file with a sibling table: still nothing is written.
    (tmp_path / "teaching.yaml").rename(tmp_path / "cell.yaml")
    shutil.copy(own_table("number_parameter.yaml"), tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(ParameterTableError, match=r"number_parameter\.yaml"):
        apply_teaching(program(move("new point")), tmp_path / "cell.yaml", tmp_path)
    assert _snapshot(tmp_path) == before


def test_apply_teaching_without_a_table_only_writes_the_report(tmp_path: Path) -> None:
    mapped, report = apply_teaching(program(move("safe point")), None, tmp_path)
    assert point_fields(mapped) == ["safe point"]
    assert report.entries[0].action == "unmapped"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "parameter_mapping.json",
        "parameter_mapping.md",
    ]


def test_a_full_table_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "teaching.yaml").write_text("P1: {name: a}\n", encoding="utf-8")
    with pytest.raises(NoFreeSlotError):
        apply_teaching(program(move("b")), tmp_path / "in" / "teaching.yaml", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- properties --------------------------------------------------------------------------------

NAMES = [
    "safe point", "Safe_Point", "home", "initial position", "standby above bearing",
    "bearing grasp", "grip bearing", "P1", "p2", "P3", "P99", "N1", "", "a", "A ",
]  # fmt: skip
SLOT_NAMES = ["", "", "", "initial_point", "home", "bearing grasp point", "a", "x"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Program, TeachingTable, NumberTable, FlagTable]:
    def field_step(kind: str) -> Step:
        name = draw(st.sampled_from(NAMES))
        block = {"point": "moveL", "number": "wait_timer", "flag": "logic_custom_flag"}[kind]
        field = "point_name_list" if kind == "point" else "name"
        return Step(type=block, fields={field: name})

    steps = draw(st.lists(st.sampled_from(["point", "number", "flag", "loop"]), max_size=10))
    body = [
        Step(type="loop", inputs={"DO": [field_step("point")]}) if k == "loop" else field_step(k)
        for k in steps
    ]
    pts = draw(st.lists(st.sampled_from(SLOT_NAMES), min_size=1, max_size=8))
    nums = draw(st.lists(st.sampled_from(SLOT_NAMES), min_size=1, max_size=4))
    flg = draw(st.lists(st.sampled_from(SLOT_NAMES), min_size=1, max_size=4))
    return program(*body), points(*pts), numbers(*nums), flags(*flg)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_mapping_is_deterministic_and_idempotent(
    case: tuple[Program, TeachingTable, NumberTable, FlagTable],
) -> None:
    prog, pts, nums, flg = case
    try:
        first = map_parameters(prog, points=pts, numbers=nums, flags=flg)
    except NoFreeSlotError as error:
        with pytest.raises(NoFreeSlotError) as again:
            map_parameters(prog, points=pts, numbers=nums, flags=flg)
        assert str(again.value) == str(error)
        return
    repeat = map_parameters(prog, points=pts, numbers=nums, flags=flg)
    assert repeat == first  # deterministic, report included
    second = map_parameters(
        first.program, points=first.points, numbers=first.numbers, flags=first.flags
    )
    assert second.program == first.program
    assert (second.points, second.numbers, second.flags) == (
        first.points,
        first.numbers,
        first.flags,
    )
    assert all(e.action in ("kept", "error") for e in second.report.entries)
