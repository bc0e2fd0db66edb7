"""Change detection: live events and history give the same seed-shaped answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner, StateChanged
from flowkit.runtime import changes_in, changes_of, detect_changes
from flowkit.sas import flow as sas_flow
from flowkit.testing import capture_events


class Ticket(BaseModel):
    dialog_state: str = ""
    question: str | None = None
    progress: str = ""
    approved: bool = False
    internal: int = 0


class Answer(BaseModel):
    approved: bool


def _work(state: Ticket) -> dict[str, Any]:
    return {"progress": "half", "internal": 1}


FLOW = Flow(
    name="tickets",
    state=Ticket,
    start="work",
    nodes={"work": _work},
    gates={"review": Gate(Answer)},
    routes={"work": "review", "review": END},
    change_classes={
        "critical": ["dialog_state", "question"],
        "progress": ["progress"],
        "approval": ["approved"],
    },
)


def test_the_seed_shape_for_the_sas_fields() -> None:
    changes = detect_changes(sas_flow, ["dialog_state", "messages", "task_list_accepted"])
    assert changes.to_dict() == {
        "critical": ["dialog_state"],
        "progress": [],
        "approval": ["task_list_accepted"],
        "needs_update": True,
    }


def test_only_unclassified_keys_need_no_update() -> None:
    changes = detect_changes({"critical": ["a"]}, ["b", "c"])
    assert (changes.critical, changes.progress, changes.needs_update) == ((), (), False)
    assert changes.of("unknown") == ()


def test_live_events_and_history_agree() -> None:
    runner: Runner[Ticket] = Runner(FLOW)
    with capture_events(runner) as events:
        runner.start("t")
        runner.resume("t", {"approved": True})
    live = [changes_of(e) for e in events if isinstance(e, StateChanged)]
    past = [changes_in(FLOW, c) for c in runner.history("t")[1:]]
    assert [c.to_dict() for c in live] == [c.to_dict() for c in past]
    assert live[0].critical == ("dialog_state",) and live[0].progress == ("progress",)
    assert live[1].approval == ("approved",)
