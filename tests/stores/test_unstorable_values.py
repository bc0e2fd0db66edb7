"""Values JSON cannot carry are refused before the write, naming thread, node and field.

A NaN written as ``null`` used to finish the run and leave a thread that could never load
again; now nothing is saved, the error says where the value is, and the thread stays loadable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.definition._jsonform import MAX_NESTING
from flowkit.errors import FlowkitError, StoreError, UnstorableValueError
from flowkit.stores import JsonFileStore, MemoryStore

from .conftest import StoreFiles


class Reading(BaseModel):
    value: float = 0.0
    blob: Any = None
    done: bool = False


class Sample(BaseModel):
    value: float
    note: Any = None


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _flow(produce: Callable[[], dict[str, Any]]) -> Flow[Any]:
    def measure(state: Reading) -> dict[str, Any]:
        return produce()

    return Flow(
        name="measure",
        state=Reading,
        start="measure",
        nodes={"measure": measure},
        gates={"ask": Gate(Sample, apply=lambda s, i: {"value": i.value, "blob": i.note})},
        routes={"measure": "ask", "ask": END},
    )


BAD_UPDATES = {
    "nan": ({"value": math.nan}, "value", "NaN"),
    "inf": ({"value": math.inf}, "value", "inf"),
    "-inf in a list": ({"blob": [1.0, -math.inf]}, "blob[1]", "inf"),
    "nan in a dict": ({"blob": {"a": {"b": math.nan}}}, "blob.a.b", "NaN"),
    "non-utf8 bytes": ({"blob": b"\xff\xfe"}, "blob", "UTF-8"),
    "an object": ({"blob": object()}, "blob", "JSON cannot hold"),
    "too deep": ({"blob": _nested(MAX_NESTING + 1)}, "blob", "nested"),
    "past pydantic's limit": ({"blob": _nested(400)}, "blob", "nested"),
    "lone surrogate": ({"blob": "a\ud800b"}, "blob", "surrogate"),
}


@pytest.mark.parametrize("case", list(BAD_UPDATES), ids=list(BAD_UPDATES))
def test_a_node_update_json_cannot_carry_is_refused_and_nothing_is_saved(
    case: str, open_store: Callable[..., JsonFileStore], files: StoreFiles
) -> None:
    update, at, reason = BAD_UPDATES[case]
    runner = Runner(_flow(lambda: update), store=open_store())
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t")
    error = caught.value
    assert isinstance(error, StoreError) and isinstance(error, FlowkitError)
    assert (error.thread_id, error.node, error.at) == ("t", "measure", at)
    assert error.field == at.split("[")[0].split(".")[0]
    assert reason in str(error) and "Nothing was written" in str(error)
    # Only the start record is on disk, and a fresh process loads the thread.
    assert [r["kind"] for r in files.records("t")] == ["start"]
    fresh = Runner(_flow(lambda: {"value": 1.5}), store=open_store())
    assert fresh.get_state("t").status == "pending"
    assert fresh.resume("t").status == "waiting"
    assert fresh.get_state("t").state.value == 1.5


def test_the_engine_refuses_the_same_values_over_a_memory_store() -> None:
    runner = Runner(_flow(lambda: {"value": math.nan}), store=MemoryStore())
    with pytest.raises(UnstorableValueError):
        runner.start("t")
    assert runner.get_state("t").version == 0


def test_a_start_state_json_cannot_carry_creates_no_thread(
    open_store: Callable[..., JsonFileStore],
) -> None:
    runner = Runner(_flow(lambda: {}), store=open_store())
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t", {"value": math.inf})
    assert (caught.value.node, caught.value.field) == ("start", "value")
    assert runner.threads() == []
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("u", {"blob": {"x": b"\x80"}})
    assert caught.value.at == "blob"
    assert runner.threads() == []


def test_a_gate_input_json_cannot_carry_is_refused_and_the_thread_keeps_waiting(
    open_store: Callable[..., JsonFileStore],
) -> None:
    runner = Runner(_flow(lambda: {"value": 1.0}), store=open_store())
    assert runner.start("t").status == "waiting"
    with pytest.raises(UnstorableValueError) as caught:
        runner.resume("t", {"value": math.nan})
    assert (caught.value.node, caught.value.field) == ("ask", "value")
    with pytest.raises(UnstorableValueError) as caught:
        runner.resume("t", Sample(value=2.0, note=object()))
    assert (caught.value.node, caught.value.field) == ("ask", "note")
    fresh = Runner(_flow(lambda: {}), store=open_store())
    assert fresh.get_state("t").status == "waiting"
    assert fresh.resume("t", {"value": 2.0}).status == "done"


def test_an_update_state_patch_json_cannot_carry_is_refused(
    open_store: Callable[..., JsonFileStore],
) -> None:
    runner = Runner(_flow(lambda: {"value": 1.0}), store=open_store())
    runner.start("t")
    with pytest.raises(UnstorableValueError) as caught:
        runner.update_state("t", {"blob": [math.nan]})
    assert (caught.value.node, caught.value.at) == ("update_state", "blob[0]")
    fresh = Runner(_flow(lambda: {}), store=open_store())
    assert fresh.get_state("t").version == 1


def test_values_at_the_nesting_limit_round_trip(open_store: Callable[..., JsonFileStore]) -> None:
    deep = _nested(MAX_NESTING)
    runner = Runner(_flow(lambda: {"blob": deep}), store=open_store())
    runner.start("t")
    assert Runner(_flow(lambda: {}), store=open_store()).get_state("t").state.blob == deep
