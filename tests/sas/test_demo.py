"""`flowkit demo sas`: the README's main job runs offline and stays in step with the prompts."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.llm import load_cassette
from flowkit.robot import decompile, validate_xml
from flowkit.sas.cli import DEMO_LLM
from flowkit.sas.demo import demo_file, record_cassette, run_sas_demo
from flowkit.sas.workflow import flow
from flowkit.stores import JsonFileStore


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


def test_the_hints_the_demo_prints_run_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default store ./.flowkit is not the demo's
    monkeypatch.delenv("FLOWKIT_STORE", raising=False)
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    store = tmp_path / "demo store"
    out = io.StringIO()
    assert run_sas_demo(str(store), None, out) == 0
    hints = [line for line in out.getvalue().splitlines() if line.startswith("Next: ")]
    assert hints
    # The last hint: `flowkit sas approve THREAD ...` at the module steps review.
    approve = hints[-1].removeprefix("Next: ").split("  |  ")[0]
    argv = shlex.split(approve)
    assert argv[:3] == ["flowkit", "sas", "approve"]
    # Run as printed: it finds the demo's store (the thread is done, so there is nothing
    # more to approve, but it must not say the thread or the store does not exist).
    status = ["sas", "status", *argv[3:]]
    assert main(status) == 0, capsys.readouterr().err
    assert "done at final_xml_generated_success" in capsys.readouterr().out
    # ... and the thread keeps the demo's LLM, so a printed `approve` replays its answers.
    assert main([*status, "--json"]) == 0
    thread = argv[3]
    assert Runner(flow, store=JsonFileStore(store)).get_state(thread).state.config.llm == DEMO_LLM
