"""`flowkit sas ...` from a shell: a whole review cycle across processes, and the offline tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit.cli import main

from .scripted_cell import STEPS, TASKS, teaching_file


def rules_file(folder: Path) -> Path:
    """A `scripted:PATH` LLM for the pick-and-place cell (one rule per task)."""
    rules = [{"match": "Current plan:", "response": TASKS}]
    rules += [
        {"match": f'Task to write:\n{{"name": "{name}"', "response": {"steps": steps}}
        for name, steps in STEPS.items()
    ]
    path = folder / "llm.json"
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def flowkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowkit", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_review_cycle_runs_across_processes(tmp_path: Path) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    teaching = teaching_file(tmp_path)
    started = flowkit(
        "sas", "start", "Pick and place, forever.", "--llm", llm, "--thread", "cell",
        "--teaching", str(teaching), "--output-dir", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "Task list to review:" in started.stdout and "Pick_Part [GraspTask]" in started.stdout
    assert (tmp_path / ".flowkit").is_dir(), "the default store is ./.flowkit"

    fed = flowkit("sas", "feedback", "cell", "slower please", "--llm", llm, cwd=tmp_path)
    assert fed.returncode == 0 and "Task list to review:" in fed.stdout

    steps = flowkit("sas", "approve", "cell", "--llm", llm, cwd=tmp_path)
    assert steps.returncode == 0 and "## Pick_Part (GraspTask)" in steps.stdout

    status = flowkit("sas", "status", "cell", cwd=tmp_path)
    assert "waiting at sas_awaiting_module_steps_review" in status.stdout

    done = flowkit("sas", "approve", "cell", "--llm", llm, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Robot program: {(tmp_path / 'out' / 'flow.xml').resolve()}" in done.stdout


def test_edit_submits_a_text_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "store")
    common = ["--llm", llm, "--store", store]
    assert main(["sas", "start", "Pick and place", "--thread", "c", *common,
                 "--teaching", str(teaching_file(tmp_path)),
                 "--output-dir", str(tmp_path / "out")]) == 0  # fmt: skip
    assert main(["sas", "approve", "c", *common]) == 0
    review = capsys.readouterr().out
    text = review.split("Module steps to review:\n\n", 1)[1].split("\nNext:", 1)[0]
    edited = tmp_path / "steps.txt"
    edited.write_text(text.replace("set_speed 10", "set_speed 30", 1), encoding="utf-8")
    assert main(["sas", "edit", "c", str(edited), *common]) == 0
    assert "Robot program:" in capsys.readouterr().out


def test_start_without_a_model_says_how_to_configure_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    code = main(["sas", "start", "Pick", "--store", str(tmp_path)])
    assert code == 1
    assert "FLOWKIT_LLM" in capsys.readouterr().err


def test_offline_compile_validate_decompile_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = {
        "kind": "robot-tasks",
        "tasks": [
            {"task": name, "kind": "main" if name == "Main_Task" else "sub", "steps": body}
            for name, body in STEPS.items()
        ],
    }
    source = tmp_path / "steps.json"
    source.write_text(json.dumps(steps), encoding="utf-8")
    teaching = teaching_file(tmp_path)
    xml = tmp_path / "build" / "flow.xml"
    assert main(["sas", "compile", str(source), "-o", str(xml), "--teaching", str(teaching)]) == 0
    assert (tmp_path / "build" / "parameter_mapping.md").is_file()
    assert main(["sas", "validate", str(xml)]) == 0
    assert "valid (0 error(s)" in capsys.readouterr().out
    back = tmp_path / "back.txt"
    assert main(["sas", "decompile", str(xml), "-o", str(back)]) == 0
    assert "moveP" in back.read_text(encoding="utf-8")


def test_validate_lists_every_problem_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.xml"
    broken.write_text(
        '<xml xmlns="https://developers.google.com/blockly/xml">\n'
        '  <block type="select_robot" id="a" x="0" y="0">\n'
        '    <field name="robotName">r</field>\n'
        "    <next>\n"
        '      <block type="teleport" id="b"/>\n'
        "    </next>\n"
        "  </block>\n"
        "</xml>\n",
        encoding="utf-8",
    )
    assert main(["sas", "validate", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "line 5" in out and "teleport" in out


def test_graph_shows_every_state_and_gate(capsys: pytest.CaptureFixture[str]) -> None:
    from flowkit.sas import flow

    assert main(["graph", "sas", "--format", "mermaid"]) == 0
    chart = capsys.readouterr().out
    for state in flow.states:
        if state != "__end__":
            assert f"    {state}" in chart, state
    for gate in flow.gates:
        assert f'{gate}{{{{"{gate}"}}}}' in chart, "gates are drawn as hexagons"
