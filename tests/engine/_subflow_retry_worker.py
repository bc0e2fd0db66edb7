"""Child process for the subflow-retry crash test; also imported by it for the flow it runs.

python _subflow_retry_worker.py ROOT THREAD CALLS_LOG   start the thread; its subflow's first
                                                         attempt fails, the second prints
                                                         "inside" from its `slow` step and
                                                         sleeps until the parent kills it

Every LLM request is appended to CALLS_LOG ("<pid> <prompt>" per line) before it is answered,
so the parent can tell whether a request was made again after the kill.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, RetryPolicy, Runner, Subflow
from flowkit.stores import JsonFileStore
from flowkit.testing import ScriptedLLM


class Work(BaseModel):
    topic: str = "tides"
    answer: str = ""
    checked: bool = False


def ask(state: Work, ctx: Context) -> dict[str, Any]:
    return {
        "answer": ctx.llm.complete([{"role": "user", "content": f"explain {state.topic}"}]).text
    }


def flow(marker: Path, *, hang: bool) -> Flow:
    """The parent flow. ``check`` fails the first time (``marker`` remembers it across
    processes); with ``hang``, ``slow`` says "inside" and waits to be killed."""

    def check(state: Work) -> dict[str, Any]:
        if not marker.exists():
            marker.touch()
            raise ConnectionError("the checker is down")
        return {"checked": True}

    def slow(state: Work) -> dict[str, Any]:
        if hang:
            print("inside", flush=True)
            threading.Event().wait(60)
        return {}

    child = Flow(
        name="research",
        state=Work,
        start="ask",
        nodes={"ask": ask, "check": check, "slow": slow},
        routes={"ask": "check", "check": "slow", "slow": END},
        error_field=None,
    )
    retry = RetryPolicy(max_attempts=3, initial_delay=0, jitter=False)
    return Flow(
        name="desk",
        state=Work,
        start="research",
        nodes={"research": Subflow(child, writes=["answer", "checked"], retry=retry)},
        routes={"research": END},
        error_field=None,
    )


def scripted_llm(calls_log: Path) -> ScriptedLLM:
    def answer(prompt: str) -> str:
        with calls_log.open("a") as log:
            log.write(f"{os.getpid()} {prompt}\n")
        return f"about {prompt.removeprefix('explain ')}"

    return ScriptedLLM([("explain", answer)])


def main(root: str, thread_id: str, calls_log: str) -> None:
    calls = Path(calls_log)
    marker = calls.with_suffix(".failed-once")
    runner = Runner(flow(marker, hang=True), store=JsonFileStore(root), llm=scripted_llm(calls))
    runner.start(thread_id)


if __name__ == "__main__":
    main(*sys.argv[1:4])
