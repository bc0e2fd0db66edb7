"""``flowkit demo sas``: the whole robot-flow workflow, offline, from recorded LLM answers.

The example is the bearing / housing / pallet assembly cell of SAS_FACTS §10
(:mod:`flowkit.sas.demo_cell` holds its request, feedback and files). The LLM's
answers were recorded once (``cassette.json``, made from ``answers.json`` by
``python -m flowkit.sas.demo --record``) and are replayed, so the demo needs no network and
no API key. The cycle is one round of feedback on the task list (:data:`FEEDBACK`), then
both review gates approved. The same cassette drives the shell walk-through in
docs/sas-cli.md: ``--llm replay:demo`` names it in every ``flowkit sas`` command.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any, TextIO

from ...terminal.demo_llm import USE_A_MODEL, DemoAnswers
from ...terminal.inputs import DEMO_LLM
from .._cli_output import print_result
from ..demo_cell import FEEDBACK, REQUEST, demo_file, teaching_for

__all__ = [
    "ANSWERS",
    "FEEDBACK",
    "RECORD_WITH",
    "REQUEST",
    "demo_file",
    "record_cassette",
    "run_sas_demo",
    "teaching_for",
]

THREAD = "demo-bearing-cell"
#: The command that records the shipped cassette again (quoted by replay errors).
RECORD_WITH = "python -m flowkit.sas.demo --record"


#: The shipped cassette (``--llm replay:demo``); it answers only :data:`REQUEST` and
#: :data:`FEEDBACK`, so any other request is told what the demo asks and how to ask a model.
ANSWERS = DemoAnswers(
    cassette=demo_file("cassette.json"),
    miss="The demo's recorded answers (--llm replay:demo) answer only the demo's own request "
    "and the steps of its own review (its feedback on the first task list, from "
    "feedback.txt, then approvals), and this call is not one of them. The demo's request is "
    f'"{REQUEST[:96]}…" (run `flowkit demo sas`, or `flowkit sas demo-files DIR` for its full '
    f"text, its feedback and the start command); for anything else, use a model: {USE_A_MODEL}.",
)


def _narrate(out: TextIO) -> Any:
    from ...records._events import Event, NodeFinished

    def on_event(event: Event) -> None:
        if isinstance(event, NodeFinished):
            out.write(f"    [{event.node}] {event.latency_s * 1000:.1f} ms\n")

    return on_event


def run_sas_demo(store_dir: str | None, output_dir: str | None, out: TextIO) -> int:
    """Run the demo; the thread stays in the store for ``flowkit sas status``."""
    from ...robot import decompile, validate_xml
    from ...runner._runner import Runner
    from ...stores.jsonfile import JsonFileStore
    from ..workflow import flow

    # `--store D` is the store itself (the program goes to D/output unless told otherwise);
    # without it, one new temporary folder holds store/ and output/.
    root = Path(store_dir) if store_dir else Path(tempfile.mkdtemp(prefix="flowkit-sas-demo-"))
    store_root = root if store_dir else root / "store"
    outputs = Path(output_dir) if output_dir else root / "output"
    llm = ANSWERS.llm()
    with JsonFileStore(store_root) as store:
        runner: Runner[Any] = Runner(flow, store=store, llm=llm)
        runner.subscribe(_narrate(out))
        thread = THREAD
        taken = set(store.threads())
        suffix = 1
        while thread in taken:
            suffix += 1
            thread = f"{THREAD}-{suffix}"
        out.write("flowkit demo sas: robot task -> reviewed plan -> Blockly robot program\n")
        out.write(f"store: {store_root}   thread: {thread}   LLM: recorded answers\n\n")
        out.write(f"> start: {REQUEST}\n")
        config = {
            "output_dir": str(outputs),
            "teaching_file": str(demo_file("teaching.yaml")),
            # Kept with the thread, so `flowkit sas ...` on it later replays the same answers.
            "llm": DEMO_LLM,
        }
        # The printed hints must run as printed, and the demo's store is never the default.
        again = f" --store {shlex.quote(str(store_root))}"
        result = runner.start(thread, {"user_input": REQUEST, "config": config})
        print_result(result, out, again=again, store=str(store_root))
        for word in (FEEDBACK, "approve", "はい"):
            if result.status != "waiting":
                break
            out.write(f"\n> reviewer: {word}\n")
            result = runner.resume(thread, {"message": word})
            print_result(result, out, again=again, store=str(store_root))
    if result.status != "done" or not result.state.final_flow_xml_path:
        out.write("\nThe demo did not finish; see the error above.\n")
        return 1
    xml = Path(result.state.final_flow_xml_path).read_text(encoding="utf-8")
    problems = validate_xml(xml)
    program = decompile(xml)
    blocks = sum(1 for _ in program.walk())
    errors = [p for p in problems if p.severity == "error"]
    out.write(
        f"\nValidated {result.state.final_flow_xml_path}: {len(program.stacks)} stacks, "
        f"{blocks} blocks, {len(errors)} errors, {len(problems) - len(errors)} warnings\n"
    )
    if result.state.sas_step3_mapping_report:
        out.write(f"Parameter mapping report: {outputs / 'parameter_mapping.md'}\n")
    return 0 if not errors else 1


def record_cassette(path: Path | None = None) -> Path:
    """Re-record the cassette from ``answers.json`` (run after changing the prompts)."""
    from ...llm import save_cassette
    from ...llm.scripted import ScriptedLLM
    from ...runner._runner import Runner
    from ..workflow import flow

    answers = json.loads(demo_file("answers.json").read_text(encoding="utf-8"))

    def steps_for(prompt: str) -> Any:
        for name, steps in answers["steps"].items():
            if f'Task to write:\n{{"name": "{name}"' in prompt:
                return {"steps": steps}
        raise AssertionError("a module-steps prompt without a known task")

    # The first plan forgets the pallet; the feedback (quoted in the next prompt) fixes it.
    def plan_for(prompt: str) -> Any:
        return answers["tasks"] if FEEDBACK in prompt else answers["draft_tasks"]

    llm = ScriptedLLM([("Current plan:", plan_for), ("Task to write:", steps_for)])
    runner: Runner[Any] = Runner(flow, llm=llm)
    with tempfile.TemporaryDirectory() as tmp:
        config = {"output_dir": tmp, "teaching_file": str(demo_file("teaching.yaml"))}
        runner.start("record", {"user_input": REQUEST, "config": config})
        runner.resume("record", {"action": "feedback", "message": FEEDBACK})
        runner.resume("record", {"action": "approve"})
        done = runner.resume("record", {"action": "approve"})
        if done.status != "done":
            raise AssertionError(f"recording ended {done.status} at {done.node}")
    target = path or demo_file("cassette.json")
    save_cassette(target, runner.llm_calls("record"), record_with=RECORD_WITH)
    return target
