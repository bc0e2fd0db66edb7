"""The engine's own step and start records are built without validation (``prebuilt``); each
must be the record validation would have built: equal, the same JSON line byte for byte, and
readable back. Hypothesis feeds the updates, errors and LLM calls a step can carry.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from flowkit import END, Flow, Map, Runner
from flowkit.records._records import (
    TS_RANGE,
    ItemRecord,
    RecordAdapter,
    StartRecord,
    StepRecord,
    record_time,
)
from flowkit.stores import MemoryStore
from flowkit.stores._jsonl import encode, unseal
from flowkit.testing import ScriptedLLM

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


class Box(BaseModel):
    data: Any = None
    note: str = ""


def _flow(value: Any, *, fail: bool, ask: bool) -> Flow:
    def put(state: Box, ctx: Any) -> dict[str, Any]:
        if ask:
            ctx.llm.complete([{"role": "user", "content": "say hi"}])
        if fail:
            raise RuntimeError("broken on purpose")
        return {"data": value}

    def note(state: Box) -> dict[str, Any]:
        return {"note": "done"}

    return Flow(
        name="box",
        state=Box,
        start="put",
        nodes={"put": put, "note": note},
        routes={"put": "note", "note": END},
    )


def _revalidated(record: Any) -> Any:
    return type(record).model_validate(record.model_dump())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON, fail=st.booleans(), ask=st.booleans(), start=JSON)
def test_every_prebuilt_record_is_the_validated_record(
    value: Any, fail: bool, ask: bool, start: Any
) -> None:
    store = MemoryStore()
    llm = ScriptedLLM(default="hi") if ask else None
    runner = Runner(_flow(value, fail=fail, ask=ask), store=store, llm=llm)
    runner.start("t", {"data": start})
    records = store.records("t")
    assert [r.kind for r in records] == (["start", "step"] if fail else ["start", "step", "step"])
    for record in records:
        again = _revalidated(record)
        assert record == again
        assert encode("t", record) == encode("t", again)
        line = json.loads(unseal(encode("t", record))[0])
        assert RecordAdapter.validate_python(line) == record


def _map_flow(*, fail: bool, ask: bool) -> Flow:
    def put(state: Box, item: Any, ctx: Any) -> dict[str, Any]:
        if ask:
            ctx.llm.complete([{"role": "user", "content": "say hi"}])
        if fail:
            raise RuntimeError("broken on purpose")
        return {"data": item}

    return Flow(
        name="boxes",
        state=Box,
        start="put",
        nodes={"put": Map(put, over=lambda s: s.data, key=lambda item: repr(item)[:20])},
        routes={"put": END},
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(JSON, min_size=1, max_size=3), fail=st.booleans(), ask=st.booleans())
def test_every_prebuilt_item_record_is_the_validated_record(
    items: list[Any], fail: bool, ask: bool
) -> None:
    store = MemoryStore()
    llm = ScriptedLLM(default="hi") if ask else None
    Runner(_map_flow(fail=fail, ask=ask), store=store, llm=llm).start("t", {"data": items})
    built = [r for r in store.records("t") if isinstance(r, ItemRecord)]
    assert len(built) == len(items)
    for record in built:
        again = _revalidated(record)
        assert record == again
        assert encode("t", record) == encode("t", again)
        line = json.loads(unseal(encode("t", record))[0])
        assert RecordAdapter.validate_python(line) == record


@pytest.mark.parametrize("kind", [StartRecord, StepRecord, ItemRecord])
def test_prebuilt_records_hold_every_field_in_declaration_order(kind: type[BaseModel]) -> None:
    store = MemoryStore()
    Runner(_flow(1, fail=False, ask=False), store=store).start("t")
    Runner(_map_flow(fail=False, ask=False), store=store).start("m", {"data": [1, 2]})
    built = [r for t in ("t", "m") for r in store.records(t) if type(r) is kind]
    assert built
    for record in built:
        assert list(vars(record)) == list(kind.model_fields)
        assert record.model_fields_set == set(kind.model_fields)


def test_a_step_record_owns_its_llm_calls() -> None:
    kept: list[Any] = []

    def put(state: Box, ctx: Any) -> dict[str, Any]:
        ctx.llm.complete([{"role": "user", "content": "say hi"}])
        kept.append(ctx.llm)  # a node that holds on to its LLM past its step
        return {"data": 1}

    flow = Flow(name="box", state=Box, start="put", nodes={"put": put}, routes={"put": END})
    store = MemoryStore()
    Runner(flow, store=store, llm=ScriptedLLM(default="hi")).start("t")
    step = store.records("t")[1]
    assert isinstance(step, StepRecord) and len(step.llm_calls) == 1
    kept[0].complete([{"role": "user", "content": "later"}])
    assert len(store.records("t")[1].llm_calls) == 1


def test_a_clock_beyond_what_a_record_may_say_is_refused_and_nothing_is_stored() -> None:
    store = MemoryStore()
    runner = Runner(
        _flow(1, fail=False, ask=False),
        store=store,
        clock=lambda: datetime.max.replace(tzinfo=UTC),
    )
    with pytest.raises(ValidationError, match="ts"):
        runner.start("t")
    assert store.threads() == []


def test_a_record_is_never_stamped_later_than_a_clock_read_after_it() -> None:
    for _ in range(2_000):
        stamped = record_time()
        assert stamped <= time.time()
        assert len(repr(stamped).partition(".")[2]) <= 3  # whole milliseconds, short in JSON


@given(st.floats(min_value=0, max_value=TS_RANGE[1]))
def test_whole_milliseconds_read_back_as_the_same_short_number(seconds: float) -> None:
    stamped = int(seconds * 1000) / 1000
    assert float(repr(stamped)) == stamped and len(repr(stamped).partition(".")[2]) <= 3
