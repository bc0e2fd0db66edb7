"""The flowkit flows the benchmark runs (the peers get the same shapes in ``_peers.py``).

- ``chain``: 10 no-op nodes in a row, then END: the engine's own cost per node.
- ``loop``: one node that appends a ~100-byte message per step until ``stop_at``, then
  pauses at gate ``more`` (whose input raises ``stop_at``, or finishes the thread): durable
  steady state, bytes per step as the history grows, and the 1,000-step thread a new
  process loads.
- ``review``: ``draft`` -> gate ``review`` -> ``publish`` -> END: pause and resume.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import structlog
from pydantic import BaseModel

import flowkit
from flowkit import END, Flow, Gate, Route, RouteTable, field

CHAIN_LENGTH = 10


def message(i: int, size: int = 100) -> str:
    """A chat-like message of exactly ``size`` ASCII characters."""
    head = f"message {i:06d}: "
    return (head + "lorem ipsum dolor sit amet " * (size // 20 + 1))[:size]


def quiet_logging() -> None:
    """Configure structlog the way a production app does (INFO and up, cached loggers).

    flowkit never configures structlog; unconfigured structlog prints every debug event to
    stdout, which is neither what an app runs with nor what should be timed.
    """
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        cache_logger_on_first_use=True,
    )


class Chat(BaseModel):
    count: int = 0
    stop_at: int = 0
    done: bool = False
    messages: Annotated[list[str], flowkit.append] = []


class More(BaseModel):
    stop_at: int = 0
    finish: bool = False


class Doc(BaseModel):
    draft: str = ""
    approved: bool = False
    published: bool = False


class ReviewInput(BaseModel):
    approved: bool


def noop(state: Chat) -> None:
    return None


def step(state: Chat) -> dict[str, Any]:
    n = state.count + 1
    return {"messages": [message(n)], "count": n, "done": n >= state.stop_at}


def _more(state: Chat, more: More) -> dict[str, Any]:
    return {"stop_at": more.stop_at, "done": more.finish}


def draft(state: Doc) -> dict[str, Any]:
    return {"draft": "A short draft to review."}


def publish(state: Doc) -> dict[str, Any]:
    return {"published": state.approved}


def chain_flow() -> Flow:
    names = [f"n{i}" for i in range(CHAIN_LENGTH)]
    return Flow(
        name="bench_chain",
        state=Chat,
        start=names[0],
        nodes=dict.fromkeys(names, noop),
        routes={
            name: (names[i + 1] if i + 1 < len(names) else END) for i, name in enumerate(names)
        },
    )


def loop_flow() -> Flow:
    return Flow(
        name="bench_loop",
        state=Chat,
        start="step",
        nodes={"step": step},
        gates={"more": Gate(More, apply=_more, writes=["stop_at", "done"])},
        routes={
            "step": RouteTable("after_step", [Route(field("done"), "more")], default="step"),
            "more": RouteTable("after_more", [Route(field("done"), END)], default="step"),
        },
    )


def review_flow() -> Flow:
    return Flow(
        name="bench_review",
        state=Doc,
        start="draft",
        nodes={"draft": draft, "publish": publish},
        gates={"review": ReviewInput},
        routes={"draft": "review", "review": "publish", "publish": END},
    )
