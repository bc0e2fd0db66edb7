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


@pytest.mark.slow
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
    assert code == 2  # an LLM not configured, like a bad --llm: usage to fix, not a failure
    assert "FLOWKIT_LLM" in capsys.readouterr().err


def test_a_task_that_is_not_utf8_is_unusable_input_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    undecodable = b"pick \xff\xfe part".decode("utf-8", "surrogateescape")  # as argv has it
    store = tmp_path / "store"
    code = main(["sas", "start", undecodable, "--llm", "replay:demo", "--store", str(store)])
    assert code == 2 and "not UTF-8" in capsys.readouterr().err
    assert not (store / "threads").exists() or not any((store / "threads").iterdir())


def test_compile_reads_the_text_form_with_the_catalog_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = tmp_path / "gripper.json"
    blocks.write_text(json.dumps({"name": "gripper", "blocks": {"grip": {
        "role": "process", "label": "Grip", "description": "Closes the gripper with a force.",
        "fields": [{"name": "force", "kind": "integer", "min": 1, "max": 50, "default": "10"}],
        "text": {"positional": ["force"]}}}}))  # fmt: skip
    steps = tmp_path / "steps.txt"
    steps.write_text("1. select_robot r\n2. grip 20\n", encoding="utf-8")
    output = tmp_path / "flow.xml"
    code = main(["sas", "compile", str(steps), "-o", str(output), "--catalog", str(blocks)])
    assert code == 0, capsys.readouterr().err
    assert '<field name="force">20</field>' in output.read_text(encoding="utf-8")


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


