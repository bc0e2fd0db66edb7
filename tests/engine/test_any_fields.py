"""A field that admits any type keeps only what JSON gives back the same.

The store keeps a state's JSON form; a tuple in an ``Any`` field would come back as a list
after a resume in another process (and a set, an int key, a datetime, bytes or a model
likewise changed), so the thread would run on one value here and another there. Such values
are refused before anything is written; declared types keep their values either way.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner, append
from flowkit.errors import UnstorableValueError
from flowkit.stores import JsonFileStore


class Item(BaseModel):
    extra: Any = None


class State(BaseModel):
    data: Any = None
    loose: dict[str, Any] = {}
    items: list[Item] = []
    log: Annotated[list[Any], append] = []
    pairs: tuple[int, int] = (0, 0)
    by_id: dict[int, str] = {}
    when: dt.datetime | None = None
    tags: set[str] = set()
    payload: Any = None


class Answer(BaseModel):
    payload: Any = None


UPDATE: dict[str, Any] = {}


def work(state: State) -> dict[str, Any]:
    return dict(UPDATE)


flow = Flow(
    name="any_fields",
    state=State,
    start="work",
    nodes={"work": work},
    gates={"ask": Answer},
    routes={"work": "ask", "ask": END},
)

CHANGED = [
    pytest.param({"data": (1, 2)}, "data", id="tuple"),
    pytest.param({"data": {3}}, "data", id="set"),
    pytest.param({"data": {1: "a"}}, "data.1", id="int key"),
    pytest.param({"data": dt.datetime(2026, 1, 1)}, "data", id="datetime"),
    pytest.param({"data": Decimal("1.5")}, "data", id="decimal"),
    pytest.param({"data": b"raw"}, "data", id="bytes"),
    pytest.param({"data": Item(extra=1)}, "data", id="model"),
    pytest.param({"loose": {"a": [1, (2, 3)]}}, "loose.a[1]", id="nested tuple"),
    pytest.param({"items": [Item(extra=(1,))]}, "items[0].extra", id="tuple in a model"),
    pytest.param({"log": [(1, 2)]}, "log[0]", id="appended tuple"),
]

KEPT: dict[str, Any] = {
    "data": {"a": [1, 2.5, None, True, "x"]},
    "loose": {"k": {"n": [1]}},
    "items": [Item(extra={"x": [1]})],
    "log": [{"a": 1}],
    "pairs": (3, 4),
    "by_id": {7: "seven"},
    "when": dt.datetime(2026, 11, 27, 10, 0),
    "tags": {"a", "b"},
}


def _runner(tmp_path: Path) -> Runner[State]:
    return Runner(flow, store=JsonFileStore(tmp_path))


@pytest.mark.parametrize(("values", "at"), CHANGED)
def test_a_start_state_json_would_change_is_refused_and_nothing_written(
    tmp_path: Path, values: dict[str, Any], at: str
) -> None:
    runner = _runner(tmp_path)
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t", values)
    assert caught.value.at == at
    assert runner.threads() == []


@pytest.mark.parametrize(("values", "at"), CHANGED)
def test_a_node_update_json_would_change_is_refused_and_the_thread_unchanged(
    tmp_path: Path, values: dict[str, Any], at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(f"{__name__}.UPDATE", values)
    runner = _runner(tmp_path)
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t", {})
    assert caught.value.at == at and caught.value.node == "work"
    assert _runner(tmp_path).get_state("t").state == State()


@pytest.mark.parametrize(("values", "at"), CHANGED)
def test_a_patch_json_would_change_is_refused(
    tmp_path: Path, values: dict[str, Any], at: str
) -> None:
    runner = _runner(tmp_path)
    runner.start("t", {})
    before = runner.get_state("t").version
    with pytest.raises(UnstorableValueError):
        runner.update_state("t", values)
    assert _runner(tmp_path).get_state("t").version == before


@pytest.mark.parametrize("payload", [(1, 2), {1: 2}, dt.date(2026, 1, 1)], ids=repr)
def test_a_gate_answer_json_would_change_is_refused(tmp_path: Path, payload: Any) -> None:
    runner = _runner(tmp_path)
    runner.start("t", {})
    with pytest.raises(UnstorableValueError):
        runner.resume("t", {"payload": payload})
    assert _runner(tmp_path).get_state("t").status == "waiting"


def test_values_json_gives_back_the_same_are_kept_type_for_type(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    here = runner.start("t", KEPT).state
    there = _runner(tmp_path).get_state("t").state
    for name in KEPT:
        assert getattr(there, name) == getattr(here, name), name
        assert type(getattr(there, name)) is type(getattr(here, name)), name
    assert there.pairs == (3, 4) and there.by_id == {7: "seven"} and there.tags == {"a", "b"}


def test_an_error_field_that_admits_any_type_is_refused_at_build() -> None:
    # A NodeError kept in an Any field would come back as a dict after a resume elsewhere.
    from flowkit.errors import FlowDefinitionError

    class Loose(BaseModel):
        error: Any = None

    with pytest.raises(FlowDefinitionError) as caught:
        Flow(name="loose", state=Loose, start="work", nodes={"work": work},
             routes={"work": END})  # fmt: skip
    assert "NodeError | None" in str(caught.value)
