"""A flow with every kind of definition problem at once; importing this module raises.

Problems: an unknown target (`publsh`), an unreachable node (`orphan`), a dead-end loop
(`spin` <-> `spin2`), a rule shadowed by an earlier unconditional rule, a node without a
route (`stuck`) and a gate without a route (`approve`).
"""

from __future__ import annotations

from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, always, field


class State(BaseModel):
    ok: bool = False
    loop: bool = False
    stuck: bool = False


class Approval(BaseModel):
    ok: bool = False


def noop(state: State) -> None:
    return None


flow = Flow(
    name="broken",
    state=State,
    start="intake",
    nodes={"intake": noop, "check": noop, "spin": noop, "spin2": noop, "orphan": noop,
           "stuck": noop},
    gates={"approve": Approval},
    routes={
        "intake": RouteTable(
            "route_after_intake",
            [Route(always(), "check"), Route(field("ok"), "publsh")],
        ),
        "check": RouteTable(
            "route_after_check",
            [
                Route(field("loop"), "spin"),
                Route(field("ok"), "approve"),
                Route(field("stuck"), "stuck"),
            ],
            default=END,
        ),
        "spin": "spin2",
        "spin2": "spin",
        "orphan": END,
    },
)  # fmt: skip
