"""Seed 000's state names are in every dump of the state, and ``initialize`` starts a run with
no error left over (seed 000 §1.2.A)."""

from __future__ import annotations

import json
from pathlib import Path

from flowkit import Runner
from flowkit.sas import SasState, flow
from flowkit.sas.state import SEED000_STATE_NAMES
from flowkit.stores import JsonFileStore

from .scripted_cell import scripted, teaching_file

REQUEST = "Pick the part from the feeder and place it on the pallet, forever."


def _config(tmp_path: Path) -> dict[str, str]:
    return {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path))}


def test_a_ui_keyed_on_seed_000_names_reads_them_from_state(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, store=JsonFileStore(tmp_path / "store"), llm=scripted())
    first = runner.start("cell", {"user_input": REQUEST, "config": _config(tmp_path)})
    assert first.state.dialog_state == "sas_awaiting_task_list_review"
    assert first.state.seed000_state == "sas_step1_tasks_generated"
    assert first.state.model_dump(mode="json")["seed000_state"] == "sas_step1_tasks_generated"
    second = runner.resume("cell", {"action": "approve"})
    assert second.state.seed000_state == "sas_step2_module_steps_generated_for_review"
    # What a front end reads back from the store carries the name too, and loads again.
    stored = runner.get_state("cell")
    dumped = json.loads(stored.state.model_dump_json())
    assert dumped["seed000_state"] == "sas_step2_module_steps_generated_for_review"
    assert SasState.model_validate(dumped).dialog_state == "sas_awaiting_module_steps_review"


def test_states_seed_000_does_not_name_keep_their_own_name() -> None:
    assert SasState(dialog_state="parameter_mapping").seed000_state == "parameter_mapping"
    assert set(SEED000_STATE_NAMES.values()) >= {
        "sas_step1_tasks_generation",
        "sas_step1_tasks_generated",
        "sas_step2_module_steps_generation",
        "sas_step2_module_steps_generated_for_review",
        "sas_all_steps_accepted_proceed_to_xml",
    }


def test_initialize_resets_an_error_left_in_state(tmp_path: Path) -> None:
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    first = runner.start(
        "cell",
        {
            "user_input": REQUEST,
            "config": _config(tmp_path),
            "is_error": True,
            "error_message": "an old failure",
            "failed_step": "user_input_to_task_list",
        },
    )
    assert (first.status, first.node) == ("waiting", "sas_awaiting_task_list_review")
    assert first.state.is_error is False
    assert first.state.error_message is None and first.state.failed_step is None
    assert first.state.sas_step1_generated_tasks
