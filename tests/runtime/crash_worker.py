"""Child process for the crash test; also the flow it runs, loadable as a CLI TARGET.

python crash_worker.py ROOT THREAD [--no-markers]
    start THREAD in a JSON-file store at ROOT. Node ``slow`` prints "inside" and, in this
    child only (``FLOWKIT_CRASH_SLEEP`` set), sleeps until the parent kills it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Annotated, Any

import structlog
from pydantic import BaseModel

from flowkit import END, Flow, Runner, append
from flowkit.stores import JsonFileStore


class Work(BaseModel):
    log: Annotated[list[str], append] = []
    prepared: bool = False
    result: str | None = None


def prepare(state: Work) -> dict[str, Any]:
    return {"prepared": True, "log": ["prepared"]}


def slow(state: Work) -> dict[str, Any]:
    if os.environ.get("FLOWKIT_CRASH_SLEEP"):
        print("inside", flush=True)
        time.sleep(120)  # the parent kills us long before this ends
    return {"result": "computed", "log": ["slow done"]}


def finish(state: Work) -> dict[str, Any]:
    return {"log": ["finished"]}


flow = Flow(
    name="crashy",
    state=Work,
    start="prepare",
    nodes={"prepare": prepare, "slow": slow, "finish": finish},
    routes={"prepare": "slow", "slow": "finish", "finish": END},
)


def main(argv: list[str]) -> int:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    root, thread_id, *rest = argv
    with JsonFileStore(root) as store:
        runner: Runner[Work] = Runner(flow, store=store, track_attempts="--no-markers" not in rest)
        runner.start(thread_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
