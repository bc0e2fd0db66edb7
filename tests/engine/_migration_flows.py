"""A ticket flow before and after a deploy that changes it, for the migration tests and for
``flowkit migrate`` (TARGET ``tests/engine/_migration_flows.py:ticket_v2``).

Version 1: intake -> polish -> review (gate) -> publish -> END, with ``urgent: bool``.
Version 2: the gate ``review`` is renamed ``approval``, the node ``polish`` is removed (its
threads go back to ``intake``), ``urgent`` is gone and a required ``priority`` is computed
from it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Flow, Migration, append


class Approve(BaseModel):
    approved: bool


class TicketV1(BaseModel):
    text: str = ""
    urgent: bool = False
    approved: bool = False
    log: Annotated[list[str], append] = []
    dialog_state: str = ""


class TicketV2(BaseModel):
    text: str = ""
    priority: str  # new and required: old threads have no value for it
    approved: bool = False
    log: Annotated[list[str], append] = []
    dialog_state: str = ""


#: Set to make ``polish`` fail (a thread then waits, failed, at a node v2 removes).
BROKEN = {"polish": False}


def intake(state: Any) -> dict[str, Any]:
    return {"text": state.text or "printer jam", "log": ["intake"]}


def polish(state: Any) -> dict[str, Any]:
    if BROKEN["polish"]:
        raise RuntimeError("the polisher is down")
    return {"text": state.text.capitalize(), "log": ["polish"]}


def publish(state: Any) -> dict[str, Any]:
    return {"log": [f"published {state.text}"]}


ticket_v1 = Flow(
    name="ticket",
    state=TicketV1,
    start="intake",
    nodes={"intake": intake, "polish": polish, "publish": publish},
    gates={"review": Approve},
    routes={"intake": "polish", "polish": "review", "review": "publish", "publish": END},
)


def _v2(version: int, migrations: list[Migration]) -> Flow:
    return Flow(
        name="ticket",
        state=TicketV2,
        start="intake",
        nodes={"intake": intake, "publish": publish},
        gates={"approval": Approve},
        routes={"intake": "approval", "approval": "publish", "publish": END},
        version=version,
        migrations=migrations,
    )


def priority_of(old: dict[str, Any]) -> str:
    return "high" if old.get("urgent") else "normal"


MIGRATION = Migration(
    to=2,
    positions={"review": "approval", "polish": "intake"},
    fields={"priority": priority_of},
    drop=["urgent"],
    description="approval gate, no polish step, priority",
)

#: The changed flow deployed without migrations (version bumped or not).
ticket_v2_bare = _v2(1, [])
ticket_v2_unmigrated = _v2(2, [])
#: The changed flow with its migration.
ticket_v2 = _v2(2, [MIGRATION])


class Note(BaseModel):
    text: str = ""


def write(state: Note) -> dict[str, Any]:
    return {"text": "a note"}


other_flow = Flow(
    name="notes", state=Note, start="write", nodes={"write": write}, routes={"write": END}
)
