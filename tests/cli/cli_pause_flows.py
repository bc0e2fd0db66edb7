"""Flows whose pauses carry payloads, for the CLI tests (TARGETs ``cli_pause_flows.py:NAME``):
a gate that shows a long draft holding terminal control sequences, a node that asks, and a Map
whose calls ask about the odd items."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from flowkit import END, Flow, Gate, Map, append, node

ESC = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the window title


class Draft(BaseModel):
    text: str = "Release notes " + "lorem ipsum " * 60 + ESC
    approved: bool = False


class Approval(BaseModel):
    approved: bool


drafts = Flow(
    name="drafts",
    state=Draft,
    start="review",
    nodes={},
    gates={"review": Gate(Approval, payload=lambda s: {"draft": s.text})},
    routes={"review": END},
)


class Person(BaseModel):
    answers: Annotated[list[str], append] = []


class Reply(BaseModel):
    text: str = Field(min_length=1)


@node(asks=Gate(Reply, apply=lambda state, reply: {"answers": [reply.text]}), writes=["answers"])
def interview(state: Person, ctx: Any) -> Any:
    ctx.ask({"question": "What is your name?"})


interviews = Flow(
    name="interviews",
    state=Person,
    start="interview",
    nodes={"interview": interview},
    routes={"interview": END},
)


class Batch(BaseModel):
    items: list[int] = [1, 2, 3, 4]
    results: Annotated[list[str], append] = []


class Verdict(BaseModel):
    ok: bool


@node(asks=Gate(Verdict, apply=lambda state, v: {"results": ["ok" if v.ok else "no"]}))
def check(state: Batch, item: int, ctx: Any) -> Any:
    if item % 2:
        ctx.ask({"item": item})
    return {"results": [f"auto{item}"]}


checks = Flow(
    name="checks",
    state=Batch,
    start="check",
    nodes={"check": Map(check, over=lambda s: s.items, writes=["results"])},
    routes={"check": END},
)
