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


# -- update_state of a child's own state ------------------------------------------------------


def test_update_state_patches_the_waiting_childs_own_state(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "s") as store:
        runner = Runner(parent, store=store)
        runner.start("t")
        patched = runner.update_state("t", {"text": "edited"}, child="sub", reason="typo")
        assert patched.gates == ("sub/approve",) and patched.state.text == "hi"
        last = runner.history("t")[-1]
        assert (last.kind, last.node, last.child_state.text) == ("patch", "sub", "edited")
    with JsonFileStore(tmp_path / "s") as store:  # replayed from the journal in a new runner
        done = Runner(parent, store=store).resume("t", {"ok": True})
    assert done.done and (done.state.text, done.state.ok) == ("edited", True)


def test_update_state_of_a_child_two_levels_down_and_goto_in_the_child() -> None:
    from test_subflow import nested_flow

    runner = Runner(nested_flow(), store=MemoryStore())
    runner.start("t")
    runner.update_state("t", {"notes": ["by hand"]}, child="review/inner")
    inner = runner.history("t")[-1]
    assert (inner.node, inner.child_state.notes) == ("review/inner", ["checked hello", "by hand"])
    # goto END skips the inner child's gate and `tidy`: its notes are [checked hello, by hand]
    moved = runner.update_state("t", child="review/inner", goto=END)
    assert moved.status == "pending"  # the child finished: the middle flow's step is next
    done = runner.resume("t")
    assert done.done and not done.state.approved
    assert done.state.verdict == "hello: 3 notes"  # [checked hello, by hand] + signed


@pytest.mark.parametrize(
    ("path", "goto", "message"),
    [
        ("nope", None, "no running subflow at `nope`"),
        ("sub/deeper", None, "no running subflow at `sub/deeper`"),
        ("sub", "nowhere", "not a state of flow `child`"),
    ],
)
def test_update_state_of_a_child_that_is_not_there_is_refused(
    path: str, goto: str | None, message: str
) -> None:
    from flowkit.errors import InvalidStateError

    runner = Runner(parent, store=MemoryStore())
    runner.start("t")
    before = runner.get_state("t")
    with pytest.raises(InvalidStateError, match=message):
        runner.update_state("t", {"text": "x"}, child=path, goto=goto)
    assert runner.get_state("t") == before


def test_update_state_of_a_child_when_none_runs_is_refused() -> None:
    from flowkit.errors import InvalidStateError

    runner = Runner(parent, store=MemoryStore())
    runner.start("t")
    runner.resume("t", {"ok": True})
    with pytest.raises(InvalidStateError, match="running child is none"):
        runner.update_state("t", {"text": "x"}, child="sub")


def test_cli_update_state_child_patches_the_child(tmp_path: Path, capsys: Any) -> None:
    import json

    target = f"{Path(__file__).resolve()}:parent"
    with JsonFileStore(tmp_path) as store:
        Runner(parent, store=store).start("t")
    argv = ["update-state", "t", "--patch", '{"text": "by cli"}', "--child", "sub"]
    assert main([*argv, "--store", str(tmp_path), "--flow", target, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"]["text"] == "hi"  # the parent's
    with JsonFileStore(tmp_path) as store:
        assert Runner(parent, store=store).history("t")[-1].child_state.text == "by cli"
    assert main([*argv[:-1], "nope", "--store", str(tmp_path), "--flow", target]) == 1
    err = capsys.readouterr().err
    assert "no running subflow at `nope`" in err and "Traceback" not in err


def test_flow_data_describes_map_parallel_and_subflow_nodes() -> None:
    from flowkit import Map

    shapes = Flow(
        name="shapes",
        state=Reviews,
        start="each",
        nodes={
            "each": Map(lambda s, item: {}, over=lambda s: [1, 2], concurrency=3),
            "both": Parallel(
                {"legal": Gate(Legal), "tech": lambda s: {"tech_ok": True}},
                concurrency=lambda s: 2,
            ),
            "plain": lambda s: {},
        },
        routes={"each": "both", "both": "plain", "plain": END},
    )
    nodes = shapes.to_data()["nodes"]
    assert nodes["each"]["kind"] == "map" and nodes["each"]["concurrency"] == 3
    assert (nodes["both"]["kind"], nodes["both"]["concurrency"]) == ("parallel", "per state")
    assert nodes["both"]["branches"] == ["tech"]
    assert nodes["both"]["gate_branches"] == {"legal": "Legal"}
    assert nodes["plain"]["kind"] == "node"
    sub = parent.to_data()["nodes"]["sub"]
    assert sub["kind"] == "subflow" and sub["flow"]["gates"] == {"approve": "Approve"}


def _labels(events: Any) -> list[str]:
    return [f"{e.kind}:{getattr(e, 'node', None) or getattr(e, 'gate', '')}" for e in events]


def test_the_wait_inside_a_child_is_told_after_the_step_that_got_there() -> None:
    from flowkit.testing import capture_events

    two_gates = Flow(
        name="two",
        state=Child,
        start="check",
        nodes={"check": lambda s: {"text": "x"}},
        gates={"first": Approve, "second": Approve},
        routes={"check": "first", "first": "second", "second": END},
    )
    outer = Flow(
        name="outer",
        state=Parent,
        start="sub",
        nodes={"sub": Subflow(two_gates, writes=["ok"])},
        routes={"sub": END},
    )
    runner = Runner(outer, store=MemoryStore())
    with capture_events(runner) as events:
        runner.start("t")
    assert _labels(events)[-2:] == ["node_finished:sub/check", "waiting:sub/first"]
    with capture_events(runner) as events:  # gate to gate inside the child: no core step
        runner.resume("t", {"ok": True})
    assert _labels(events)[-1] == "waiting:sub/second"
    with capture_events(runner) as events:
        runner.resume("t", {"ok": True})
    assert _labels(events)[-1] == "completed:__end__"


def test_a_failure_inside_a_child_is_told_after_the_failing_step() -> None:
    from flowkit.testing import capture_events

    def broken(state: Child) -> dict[str, Any]:
        raise RuntimeError("boom")

    failing = Flow(
        name="failing",
        state=Child,
        start="check",
        nodes={"check": broken},
        routes={"check": END},
        error_field=None,
    )
    outer = Flow(
        name="outer",
        state=Parent,
        start="sub",
        nodes={"sub": Subflow(failing)},
        routes={"sub": END},
        error_field=None,
    )
    runner = Runner(outer)
    with capture_events(runner) as events:
        assert runner.start("t").status == "failed"
    assert _labels(events)[-3:] == ["node_finished:sub/check", "node_finished:sub", "failed:sub"]
