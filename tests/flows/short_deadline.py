"""A gate whose deadline passes a moment after a thread gets there: what `flowkit worker` and
`flowkit serve` fire on the wall clock (``--timer-poll``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate


class Ticket(BaseModel):
    answered: bool = False
    chased: int = 0


def chase(state: Ticket) -> dict[str, Any]:
    return {"chased": state.chased + 1}


flow = Flow(
    name="short_deadline",
    state=Ticket,
    start="wait",
    nodes={"chase": chase},
    gates={"wait": Gate(Ticket, deadline=0.2, on_timeout="chase")},
    routes={"wait": END, "chase": END},
)
