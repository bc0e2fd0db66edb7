"""A valid flow with a node, a gate, a route table, a final state and a message reducer."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, append, field


class Ticket(BaseModel):
    text: str = ""
    priority: str = "low"
    approved: bool = False
    rejected: bool = False
    messages: Annotated[list[str], append] = []


class Decision(BaseModel):
    approved: bool = False
    rejected: bool = False


def triage(state: Ticket) -> dict[str, Any]:
    return {"priority": "high" if "urgent" in state.text else "low", "messages": ["triaged"]}


def resolve(state: Ticket) -> dict[str, Any]:
    return {"messages": ["resolved"]}


after_triage = RouteTable(
    "route_after_triage",
    [Route(field("priority").eq("high"), "approve")],
    default="resolve",
)
after_approve = RouteTable(
    "route_after_approve",
    [Route(field("rejected"), "rejected"), Route(field("approved"), "resolve")],
    default="approve",
)

flow = Flow(
    name="ticket",
    state=Ticket,
    start="triage",
    nodes={"triage": triage, "resolve": resolve},
    gates={"approve": Decision},
    finals={"rejected": "failed"},
    routes={"triage": after_triage, "approve": after_approve, "resolve": END},
)


def make_flow() -> Flow:
    """A zero-argument factory, as TARGET `good.py:make_flow`."""
    return flow


not_a_flow = 42


def needs_arguments(name: str) -> Flow:
    raise AssertionError("never called: the CLI only calls zero-argument factories")


def make_broken() -> Flow:
    """A factory whose flow has a problem (start names nothing)."""
    return Flow(name="broken_factory", state=Ticket, start="nowhere", nodes={}, routes={})


def make_crash() -> Flow:
    raise RuntimeError("database is down")
