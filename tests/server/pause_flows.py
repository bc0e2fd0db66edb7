"""Flows whose pauses carry payloads, for the server tests: a gate that shows a draft, a node
that asks twice, a Map whose calls ask, a Parallel of two gate branches, and a subflow whose
gate shows its draft."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from flowkit import END, Flow, Gate, Map, Parallel, Route, RouteTable, Subflow, append, node, when

#: Text a payload may hold that must reach a page as text, never as markup.
EVIL = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"

# -- a gate whose payload is the draft to approve -------------------------------------------


class Draft(BaseModel):
    text: str = f"Release notes {EVIL}"
    contact: str = "mail sato@example.com"
    api_key: str = "sk-live-abcdefghijklmnop"
    approved: bool = False


class Approval(BaseModel):
    approved: bool


def _shown(state: Draft) -> dict[str, Any]:
    return {
        "draft": state.text,
        "contact": state.contact,
        "api_key": state.api_key,
        "options": ["approve", "reject"],
    }


def _write(state: Draft) -> dict[str, Any]:
    return {"text": state.text + " (written)"}


drafts = Flow(
    name="drafts",
    state=Draft,
    start="write",
    nodes={"write": node(_write, reads=["text"], writes=["text"])},
    gates={"review": Gate(Approval, payload=_shown, description="Approve the draft")},
    routes={"write": "review", "review": END},
)

# -- a node that asks twice: a name, then a city --------------------------------------------


class Person(BaseModel):
    answers: Annotated[list[str], append] = []


class Reply(BaseModel):
    text: str = Field(min_length=1, max_length=200)


_QUESTIONS = ("What is your name?", "Which city?")


@node(asks=Gate(Reply, apply=lambda state, reply: {"answers": [reply.text]}), writes=["answers"])
def interview(state: Person, ctx: Any) -> Any:
    ctx.ask({"question": _QUESTIONS[len(state.answers)], "asked": len(state.answers) + 1})


interviews = Flow(
    name="interviews",
    state=Person,
    start="interview",
    nodes={"interview": interview},
    routes={
        "interview": RouteTable(
            "after_interview",
            [Route(when("both_answered", lambda s: len(s.answers) >= 2), END)],
            default="interview",
        )
    },
)

# -- a Map whose calls ask about the odd items ------------------------------------------------


class Batch(BaseModel):
    items: list[int] = [1, 2, 3, 4, 5, 6]
    results: Annotated[list[str], append] = []


class Verdict(BaseModel):
    ok: bool
    note: str = ""


@node(asks=Gate(Verdict, apply=lambda state, v: {"results": [f"{'ok' if v.ok else 'no'}{v.note}"]}))
def check(state: Batch, item: int, ctx: Any) -> Any:
    if item % 2:
        ctx.ask({"item": item, "question": f"Is item {item} fine?"})
    return {"results": [f"auto{item}"]}


checks = Flow(
    name="checks",
    state=Batch,
    start="check",
    nodes={"check": Map(check, over=lambda s: s.items, writes=["results"])},
    routes={"check": END},
)

# -- a Parallel of two gate branches, one with a payload --------------------------------------


class Pair(BaseModel):
    legal: bool = False
    tech: bool = False


class Legal(BaseModel):
    legal: bool


class Tech(BaseModel):
    tech: bool


pairs = Flow(
    name="pairs",
    state=Pair,
    start="both",
    nodes={
        "both": Parallel(
            {"legal": Gate(Legal, payload=lambda s: {"clause": "7.2"}), "tech": Gate(Tech)}
        )
    },
    routes={"both": END},
)

# -- a subflow whose gate shows the child's draft ---------------------------------------------


class Child(BaseModel):
    draft: str = ""
    approved: bool = False


def _polish(state: Child) -> dict[str, Any]:
    return {"draft": state.draft + " (polished)"}


child = Flow(
    name="child",
    state=Child,
    start="polish",
    nodes={"polish": node(_polish, reads=["draft"], writes=["draft"])},
    gates={"approve": Gate(Approval, payload=lambda s: {"draft": s.draft})},
    routes={"polish": "approve", "approve": END},
)


class Parent(BaseModel):
    draft: str = "parent draft"
    approved: bool = False


nested = Flow(
    name="nested",
    state=Parent,
    start="review",
    nodes={
        "review": Subflow(
            child,
            input=lambda s: {"draft": s.draft},
            output=lambda parent, c: {"approved": c.approved},
            writes=["approved"],
        )
    },
    routes={"review": END},
)

PAUSE_FLOWS = [drafts, interviews, checks, pairs, nested]
