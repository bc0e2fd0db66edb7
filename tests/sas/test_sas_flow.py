"""End-to-end runs of the sas flow with a scripted LLM: every path of the issue's acceptance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import InvalidResumeInputError, LLMTimeoutError
from flowkit.robot import decompile, validate_xml
from flowkit.robot.steps import Step
from flowkit.robot.text import render
from flowkit.sas import SasState, flow
from flowkit.sas.steps_text import render_module_steps
from flowkit.sas.tasks import TaskList
from flowkit.stores import JsonFileStore
from flowkit.testing import ScriptedLLM

from .scripted_cell import STEPS, TASKS, scripted, steps_for, teaching_file

REQUEST = "Pick the part from the feeder and place it on the pallet, forever."


def start(runner: Runner[Any], tmp_path: Path, request: str = REQUEST) -> Any:
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path))}
    return runner.start("cell", {"user_input": request, "config": config})


def test_happy_path_reaches_a_valid_program(tmp_path: Path) -> None:
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, store=JsonFileStore(tmp_path / "store"), llm=llm)
    first = start(runner, tmp_path)
    assert (first.status, first.node) == ("waiting", "sas_awaiting_task_list_review")
    assert first.state.sas_step1_generated_tasks[0].name == "Main_Task"
    second = runner.resume("cell", {"message": "OK"})
    assert (second.status, second.node) == ("waiting", "sas_awaiting_module_steps_review")
    assert set(second.state.sas_step2_module_steps) == set(STEPS)
    done = runner.resume("cell", {"action": "approve"})
    assert (done.status, done.node) == ("done", "final_xml_generated_success")
    path = Path(done.state.final_flow_xml_path or "")
    assert path.is_file() and path.parent == (tmp_path / "out").resolve()
    xml = path.read_text()
    assert [p for p in validate_xml(xml) if p.severity == "error"] == []
    program = decompile(xml)
    assert sorted(program.procedures()) == sorted(STEPS.keys() - {"Main_Task"})
    points = {s.field("point_name_list") for s in program.walk() if s.type == "moveP"}
    assert "P1" in points and all(p and p[0] == "P" and p[1:].isdigit() for p in points)
    assert done.state.sas_step3_mapping_report
    assert len(llm.calls) == 1 + len(STEPS)


def test_feedback_on_the_task_list_refines_with_the_whole_history(tmp_path: Path) -> None:
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    start(runner, tmp_path)
    runner.resume("cell", {"message": "add a quality check"})
    again = runner.resume("cell", {"message": "and slower moves"})
    assert again.node == "sas_awaiting_task_list_review"
    last_prompt = llm.calls[-1].messages[-1]["content"]
    assert REQUEST in last_prompt, "the original request is never replaced"
    assert "add a quality check" in last_prompt and "and slower moves" in last_prompt
    assert '"Main_Task"' in last_prompt, "the current plan is shown for refinement"
    assert again.state.current_user_request == REQUEST


def test_feedback_on_one_task_regenerates_only_that_task(tmp_path: Path) -> None:
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    start(runner, tmp_path)
    runner.resume("cell", {"action": "approve"})
    before = len(llm.calls)
    again = runner.resume("cell", {"message": "go slower near the part", "task": "Pick_Part"})
    assert again.node == "sas_awaiting_module_steps_review"
    new_calls = llm.calls[before:]
    assert len(new_calls) == 1 and '"name": "Pick_Part"' in new_calls[0].messages[-1]["content"]
    assert "go slower near the part" in new_calls[0].messages[-1]["content"]


def test_feedback_on_all_module_steps_regenerates_every_task(tmp_path: Path) -> None:
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    start(runner, tmp_path)
    runner.resume("cell", {"action": "approve"})
    before = len(llm.calls)
    runner.resume("cell", {"message": "use speed 50 everywhere"})
    assert len(llm.calls) - before == len(STEPS)


def test_an_edited_text_at_the_gate_replaces_and_approves(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    start(runner, tmp_path)
    review = runner.resume("cell", {"action": "approve"})
    plan = TaskList(tasks=review.state.sas_step1_generated_tasks)
    text = render_module_steps(review.state.sas_step2_module_steps, plan)
    edited = text.replace("speed 10", "speed 20", 1)
    assert edited != text
    done = runner.resume("cell", {"action": "edit", "edited": edited})
    assert done.status == "done"
    speeds = [
        s.field("speed")
        for s in done.state.sas_step2_module_steps["Pick_Part"].steps
        if s.type == "set_speed"
    ]
    assert speeds[0] == "20"


def test_a_broken_edit_is_refused_and_the_thread_keeps_waiting(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    start(runner, tmp_path)
    runner.resume("cell", {"action": "approve"})
    with pytest.raises(InvalidResumeInputError, match="Nonexistent"):
        runner.resume("cell", {"action": "edit", "edited": "## Nonexistent\n1. return\n"})
    assert runner.get_state("cell").node == "sas_awaiting_module_steps_review"


def test_an_edit_calling_the_main_program_is_refused_at_the_review(tmp_path: Path) -> None:
    """The main program is never compiled as a sub-program: a call to it would only fail at
    the merge, after the reviewer approved it (found by a defect hunt)."""
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    start(runner, tmp_path)
    review = runner.resume("cell", {"action": "approve"})
    text = render_module_steps(
        review.state.sas_step2_module_steps,
        TaskList(tasks=review.state.sas_step1_generated_tasks),
    )
    heading = next(line for line in text.splitlines() if line.startswith("## Open_Gripper"))
    edited = text.replace(heading, f"{heading}\n0. procedures_callnoreturn Main_Task", 1)
    with pytest.raises(InvalidResumeInputError, match="Main_Task"):
        runner.resume("cell", {"action": "edit", "edited": edited})
    assert runner.get_state("cell").node == "sas_awaiting_module_steps_review"


def test_feedback_for_one_task_at_the_task_list_review_is_refused_not_widened(
    tmp_path: Path,
) -> None:
    """`task` targets one task's module steps; at the task-list review there are none yet, so
    the feedback is refused (the thread keeps waiting) instead of re-planning everything."""
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    first = start(runner, tmp_path)
    calls = len(llm.calls)
    with pytest.raises(InvalidResumeInputError, match="module steps"):
        runner.resume("cell", {"action": "feedback", "message": "slower", "task": "Pick_Part"})
    after = runner.get_state("cell")
    assert (after.node, after.version) == ("sas_awaiting_task_list_review", first.version)
    assert len(llm.calls) == calls and after.state.feedback == []


def test_an_output_folder_holding_the_teaching_table_is_refused_before_any_llm_call(
    tmp_path: Path,
) -> None:
    """Parameter mapping writes the updated table as `teaching.yaml` in the output folder, so
    that folder may not hold the input table: refused at once, not after both reviews."""
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    cell = tmp_path / "cell"
    cell.mkdir()
    table = teaching_file(cell)
    config = {"output_dir": str(cell), "teaching_file": str(table)}
    first = runner.start("cell", {"user_input": REQUEST, "config": config})
    assert (first.status, first.node) == ("waiting", "sas_awaiting_task_list_review")
    assert first.state.is_error and first.state.failed_step == "initial"
    assert "teaching.yaml" in (first.state.error_message or "")
    assert llm.calls == [] and sorted(p.name for p in cell.iterdir()) == ["teaching.yaml"]


def test_one_failing_task_is_isolated_and_retried_on_approval(tmp_path: Path) -> None:
    calls = {"n": 0}

    def flaky(prompt: str) -> Any:
        calls["n"] += 1
        if calls["n"] <= 2:  # both attempts of the first round fail
            return {"steps": [{"type": "teleport"}]}
        return {"steps": STEPS["Place_Part"]}

    runner: Runner[SasState] = Runner(flow, llm=scripted(Place_Part=flaky))
    start(runner, tmp_path)
    review = runner.resume("cell", {"action": "approve"})
    assert set(review.state.module_step_failures) == {"Place_Part"}
    assert "teleport" in review.state.module_step_failures["Place_Part"]
    assert set(review.state.sas_step2_module_steps) == set(STEPS) - {"Place_Part"}
    retried = runner.resume("cell", {"message": "はい"})
    assert retried.node == "sas_awaiting_module_steps_review"
    assert retried.state.module_step_failures == {}
    assert runner.resume("cell", {"message": "承認"}).status == "done"


def test_when_no_task_gets_steps_the_step_fails_and_retry_runs_it_again(tmp_path: Path) -> None:
    down = {"on": True}

    def answer(prompt: str) -> Any:
        if down["on"]:
            raise LLMTimeoutError("the model did not answer")
        return None

    def steps(name: str) -> Any:
        return lambda prompt: answer(prompt) or {"steps": STEPS[name]}

    runner: Runner[SasState] = Runner(flow, llm=scripted(**{name: steps(name) for name in STEPS}))
    start(runner, tmp_path)
    failed = runner.resume("cell", {"action": "approve"})
    assert failed.node == "sas_awaiting_task_list_review"
    assert failed.state.is_error and failed.state.failed_step == "task_list_to_module_steps"
    assert set(failed.state.module_step_failures) == set(STEPS)
    assert "could not be generated for any" in (failed.state.error_message or "")

    down["on"] = False
    retried = runner.resume("cell", {"action": "retry"})
    assert retried.node == "sas_awaiting_module_steps_review" and not retried.state.is_error
    assert set(retried.state.sas_step2_module_steps) == set(STEPS)
    assert retried.state.module_step_failures == {}


def test_steps_written_under_the_failed_note_of_a_task_are_kept(tmp_path: Path) -> None:
    def broken(prompt: str) -> Any:
        return {"steps": [{"type": "teleport"}]}

    runner: Runner[SasState] = Runner(flow, llm=scripted(Place_Part=broken))
    start(runner, tmp_path)
    review = runner.resume("cell", {"action": "approve"})
    plan = TaskList(tasks=review.state.sas_step1_generated_tasks)
    text = render_module_steps(
        review.state.sas_step2_module_steps, plan, review.state.module_step_failures
    )
    # The reviewer fixes the failed task by writing its steps below the "# FAILED" note.
    place = render([Step.model_validate(s) for s in STEPS["Place_Part"]]).rstrip()
    note = "# FAILED: " + review.state.module_step_failures["Place_Part"]
    edited = text.replace(note, f"{note}\n{place}", 1)
    done = runner.resume("cell", {"action": "edit", "edited": edited})
    assert done.status == "done", done.state.module_step_failures
    assert done.state.sas_step2_module_steps["Place_Part"].steps


def test_an_llm_timeout_fails_the_step_and_resume_retries_it(tmp_path: Path) -> None:
    timeouts = [LLMTimeoutError("model did not answer within 60 s")]

    def plan(prompt: str) -> Any:
        if timeouts:
            raise timeouts.pop()
        return TASKS

    llm = ScriptedLLM([("Current plan:", plan), ("Task to write:", steps_for)])
    runner: Runner[SasState] = Runner(flow, llm=llm)
    failed = start(runner, tmp_path)
    assert (failed.status, failed.node) == ("failed", "user_input_to_task_list")
    assert failed.error is not None and failed.error.type == "LLMTimeoutError"
    assert runner.resume("cell").node == "sas_awaiting_task_list_review"


@pytest.mark.parametrize("request_text", ["", "   \n\t "])
def test_empty_input_waits_at_review_with_a_clear_error(tmp_path: Path, request_text: str) -> None:
    llm = scripted()
    runner: Runner[SasState] = Runner(flow, llm=llm)
    result = start(runner, tmp_path, request_text)
    assert (result.status, result.node) == ("waiting", "sas_awaiting_task_list_review")
    assert result.state.is_error and result.state.failed_step == "user_input_to_task_list"
    assert result.state.error_message == (
        "The robot task is empty; describe what the robot should do."
    )
    assert llm.calls == []
    # The reviewer's feedback becomes the request, and the thread goes on.
    again = runner.resume("cell", {"message": REQUEST})
    assert (again.node, again.state.is_error) == ("sas_awaiting_task_list_review", False)
    assert again.state.current_user_request == REQUEST
    assert again.state.sas_step1_generated_tasks


def test_a_huge_request_is_refused_without_calling_the_model(tmp_path: Path) -> None:
    llm = scripted()
    result = start(Runner(flow, llm=llm), tmp_path, "move " * 10_000)
    assert result.node == "sas_awaiting_task_list_review"
    assert result.state.is_error and "characters long" in (result.state.error_message or "")
    assert llm.calls == []


def test_an_unusable_task_list_answer_returns_to_review_and_retry_asks_again(
    tmp_path: Path,
) -> None:
    broken = [True]  # the model answers nonsense until the test says otherwise
    good = scripted()
    llm = ScriptedLLM(
        [
            ("Current plan:", lambda prompt: "not JSON at all" if broken[0] else good.complete(
                [{"role": "user", "content": prompt}]).text),
            ("Task to write:", lambda prompt: good.complete(
                [{"role": "user", "content": prompt}]).text),
        ]
    )  # fmt: skip
    runner: Runner[SasState] = Runner(flow, llm=llm)
    failed = start(runner, tmp_path)
    assert (failed.status, failed.node) == ("waiting", "sas_awaiting_task_list_review")
    assert failed.state.is_error and "no usable task list" in (failed.state.error_message or "")
    with pytest.raises(InvalidResumeInputError, match="no task list to approve yet"):
        runner.resume("cell", {"action": "approve"})
    broken[0] = False
    retried = runner.resume("cell", {"action": "retry"})
    assert (retried.node, retried.state.is_error) == ("sas_awaiting_task_list_review", False)
    assert retried.state.sas_step1_generated_tasks
    with pytest.raises(InvalidResumeInputError, match="no step failed here"):
        runner.resume("cell", {"action": "retry"})


def test_a_bad_teaching_table_returns_to_step_review_and_retry_finishes(tmp_path: Path) -> None:
    table = tmp_path / "teaching.yaml"
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(table)}
    table.write_text("points: [this is: not, a teaching table\n")
    runner.start("cell", {"user_input": REQUEST, "config": config})
    runner.resume("cell", {"action": "approve"})
    failed = runner.resume("cell", {"action": "approve"})
    assert (failed.status, failed.node) == ("waiting", "sas_awaiting_module_steps_review")
    assert failed.state.is_error and failed.state.failed_step == "parameter_mapping"
    assert (failed.state.error_message or "").startswith("Parameter mapping failed")
    assert not failed.state.module_steps_accepted
    teaching_file(tmp_path)  # the reviewer fixes the table, then retries
    done = runner.resume("cell", {"action": "retry"})
    assert (done.status, done.node) == ("done", "final_xml_generated_success")
    assert not done.state.is_error and Path(done.state.final_flow_xml_path or "").is_file()


def test_substring_approval_is_feedback(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    start(runner, tmp_path)
    result = runner.resume("cell", {"message": "not ok"})
    assert result.node == "sas_awaiting_task_list_review"
    assert not result.state.task_list_accepted
    assert result.state.feedback[-1].text == "not ok"


def test_task_list_and_plan_are_in_the_scripted_order() -> None:
    assert [t["name"] for t in TASKS["tasks"]] == list(STEPS)


def test_markup_from_the_model_or_the_user_ends_up_as_text(tmp_path: Path) -> None:
    hostile = '</field><block type="loop"><!-- x --></block><field name="a">'
    main = [
        {"type": "select_robot", "fields": {"robotName": hostile}, "source": hostile},
        *STEPS["Main_Task"][1:],
    ]
    runner: Runner[SasState] = Runner(flow, llm=scripted(Main_Task={"steps": main}))
    start(runner, tmp_path, f"{REQUEST} {hostile}")
    runner.resume("cell", {"action": "approve"})
    done = runner.resume("cell", {"message": "<approve/>"})  # markup is feedback, not approval
    assert done.node == "sas_awaiting_module_steps_review"
    done = runner.resume("cell", {"action": "approve"})
    xml = Path(done.state.final_flow_xml_path or "").read_text()
    assert hostile not in xml and "&lt;/field&gt;&lt;block" in xml
    program = decompile(xml)
    head = program.stacks[0][0]
    assert head.field("robotName") == hostile, "the text survives as text"
    assert sum(1 for s in program.walk() if s.type == "loop") == 1


def test_task_files_of_an_earlier_run_do_not_linger(tmp_path: Path) -> None:
    stale = tmp_path / "out" / "tasks" / "07_Old_Task.xml"
    stale.parent.mkdir(parents=True)
    stale.write_text("<xml/>")
    keep = stale.parent / "notes.txt"
    keep.write_text("mine")
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    start(runner, tmp_path)
    runner.resume("cell", {"action": "approve"})
    done = runner.resume("cell", {"action": "approve"})
    written = sorted(p.name for p in stale.parent.glob("*.xml"))
    assert not stale.exists() and keep.read_text() == "mine"
    assert written == [Path(g.path).name for g in done.state.generated_node_xmls]


def test_the_configured_robot_names_the_select_robot_block(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path)),
              "robot": "fairino_FR"}  # fmt: skip
    runner.start("cell", {"user_input": REQUEST, "config": config})
    runner.resume("cell", {"action": "approve"})
    done = runner.resume("cell", {"action": "approve"})
    xml = Path(done.state.final_flow_xml_path).read_text(encoding="utf-8")
    assert '<field name="robotName">fairino_FR</field>' in xml
    assert "dobot_mg400" not in xml
