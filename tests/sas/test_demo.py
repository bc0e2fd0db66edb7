"""`flowkit demo sas`: the README's main job runs offline and stays in step with the prompts."""

from __future__ import annotations

import io
from pathlib import Path

from flowkit.cli import main
from flowkit.llm import load_cassette
from flowkit.robot import decompile, validate_xml
from flowkit.sas.demo import demo_file, record_cassette, run_sas_demo


def test_demo_runs_offline_to_a_valid_program(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_sas_demo(str(tmp_path / "demo"), str(tmp_path / "out"), out) == 0
    transcript = out.getvalue()
    assert "Task list to review:" in transcript and "Module steps to review:" in transcript
    assert "> reviewer: approve" in transcript and "> reviewer: はい" in transcript
    xml = (tmp_path / "out" / "flow.xml").read_text()
    assert [p for p in validate_xml(xml) if p.severity == "error"] == []
    program = decompile(xml)
    assert len(program.procedures()) == 13 and program.main() is not None
    assert "0 errors" in transcript
    assert (tmp_path / "out" / "parameter_mapping.md").is_file()


def test_the_shipped_cassette_matches_the_current_prompts(tmp_path: Path) -> None:
    fresh = load_cassette(record_cassette(tmp_path / "cassette.json"))
    shipped = load_cassette(demo_file("cassette.json"))
    key = lambda call: (call["request"]["schema"], str(call["request"]["messages"]))  # noqa: E731
    assert sorted(map(key, fresh)) == sorted(map(key, shipped)), (
        "prompts changed: run `python -m flowkit.sas.demo --record` and commit the cassette"
    )


def test_demo_is_the_cli_default_and_leaves_the_input_teaching_table_alone(
    tmp_path: Path, capsys: object
) -> None:
    teaching = demo_file("teaching.yaml")
    before = teaching.read_bytes()
    assert main(["demo", "--store", str(tmp_path)]) == 0
    assert teaching.read_bytes() == before
    assert (tmp_path / "output" / "teaching.yaml").read_bytes() != before
