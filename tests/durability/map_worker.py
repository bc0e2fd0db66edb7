"""Child process for the map crash test; also imported by it for the flow it runs.

python map_worker.py ROOT THREAD CALLS_LOG [BUDGET]
    start-or-resume the 50-item map, print "ready" just before it runs (the parent kills it at
    will); with BUDGET, answer that many LLM calls and hang in the next ones, so however slowly
    the parent gets to its kill, the child cannot finish the map
python map_worker.py
    the same, its arguments read as one JSON list on stdin once the parent sends them (so it
    can start the process ahead, imports and all, while another runs)

Every LLM request a child makes is appended to CALLS_LOG ("<pid> <item>" per line) before it
is answered, so the parent can tell which items were asked again after a kill, and how far a
child has got.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, Map, Runner, append
from flowkit.errors import ThreadExistsError
from flowkit.stores import JsonFileStore
from flowkit.testing import ScriptedLLM

ITEMS = 50
CONCURRENCY = 2
#: Each call takes about this long, so a kill after t seconds finds few calls finished.
CALL_S = 0.03


class Batch(BaseModel):
    topics: list[str] = []
    answers: Annotated[list[str], append] = []
    done: bool = False


def topics(state: Batch) -> list[str]:
    return state.topics


def ask(state: Batch, topic: str, ctx: Context) -> dict[str, Any]:
    reply = ctx.llm.complete([{"role": "user", "content": f"describe {topic}"}])
    return {"answers": [f"{topic}: {reply.text}"]}


def finish(state: Batch) -> dict[str, Any]:
    return {"done": True}


FLOW = Flow(
    name="crash_map",
    state=Batch,
    start="ask_all",
    nodes={"ask_all": Map(ask, over=topics, concurrency=CONCURRENCY), "finish": finish},
    routes={"ask_all": "finish", "finish": END},
)

START = {"topics": [f"topic-{i:02d}" for i in range(ITEMS)]}


def scripted_llm(calls_log: Path, budget: int | None = None) -> ScriptedLLM:
    lock = threading.Lock()
    answered = 0

    def answer(prompt: str) -> str:
        nonlocal answered
        with calls_log.open("a") as log:  # one short line per append: never interleaved
            log.write(f"{os.getpid()} {prompt.removeprefix('describe ')}\n")
        with lock:
            answered += 1
            spent = budget is not None and answered > budget
        if spent:
            threading.Event().wait()  # hang until the parent kills this process
        time.sleep(CALL_S)
        return f"about {prompt.removeprefix('describe ')}"

    return ScriptedLLM([("describe", answer)])


def main(root: str, thread_id: str, calls_log: str, budget: str | None = None) -> None:
    store = JsonFileStore(root)
    llm = scripted_llm(Path(calls_log), None if budget is None else int(budget))
    runner = Runner(FLOW, store=store, llm=llm)
    print("ready", flush=True)
    try:
        runner.start(thread_id, START)
    except ThreadExistsError:
        runner.resume(thread_id)


if __name__ == "__main__":
    main(*(sys.argv[1:5] or json.loads(sys.stdin.readline())))
