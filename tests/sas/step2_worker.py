"""Child process for the step-2 crash test: runs the sas flow to step 2 and hangs on task 3.

python step2_worker.py ROOT TMP   start thread "cell" (max_parallel=1), approve the task
                                  list, then answer two tasks and block on the third after
                                  printing "blocked" (the parent SIGKILLs it there)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from flowkit import Runner
from flowkit.sas import flow
from flowkit.stores import JsonFileStore
from tests.sas.scripted_cell import scripted, steps_for, teaching_file

REQUEST = "Pick the part from the feeder and place it on the pallet, forever."


def main(root: str, tmp: str) -> None:
    answered: list[str] = []

    def third_blocks(prompt: str) -> Any:
        if len(answered) == 2:
            print("blocked", flush=True)
            time.sleep(3600)
        # A model's answer takes longer than a Map's group window (docs/parallel.md), so each
        # answered task is saved before the next call starts, as with a real LLM.
        time.sleep(0.2)
        answered.append(prompt)
        return steps_for(prompt)

    llm = scripted(**{name: third_blocks for name in STEP_NAMES})
    runner = Runner(flow, store=JsonFileStore(root), llm=llm)
    config = {
        "output_dir": str(Path(tmp) / "out"),
        "teaching_file": str(teaching_file(Path(tmp))),
        "max_parallel": 1,
    }
    runner.start("cell", {"user_input": REQUEST, "config": config})
    runner.resume("cell", {"message": "OK"})


STEP_NAMES = ["Main_Task", "Pick_Part", "Place_Part", "Close_Gripper", "Open_Gripper"]

if __name__ == "__main__":
    main(*sys.argv[1:3])
