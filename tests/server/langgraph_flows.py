"""Flows for the LangGraph client API tests: a slow one (a run that is still going when the
next arrives) and one whose node fails when told to, with custom values emitted."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate, node


class Slow(BaseModel):
    steps: int = 0
    ok: bool = False


class Ok(BaseModel):
    ok: bool


def _work(state: Slow) -> dict[str, Any]:
    time.sleep(1.0)  # long enough for the next requests to find it running
    return {"steps": state.steps + 1}


slow = Flow(
    name="slow",
    state=Slow,
    start="work",
    nodes={"work": node(_work, reads=["steps"], writes=["steps"])},
    gates={"confirm": Gate(Ok, payload=lambda s: {"steps": s.steps})},
    routes={"work": "confirm", "confirm": END},
)


class Job(BaseModel):
    fail: bool = False
    result: str = ""


def _run(state: Job, ctx: Any) -> dict[str, Any]:
    ctx.emit({"progress": 50})
    if state.fail:
        raise RuntimeError("the job was told to fail")
    ctx.emit({"progress": 100})
    return {"result": "done"}


jobs = Flow(
    name="jobs",
    state=Job,
    start="run",
    nodes={"run": node(_run, reads=["fail"], writes=["result"])},
    routes={"run": END},
)


class Note(BaseModel):
    ask: str = "sum it up"
    summary: str = ""


def _summarise(state: Note, ctx: Any) -> dict[str, Any]:
    chunks = ctx.llm.stream([{"role": "user", "content": state.ask}])
    return {"summary": "".join(chunk.text for chunk in chunks)}


writer = Flow(
    name="writer",
    state=Note,
    start="summarise",
    nodes={"summarise": node(_summarise, reads=["ask"], writes=["summary"])},
    routes={"summarise": END},
)


class Two(BaseModel):
    done: list[str] = []


def _long(state: Two) -> dict[str, Any]:
    time.sleep(1.0)  # long enough for runs.cancel to find it running
    return {"done": [*state.done, "long"]}


def _short(state: Two) -> dict[str, Any]:
    return {"done": [*state.done, "short"]}


#: Two nodes: a run cancelled during the first stops before the second.
two_steps = Flow(
    name="two_steps",
    state=Two,
    start="long",
    nodes={"long": _long, "short": _short},
    routes={"long": "short", "short": END},
)
