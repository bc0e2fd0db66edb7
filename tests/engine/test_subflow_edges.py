"""Edge cases of ``Subflow`` found by trying it as a new user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Parallel, Runner, Subflow
from flowkit.cli import main
from flowkit.errors import NotWaitingError
from flowkit.stores import JsonFileStore, MemoryStore


class Child(BaseModel):
    text: str = ""
    ok: bool = False


class Approve(BaseModel):
    ok: bool


class Parent(BaseModel):
    text: str = "hi"
    ok: bool = False


child = Flow(
    name="child",
    state=Child,
    start="check",
    nodes={"check": lambda s: {"text": s.text + "!"}},
    gates={"approve": Approve},
    routes={"check": "approve", "approve": END},
)
parent = Flow(
    name="parent",
    state=Parent,
    start="sub",
    nodes={"sub": Subflow(child, writes=["ok", "text"])},
    routes={"sub": END},
)


@pytest.mark.parametrize("store", [None, MemoryStore()], ids=["no store", "memory"])
def test_a_stream_of_events_shows_the_child_gate_waiting(store: Any) -> None:
    runner = Runner(parent, store=store)
    events = list(runner.stream("t", {}, mode="events"))
    waiting = [e for e in events if e.kind == "waiting"]
    assert [e.gate for e in waiting] == ["sub/approve"]
    assert waiting[0].run_id == events[0].run_id


def test_cli_show_names_the_gate_inside_the_child(tmp_path: Path, capsys: Any) -> None:
    with JsonFileStore(tmp_path) as store:
        runner = Runner(parent, store=store)
        runner.start("t")
        runner.update_state("t", {"text": "edited"})  # the child still waits
    assert main(["show", "t", "--store", str(tmp_path)]) == 0
    assert "status   waiting at gate sub/approve\n" in capsys.readouterr().out


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


class Reviews(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None


def test_resume_without_gate_at_child_gate_branches_names_them_by_path() -> None:
    inner = Flow(
        name="inner",
        state=Reviews,
        start="review",
        nodes={"review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)})},
        routes={"review": END},
    )
    outer = Flow(
        name="outer",
        state=Reviews,
        start="rv",
        nodes={"rv": Subflow(inner, writes=["legal_ok", "tech_ok"])},
        routes={"rv": END},
    )
    runner = Runner(outer)
    runner.start("t")
    with pytest.raises(NotWaitingError, match=r"\(`rv/legal`, `rv/tech`\).*gate='<path>'"):
        runner.resume("t", {"legal_ok": True})
    assert runner.get_state("t").gates == ("rv/legal", "rv/tech")