HUGE = "x" * 5_000_000


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (HUGE, "is not a step"),
        (f"1. moveP {HUGE}", "[bad_field_value] field `point_name_list` of `moveP`"),
        (f"1. moveP P1 {HUGE}=1", "[unknown_field] `moveP` has no field"),
        (f"1. moveP P1 @ {HUGE}", "expected key=value in the `@` annotation"),
        (f"1. {HUGE}", "[unknown_block_type] unknown block type"),
        (f"1. moveP point={HUGE} point=P1", "field `point_name_list` is given twice"),
    ],
    ids=["not a step", "bad field value", "unknown field", "annotation", "block type", "twice"],
)
def test_a_huge_one_line_file_is_never_echoed_back_whole(
    content: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = tmp_path / "steps.txt"
    steps.write_text(content, encoding="utf-8")
    assert main(["sas", "compile", str(steps), "-o", str(tmp_path / "flow.xml")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert says in captured.err  # still says what is wrong
    assert len(captured.err) < 2_000


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (f'<block type="{HUGE}" id="a"/>', "[unknown_block_type]"),
        (f'<block type="moveP" id="{HUGE}"/>', "<moveP id="),
        (f'<block type="moveP" id="a"><field name="point_name_list">{HUGE}</field></block>',
         "[bad_field_value]"),
    ],
    ids=["block type", "block id", "field value"],
)  # fmt: skip
def test_a_huge_value_in_a_program_is_never_echoed_back_whole(
    block: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xml = tmp_path / "flow.xml"
    xml.write_text(f'<xml xmlns="https://developers.google.com/blockly/xml">{block}</xml>')
    main(["sas", "validate", str(xml)])
    captured = capsys.readouterr()
    assert says in captured.out
    assert len(captured.out + captured.err) < 3_000


def test_graph_shows_every_state_and_gate(capsys: pytest.CaptureFixture[str]) -> None:
    from flowkit.sas import flow

    assert main(["graph", "sas", "--format", "mermaid"]) == 0
    chart = capsys.readouterr().out
    for state in flow.states:
        if state != "__end__":
            assert f"    {state}" in chart, state
    for gate in flow.gates:
        assert f'{gate}{{{{"{gate}"}}}}' in chart, "gates are drawn as hexagons"


# -- the offline review cycle with the shipped cassette ------------------------------------


@pytest.mark.slow
def test_the_shipped_cassette_runs_the_cycle_as_four_processes(tmp_path: Path) -> None:
    from flowkit.sas.demo import FEEDBACK, REQUEST, demo_file

    out = tmp_path / "out"
    teaching = str(demo_file("teaching.yaml"))
    steps = [
        ("sas", "start", REQUEST, "--llm", "replay:demo", "--thread", "cell",
         "--teaching", teaching, "--output-dir", str(out)),
        ("sas", "feedback", "cell", FEEDBACK),
        ("sas", "approve", "cell"),
        ("sas", "approve", "cell"),
    ]  # fmt: skip
    for args in steps:  # each a new process: answers are found by content, not by order
        done = flowkit(*args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "error" not in done.stderr
    status = json.loads(flowkit("sas", "status", "cell", "--json", cwd=tmp_path).stdout)
    assert status["status"] == "done" and "CNV_Put_BH_On_PLT" in status["tasks"]
    assert (out / "flow.xml").is_file()
    checked = flowkit("sas", "validate", str(out / "flow.xml"), "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["valid"] and report["errors"] == 0


@pytest.mark.slow
def test_the_demo_request_needs_no_teaching_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.sas.demo import FEEDBACK, REQUEST

    store, out = str(tmp_path / "store"), tmp_path / "out"
    steps = [
        ["sas", "start", REQUEST, "--llm", "replay:demo", "--thread", "cell",
         "--output-dir", str(out)],
        ["sas", "feedback", "cell", FEEDBACK],
        ["sas", "approve", "cell"],
        ["sas", "approve", "cell"],
    ]  # fmt: skip
    for argv in steps:
        assert main([*argv, "--store", store]) == 0, capsys.readouterr()
        capsys.readouterr()
    assert main(["sas", "status", "cell", "--json", "--store", store]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["status"] == "done" and (out / "flow.xml").is_file()
    # The demo cell's table: its taught safe point is P1.
    mapping = json.loads((out / "parameter_mapping.json").read_text(encoding="utf-8"))
    assert {"logical": "safe point", "slot": "P1"}.items() <= next(
        e for e in mapping["entries"] if e["logical"] == "safe point"
    ).items()


def test_demo_files_gives_a_runnable_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sas", "demo-files", str(tmp_path / "bearing")]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {tmp_path / 'bearing' / 'cassette.json'}" in printed
    assert "--llm replay:" in printed and "request.txt" in printed
    request = (tmp_path / "bearing" / "request.txt").read_text(encoding="utf-8").strip()
    store = str(tmp_path / "store")
    assert main(["sas", "start", request, "--store", store, "--thread", "t",
                 "--llm", f"replay:{tmp_path / 'bearing' / 'cassette.json'}"]) == 0  # fmt: skip
    assert "Task list to review:" in capsys.readouterr().out


def test_an_unrecorded_request_on_the_demo_cassette_shows_the_demos_own_request(
    tmp_path: Path,
) -> None:
    done = flowkit("sas", "start", "Weld two plates, forever.", "--llm", "replay:demo",
                   "--thread", "w", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1
    assert "answer only the demo's own request" in done.stderr
    assert '"An automated cell assembles a bearing (BRG)' in done.stderr
    assert "flowkit sas demo-files DIR" in done.stderr and "--llm openai:MODEL" in done.stderr
    assert "--record" not in done.stderr  # re-recording the shipped cassette helps nobody
    assert "Weld" not in done.stderr and "Traceback" not in done.stderr
    status = flowkit("sas", "status", "w", "--json", cwd=tmp_path)
    state = json.loads(status.stdout)
    assert (state["node"], state["is_error"]) == ("sas_awaiting_task_list_review", True)


# -- a failure returns to review, and retry ------------------------------------------------


@pytest.mark.slow
def test_a_bad_teaching_table_returns_to_review_and_status_shows_it(tmp_path: Path) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    table = tmp_path / "cell" / "teaching.yaml"
    table.parent.mkdir()
    table.write_text("points: [not, a teaching table\n", encoding="utf-8")
    store = str(tmp_path / "store")
    common = ("--store", store)
    started = flowkit("sas", "start", "Pick and place", "--thread", "c", "--llm", llm,
                      "--teaching", str(table), "--output-dir", str(tmp_path / "out"), *common,
                      cwd=tmp_path)  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert flowkit("sas", "approve", "c", *common, cwd=tmp_path).returncode == 0
    failed = flowkit("sas", "approve", "c", *common, cwd=tmp_path)
    assert failed.returncode == 1
    assert "error in parameter_mapping: Parameter mapping failed" in failed.stderr
    assert f"Next: flowkit sas retry c --store {store}" in failed.stdout

    status = flowkit("sas", "status", "c", *common, cwd=tmp_path)
    assert status.returncode == 0
    assert "waiting at sas_awaiting_module_steps_review" in status.stdout
    assert "error in parameter_mapping" in status.stderr
    data = json.loads(flowkit("sas", "status", "c", "--json", *common, cwd=tmp_path).stdout)
    assert data["is_error"] and data["failed_step"] == "parameter_mapping"

    teaching_file(table.parent)  # fixed
    retried = flowkit("sas", "retry", "c", *common, cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert "Robot program:" in retried.stdout
    nothing = flowkit("sas", "retry", "c", *common, cwd=tmp_path)
    assert nothing.returncode == 1 and "nothing to retry" in nothing.stderr


# -- errors on stderr, no traceback, read-only status --------------------------------------


def test_status_never_creates_a_store(tmp_path: Path) -> None:
    typo = tmp_path / "typo" / "a" / "b"
    done = flowkit("sas", "status", "x", "--store", str(typo), cwd=tmp_path)
    assert done.returncode == 2 and "No store at" in done.stderr and done.stdout == ""
    assert not (tmp_path / "typo").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    done = flowkit("sas", "status", "x", "--store", str(empty), cwd=tmp_path)
    assert done.returncode == 1 and "No thread `x`" in done.stderr
    assert list(empty.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xff\xfe\x00\x81 not text", "is not UTF-8 text"),
        (b"steps\x00with NUL", "NUL bytes"),
        (b"", "is empty"),
        (b"x" * 1_000_001, "at most 1,000,000"),
    ],
)
def test_edit_refuses_unusable_files_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "store")
    assert main(["sas", "start", "Pick and place", "--thread", "c", "--llm", llm,
                 "--store", store]) == 0  # fmt: skip
    capsys.readouterr()
    bad = tmp_path / "edit.txt"
    bad.write_bytes(content)
    assert main(["sas", "edit", "c", str(bad), "--store", store]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and captured.out == ""
    assert len(captured.err) < 500, "the input is never echoed back"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_edit_of_an_endless_or_huge_sparse_file_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "store")
    assert main(["sas", "start", "Pick and place", "--thread", "c", "--llm", llm,
                 "--store", store]) == 0  # fmt: skip
    capsys.readouterr()
    sparse = tmp_path / "huge.txt"
    with sparse.open("wb") as handle:
        handle.truncate(6 << 30)  # 6 GB that take no room on the disk
    for file in ("/dev/zero", str(sparse)):
        assert main(["sas", "edit", "c", file, "--store", store]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert f"{file} is larger than an edit may be (at most 1,000,000 bytes)" in captured.err


def test_errors_go_to_stderr_and_name_the_users_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sas", "approve", "ghost", "--store", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "No thread `ghost`" in captured.err
    assert main(["sas", "validate", str(tmp_path / "missing.xml")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "missing.xml" in captured.err
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert (
        main(["sas", "start", "Pick", "--output-dir", str(a_file), "--store", str(tmp_path)]) == 2
    )
    captured = capsys.readouterr()
    assert "is not a folder" in captured.err and not list(tmp_path.glob("run_*"))
    blocked = a_file / "sub" / "flow.xml"
    assert main(["sas", "decompile", str(tmp_path / "missing.xml"), "-o", str(blocked)]) == 1
    err = capsys.readouterr().err
    assert str(blocked) in err and ".tmp" not in err


def test_progress_goes_to_stderr_only_when_asked(tmp_path: Path) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    quiet = flowkit("sas", "start", "Pick", "--llm", llm, "--thread", "a", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = flowkit("sas", "approve", "a", "--progress", cwd=tmp_path)
    assert "task_list_to_module_steps: module steps for 5 task(s)" in loud.stderr
    assert "task_list_to_module_steps: done in" in loud.stderr
    assert "task_list_to_module_steps" not in loud.stdout.split("\n", 1)[1]


def test_hints_carry_the_store_and_a_changed_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "my store")
    assert main(["sas", "start", "Pick", "--llm", llm, "--thread", "t", "--store", store]) == 0
    out = capsys.readouterr().out
    assert f"flowkit sas approve t --store '{store}'" in out and "--llm" not in out
    (tmp_path / "other").mkdir()
    other = f"scripted:{rules_file(tmp_path / 'other')}"
    assert main(["sas", "feedback", "t", "more", "--store", store, "--llm", other]) == 0
    assert f"--store '{store}' --llm {other}" in capsys.readouterr().out


def test_validate_warns_about_an_empty_program_and_speaks_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text('<xml xmlns="https://developers.google.com/blockly/xml"></xml>')
    assert main(["sas", "validate", str(empty)]) == 0
    assert "warning [no_main_program]" in capsys.readouterr().out
    assert main(["sas", "validate", str(empty), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["warnings"] == 1 and report["problems"][0]["code"] == "no_main_program"


def test_compile_with_teaching_names_every_file_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = {"kind": "robot-tasks", "tasks": [
        {"task": n, "kind": "main" if n == "Main_Task" else "sub", "steps": b}
        for n, b in STEPS.items()]}  # fmt: skip
    source = tmp_path / "steps.json"
    source.write_text(json.dumps(steps), encoding="utf-8")
    xml = tmp_path / "build" / "flow.xml"
    teaching = teaching_file(tmp_path)
    assert main(["sas", "compile", str(source), "-o", str(xml), "--teaching", str(teaching)]) == 0
    printed = capsys.readouterr().out
    for name in ("flow.xml", "teaching.yaml", "parameter_mapping.md", "parameter_mapping.json"):
        assert f"wrote {xml.parent / name}" in printed or f"wrote {xml}" in printed
        assert (xml.parent / name).is_file()


def test_outputs_honour_the_umask_and_store_files_stay_private(tmp_path: Path) -> None:
    import os
    import stat

    from flowkit.foundation._atomic import write_atomically

    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "flow.xml", "<xml/>")
        write_atomically(tmp_path / "journal", "{}", private=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "flow.xml").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "journal").stat().st_mode) == 0o600
    (tmp_path / "flow.xml").chmod(0o604)
    write_atomically(tmp_path / "flow.xml", "<xml>again</xml>")
    assert stat.S_IMODE((tmp_path / "flow.xml").stat().st_mode) == 0o604, "mode kept"
    with pytest.raises(OSError) as caught:
        write_atomically(tmp_path / "no" / "such" / "flow.xml", "x")
    assert caught.value.filename == str(tmp_path / "no" / "such" / "flow.xml")


@pytest.mark.parametrize(
    ("stage", "content", "expected"),
    [
        ("tasks", '{"tasks": []}', "the edited task list is not a valid plan: tasks: "),
        ("tasks", '[{"name": 5}]', "the edited task list is not a valid plan: tasks.0.name: "),
        ("steps", '{"Pick_Part": [{"nope": 1}]}', "the edited steps are not valid JSON steps: "),
    ],
)
def test_an_edit_that_does_not_validate_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stage: str, content: str, expected: str
) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    common = ["--llm", llm, "--store", str(tmp_path / "store")]
    assert main(["sas", "start", "Pick and place", "--thread", "c", *common,
                 "--teaching", str(teaching_file(tmp_path)),
                 "--output-dir", str(tmp_path / "out")]) == 0  # fmt: skip
    if stage == "steps":
        assert main(["sas", "approve", "c", *common]) == 0
    capsys.readouterr()
    edited = tmp_path / "edit.json"
    edited.write_text(content, encoding="utf-8")
    assert main(["sas", "edit", "c", str(edited), *common]) == 1  # refused; the thread waits
    err = capsys.readouterr().err
    assert expected in err, err
    assert "errors.pydantic.dev" not in err and "validation error for" not in err
    assert "[type=" not in err and "input_value" not in err


def test_an_unrecorded_request_on_a_copied_cassette_says_how_to_record_ones_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sas", "demo-files", str(tmp_path / "mine")]) == 0
    cassette = tmp_path / "mine" / "cassette.json"
    assert "record_with" not in json.loads(cassette.read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["sas", "start", "Weld two plates, forever.", "--llm", f"replay:{cassette}",
                 "--store", str(tmp_path / "store"), "--thread", "w"]) == 1  # fmt: skip
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert f"no recording in cassette {cassette.resolve()}" in text
    assert "A cassette answers only the requests recorded in it" in text
    assert "record a cassette from a real model with save_cassette" in text
    assert "flowkit.sas.demo" not in text


def test_the_demo_module_has_a_real_argument_parser(tmp_path: Path) -> None:
    helped = subprocess.run([sys.executable, "-m", "flowkit.sas.demo", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m flowkit.sas.demo")
    assert "--record" in helped.stdout and "--store" in helped.stdout
    assert "flowkit demo sas:" not in helped.stdout  # the demo did not run
    wrong = subprocess.run([sys.executable, "-m", "flowkit.sas.demo", "--nope"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert wrong.returncode == 2 and "unrecognized arguments: --nope" in wrong.stderr
    ran = subprocess.run([sys.executable, "-m", "flowkit.sas.demo", "--store", "st"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "flowkit demo sas:" in ran.stdout and (tmp_path / "st" / "output" / "flow.xml").is_file()


def test_compile_help_says_what_else_is_written_beside_the_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["sas", "compile", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "teaching.yaml, parameter_mapping.md and parameter_mapping.json" in text
    assert "beside -o" in text


def test_the_generic_start_with_the_demo_cassette_gives_the_demos_advice_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = '{"user_input": "Weld two plates, forever."}'
    words = ["start", "sas", "w", "--llm", "replay:demo", "--input", request, "--json"]
    assert main([*words, "--store", str(tmp_path)]) == 0
    state = json.loads(capsys.readouterr().out)["state"]
    assert "answer only the demo's own request" in state["error_message"]
    assert "--record" not in state["error_message"]


# -- two reviewers at once -------------------------------------------------------------------


def test_an_approval_raced_by_another_process_never_approves_the_next_review(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two reviewers run `approve` on the task list at once: exactly one wins. The other is
    refused with a conflict, never applied to the module steps review nobody has seen yet."""
    from flowkit import Runner
    from flowkit.sas import cli as sas_cli
    from flowkit.sas import flow
    from flowkit.stores import JsonFileStore

    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "store")
    common = ("--store", store, "--llm", llm)
    start = ("sas", "start", "Pick and place, forever.", "--thread", "c", *common)
    assert main([*start, "--output-dir", str(tmp_path / "out")]) == 0
    real_runner = sas_cli._runner

    def raced(store_: object, llm_: object) -> Runner:
        runner = real_runner(store_, llm_)
        looked = runner.get_state

        def get_state(thread: str) -> object:
            current = looked(thread)  # the reviewer looked; then the other reviewer approves
            other = Runner(flow, store=JsonFileStore(store), llm=sas_cli.llm_for_spec(llm))
            other.resume(thread, {"action": "approve"})
            return current

        monkeypatch.setattr(runner, "get_state", get_state)
        return runner

    monkeypatch.setattr(sas_cli, "_runner", raced)
    capsys.readouterr()
    assert main(["sas", "approve", "c", *common]) == 1
    refused = capsys.readouterr()
    assert "Module steps to review" not in refused.out
    assert "flowkit sas status c" in refused.err
    monkeypatch.undo()
    after = Runner(flow, store=JsonFileStore(store)).get_state("c")
    assert (after.status, after.node) == ("waiting", "sas_awaiting_module_steps_review")
    assert not after.state.module_steps_accepted


def test_start_refuses_an_output_dir_that_holds_the_teaching_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = f"scripted:{rules_file(tmp_path)}"
    (tmp_path / "cell").mkdir()
    table = teaching_file(tmp_path / "cell")
    store = tmp_path / "store"
    start = ["sas", "start", "Pick and place", "--thread", "c", "--llm", llm, "--store"]
    code = main([*start, str(store), "--teaching", str(table), "--output-dir", str(table.parent)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--output-dir" in err and "teaching" in err
    assert not store.exists(), "refused before any thread was started"


def test_approving_a_thread_mid_step_says_it_is_running_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A thread whose step is running (another command works on it, or one was killed
    mid-step) is not answered: the reviewer is told to wait, or to retry a stopped step."""
    from flowkit import Runner
    from flowkit.sas import flow
    from flowkit.stores import JsonFileStore

    llm = f"scripted:{rules_file(tmp_path)}"
    store = str(tmp_path / "store")
    assert (
        main(["sas", "start", "Pick and place", "--thread", "c", "--llm", llm, "--store", store])
        == 0
    )
    runner = Runner(flow, store=JsonFileStore(store))
    moved = runner.update_state("c", {}, goto="task_list_to_module_steps", reason="mid-step")
    assert moved.status == "pending"
    capsys.readouterr()
    assert main(["sas", "approve", "c", "--store", store]) == 1
    err = capsys.readouterr().err
    assert "task_list_to_module_steps" in err and "flowkit sas retry c" in err
    assert "without input" not in err
    assert runner.get_state("c").version == moved.version


def test_validate_and_compile_take_your_own_block_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A program with your own blocks (a run's `--catalog`) is checked against the same
    catalog offline; without it, its blocks are unknown."""
    catalog = tmp_path / "my-blocks.json"
    catalog.write_text(
        json.dumps(
            {
                "format_version": 1,
                "name": "my-cell",
                "blocks": {
                    "vacuum": {
                        "role": "process",
                        "description": "Switches the vacuum gripper.",
                        "fields": [
                            {"name": "state", "kind": "enum", "values": ["on", "off"]},
                        ],
                    }
                },
            }
        ),
        encoding="utf-8",
    )
    steps = tmp_path / "steps.txt"
    steps.write_text("## main Main\n1. select_robot my_robot\n2. vacuum state=off\n")
    xml = str(tmp_path / "flow.xml")
    assert main(["sas", "compile", str(steps), "-o", xml]) == 1
    assert main(["sas", "compile", str(steps), "-o", xml, "--catalog", str(catalog)]) == 0
    assert main(["sas", "validate", xml]) == 1
    capsys.readouterr()
    assert main(["sas", "validate", xml, "--catalog", str(catalog)]) == 0
    assert "valid (0 error(s)" in capsys.readouterr().out
    assert main(["sas", "validate", xml, "--catalog", str(tmp_path / "nope.json")]) == 2
    assert "--catalog" in capsys.readouterr().err


def test_the_check_hint_of_a_run_with_its_own_catalog_names_the_catalog() -> None:
    import io
    from types import SimpleNamespace

    from flowkit.sas import SasState
    from flowkit.sas._cli_output import print_result

    state = SasState(
        config={"catalog_file": "/cells/my blocks.json"},
        final_flow_xml_path="/out/flow.xml",
    )
    result = SimpleNamespace(
        thread_id="c", status="done", node="final_xml_generated_success", state=state
    )
    out = io.StringIO()
    print_result(result, out, err=io.StringIO())
    assert "Check it: flowkit sas validate /out/flow.xml --catalog '/cells/my blocks.json'" in (
        out.getvalue()
    )
