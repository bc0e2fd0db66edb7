"""Child process for the group-commit crash test; also imported by it for the flow it runs.

python map_group_worker.py ROOT CALLS_LOG SHAPE [BUDGET]
    start-or-resume a map of ITEMS short calls on a fsync'd JsonFileStore, printing "ready"
    just before it runs (the parent kills it at will). SHAPE is ``sync_1`` (calls one by one
    in this thread), ``pool`` (a thread pool) or ``async`` (tasks, under ``astart``). With
    BUDGET, the calls after the first BUDGET hang until the parent kills the process, so
    however late the kill comes, the child cannot finish the map.

Groups are made exactly ``GROUP`` calls long here (the time window is an hour), so what a
crash may lose is known: at most one group of finished calls, plus the calls running. Every
call appends "<pid> <item>" to CALLS_LOG as it starts, one short write, so the parent can tell
which items ran again after a kill.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import threading
import time
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Flow, Map, Runner, append
from flowkit.errors import ThreadExistsError
from flowkit.execution.batch import _checkpoints
from flowkit.stores import JsonFileStore

ITEMS = 400
GROUP = 16
CONCURRENCY = {"sync_1": 1, "pool": 4, "async": 4}
#: Each call takes about this long: a kill lands in the middle of the map.
CALL_S = 0.002


class Work(BaseModel):
    values: list[int] = []
    out: Annotated[list[int], append] = []


_started = itertools.count(1)


def _log(item: int) -> bool:
    """Log the call; whether it is past the budget (and must hang)."""
    fd = os.open(os.environ["CALLS_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{os.getpid()} {item}\n".encode())
    finally:
        os.close(fd)
    budget = os.environ.get("CALLS_BUDGET")
    return budget is not None and next(_started) > int(budget)


def call(state: Work, item: int) -> dict[str, Any]:
    if _log(item):
        threading.Event().wait()  # hang until the parent kills this process
    time.sleep(CALL_S)
    return {"out": [item]}


async def call_async(state: Work, item: int) -> dict[str, Any]:
    if _log(item):
        await asyncio.Event().wait()
    await asyncio.sleep(CALL_S)
    return {"out": [item]}


def flow(shape: str) -> Flow:
    fn = call_async if shape == "async" else call
    return Flow(
        name="group_map",
        state=Work,
        start="each",
        nodes={"each": Map(fn, over=lambda s: s.values, concurrency=CONCURRENCY[shape])},
        routes={"each": END},
    )


START = {"values": list(range(ITEMS))}


def main(root: str, calls_log: str, shape: str, budget: str | None = None) -> None:
    os.environ["CALLS_LOG"] = calls_log
    if budget is not None:
        os.environ["CALLS_BUDGET"] = budget
    _checkpoints.GROUP_RECORDS = GROUP
    _checkpoints.GROUP_WINDOW_S = 3600.0
    runner: Runner[Any] = Runner(flow(shape), store=JsonFileStore(root))
    print("ready", flush=True)
    if shape == "async":
        try:
            asyncio.run(runner.astart("t", START))
        except ThreadExistsError:
            asyncio.run(runner.aresume("t"))
        return
    try:
        runner.start("t", START)
    except ThreadExistsError:
        runner.resume("t")


if __name__ == "__main__":
    main(*sys.argv[1:5])
