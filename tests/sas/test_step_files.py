"""Step 3 writes one XML file per step (seed 002) beside the per-task files, and lists them
in ``generated_node_xmls`` with block id, type, source description, file and status."""

from __future__ import annotations

from pathlib import Path

from flowkit import Runner
from flowkit.nodes.sas.step_files import numbered_steps
from flowkit.robot import decompile, errors_only, validate_xml
from flowkit.robot.steps import Step
from flowkit.sas import SasState, flow

from .scripted_cell import STEPS, scripted, teaching_file

REQUEST = "Pick the part from the feeder and place it on the pallet, forever."


def _run(tmp_path: Path) -> SasState:
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path))}
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    runner.start("cell", {"user_input": REQUEST, "config": config})
    runner.resume("cell", {"action": "approve"})
    done = runner.resume("cell", {"action": "approve"})
    assert done.status == "done"
    return done.state


def test_every_step_has_a_file_and_its_metadata(tmp_path: Path) -> None:
    state = _run(tmp_path)
    assert {g.task for g in state.generated_node_xmls} == set(STEPS)
    flow_xml = Path(state.final_flow_xml_path or "").read_text()
    merged_ids = {s.id for s in decompile(flow_xml).walk()}
    for task in state.generated_node_xmls:
        assert Path(task.path).is_file(), "the per-task files stay"
        task_ids = {s.id for s in decompile(Path(task.path)).walk()}
        source = state.sas_step2_module_steps[task.task]
        assert [s.step for s in task.steps] == [n for n, _ in numbered_steps(source.steps)]
        for entry, (_, step) in zip(task.steps, numbered_steps(source.steps), strict=True):
            assert entry.status == "success" and entry.error_message is None
            assert entry.type == step.type
            assert entry.source_description == step.source
            assert entry.block_id in task_ids and entry.block_id in merged_ids
            path = Path(entry.path)
            assert path.parent.name == Path(task.path).stem
            assert path.name == f"block_{entry.step.replace('.', '_')}_{entry.type}.xml"
            (stack,) = decompile(path).stacks
            assert [(s.id, s.type) for s in stack] == [(entry.block_id, entry.type)]
            # Bodies live in the files of their own steps: each file is a fragment. They are
            # written before parameter mapping, so point names ("safe point") are still names.
            problems = errors_only(validate_xml(path, fragment=True))
            assert all(p.code == "bad_field_value" and "P1" in p.message for p in problems)
    nested = [s for g in state.generated_node_xmls for s in g.steps if "." in s.step]
    assert nested, "steps inside loop bodies get files too"


def test_a_rerun_leaves_no_step_files_of_the_earlier_run(tmp_path: Path) -> None:
    stale = tmp_path / "out" / "steps" / "09_Gone" / "block_1_moveL.xml"
    stale.parent.mkdir(parents=True)
    stale.write_text("<xml/>")
    state = _run(tmp_path)
    assert not stale.exists()
    on_disk = sorted(str(p) for p in (tmp_path / "out" / "steps").rglob("*.xml"))
    listed = sorted(s.path for g in state.generated_node_xmls for s in g.steps)
    assert [Path(p).resolve() for p in on_disk] == [Path(p).resolve() for p in listed]


def test_step_numbers_follow_the_text_form() -> None:
    move = Step(type="moveP", fields={"point_name_list": "P1"})
    loop = Step(type="loop", inputs={"DO": [move, move]})
    numbers = [n for n, _ in numbered_steps([Step(type="set_motor"), loop, move])]
    assert numbers == ["1", "2", "2.1", "2.2", "3"]
