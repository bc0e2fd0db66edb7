"""Small flows the server tests serve: a counter that runs long, a chat in the roundtable
origin's shapes, a flow whose state holds a secret and personal data, one with an owner, one
whose run never ends (for the shutdown tests), and one whose subflow is retried."""

from __future__ import annotations

import threading
from typing import Annotated, Any

from pydantic import BaseModel, Field

from flowkit import (
    END,
    CachePolicy,
    Flow,
    RetryPolicy,
    Route,
    RouteTable,
    Subflow,
    append,
    node,
    when,
)

# -- a counter: `go` gate, then `steps` steps, a milestone (critical) every 100 ---------------


class Count(BaseModel):
    steps: int = 10
    count: int = 0
    milestone: int = 0
    go: bool = False


class Go(BaseModel):
    go: bool = True


def _tick(state: Count) -> dict[str, Any]:
    count = state.count + 1
    update: dict[str, Any] = {"count": count}
    if count % 100 == 0:
        update["milestone"] = count
    return update


counter = Flow(
    name="counter",
    state=Count,
    start="start",
    nodes={"tick": node(_tick, reads=["count"], writes=["count", "milestone"])},
    gates={"start": Go},
    routes={
        "start": "tick",
        "tick": RouteTable(
            "after_tick",
            [Route(when("counted", lambda s: s.count >= s.steps), END)],
            default="tick",
        ),
    },
    change_classes={"critical": ["milestone"], "progress": ["count"]},
)

# -- a chat: the person's text at gate `say`, characters answer with ctx.emit ---------------


class Chat(BaseModel):
    messages: Annotated[list[dict[str, str]], append] = []
    text: str = ""


class Say(BaseModel):
    text: str = Field(min_length=1, max_length=2000)


def _answer(state: Chat, ctx: Any) -> dict[str, Any]:
    ctx.emit({"type": "status", "character": "LUMINA", "status": "THINKING"})
    reply = f"you said: {state.text}"
    ctx.emit({"type": "message", "speaker": "LUMINA", "text": reply})
    ctx.emit({"type": "status", "character": "LUMINA", "status": "IDLE"})
    ctx.emit({"not": "a roundtable shape"})
    return {
        "messages": [{"speaker": "USER", "text": state.text}, {"speaker": "LUMINA", "text": reply}]
    }


chat = Flow(
    name="chat",
    state=Chat,
    start="say",
    nodes={"answer": node(_answer, reads=["text"], writes=["messages"])},
    gates={"say": Say},
    routes={"say": "answer", "answer": "say"},
)

# -- a record with an owner, a secret and personal data -------------------------------------


class Record(BaseModel):
    initiator: str = ""
    api_key: str = "sk-live-abcdefghijklmnop"
    note: str = "call me at 03-1234-5678 or mail sato@example.com"
    approved: bool = False


class Approve(BaseModel):
    approved: bool


owned = Flow(
    name="owned",
    state=Record,
    start="check",
    nodes={},
    gates={"check": Approve},
    routes={"check": END},
)

# -- a run that outlasts any shutdown: its node waits for an event nobody sets ---------------


class Stuck(BaseModel):
    done: bool = False


def _wait_for_good(state: Stuck) -> dict[str, Any]:
    threading.Event().wait()
    return {"done": True}


stuck = Flow(
    name="stuck",
    state=Stuck,
    start="wait",
    nodes={"wait": node(_wait_for_good, reads=[], writes=["done"])},
    routes={"wait": END},
)

# -- a subflow retried once: its child's node fails both its own attempts, then works ---------


class Desk(BaseModel):
    answer: str = ""


def desk() -> Flow:
    """``research`` (a ``Subflow``, two attempts) runs ``lookup``, whose ``search`` (two attempts
    of its own) fails three calls: the subflow's first attempt fails, its second works at the
    second call of ``search``. A new flow each time: the failures are counted per flow."""
    calls = {"search": 0}

    def search(state: Desk) -> dict[str, Any]:
        calls["search"] += 1
        if calls["search"] <= 3:
            raise ConnectionError("search is down")
        return {"answer": "found"}

    twice = RetryPolicy(max_attempts=2, initial_delay=0, jitter=False)
    lookup = Flow(
        name="lookup",
        state=Desk,
        start="search",
        nodes={"search": node(search, retry=twice)},
        routes={"search": END},
        error_field=None,
    )
    return Flow(
        name="desk",
        state=Desk,
        start="research",
        nodes={"research": Subflow(lookup, writes=["answer"], retry=twice)},
        routes={"research": END},
        error_field=None,
    )


# -- a node whose update is cached: a second thread with the same text reuses the first's -----


class Ticket(BaseModel):
    text: str = "wrong invoice"
    category: str = ""


tickets = Flow(
    name="tickets",
    state=Ticket,
    start="classify",
    nodes={
        "classify": node(
            lambda s: {"category": "billing"},
            reads=["text"],
            writes=["category"],
            cache=CachePolicy(),
        )
    },
    routes={"classify": END},
)
