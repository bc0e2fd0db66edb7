"""Step 2 runs on the engine's map: a process killed after 2 of 5 tasks resumes by asking the
model for the other 3 only, and ends with the same steps as an uninterrupted run."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.sas import SasState, flow
from flowkit.stores import ItemRecord, JsonFileStore

from .scripted_cell import STEPS, scripted

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("step2_worker.py")


def test_a_kill_after_two_of_five_tasks_resumes_with_three_llm_calls(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with subprocess.Popen(
        [sys.executable, str(WORKER), str(root), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == "blocked\n", child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL

    with JsonFileStore(root) as store:
        items = [r for r in store.records("cell") if isinstance(r, ItemRecord)]
        assert len(items) == 2 and {r.of for r in items} == {5}
        llm = scripted()
        runner: Runner[SasState] = Runner(flow, store=store, llm=llm)
        stopped = runner.get_state("cell")
        assert (stopped.status, stopped.node) == ("pending", "task_list_to_module_steps")
        result = runner.resume("cell")

    assert len(llm.calls) == 3
    asked = {call.prompt.split('Task to write:\n{"name": "')[1].split('"')[0] for call in llm.calls}
    assert asked.isdisjoint({r.label for r in items}) and len(asked) == 3
    assert (result.status, result.node) == ("waiting", "sas_awaiting_module_steps_review")
    assert set(result.state.sas_step2_module_steps) == set(STEPS)
    assert list(result.state.sas_step2_module_steps) == list(STEPS)  # the plan's order
    assert result.state.module_step_failures == {}
