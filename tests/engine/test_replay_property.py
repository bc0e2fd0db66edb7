"""Property: journal replay, from the start or from any snapshot, rebuilds the live state exactly.

Random update sequences touch every kind of field (append reducers, enums, nested models,
timezone-aware datetimes, decimals, sets, optionals); the state rebuilt from a reopened store
must equal both the live run and an independent reference fold of the same updates.
"""

from __future__ import annotations

import enum
import tempfile
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, Runner, append, field
from flowkit.records._records import Snapshot
from flowkit.stores import JsonFileStore, MemoryStore


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    label: str


class Rich(BaseModel):
    i: int = 0
    messages: Annotated[list[str], append] = []
    trace: Annotated[list[Point], append] = []
    color: Color = Color.RED
    at: datetime = datetime(2024, 1, 1, tzinfo=UTC)
    price: Decimal = Decimal("0")
    tags: set[str] = set()
    where: Point | None = None
    uid: UUID | None = None
    extra: dict[str, list[int]] = {}


text = st.text(max_size=12)
points = st.builds(Point, x=st.integers(-1000, 1000), label=text)
field_values: dict[str, st.SearchStrategy[Any]] = {
    "messages": st.lists(text, max_size=3),
    "trace": st.lists(points, max_size=2),
    "color": st.sampled_from(Color),
    "at": st.datetimes(timezones=st.just(UTC)).map(lambda d: d + timedelta(microseconds=0)),
    "price": st.decimals(
        allow_nan=False, allow_infinity=False, places=3, max_value=10**6, min_value=-(10**6)
    ),
    "tags": st.sets(text, max_size=3),
    "where": st.none() | points,
    "uid": st.none() | st.uuids(),
    "extra": st.dictionaries(text, st.lists(st.integers(), max_size=3), max_size=2),
}
updates = st.lists(st.fixed_dictionaries({}, optional=field_values), min_size=1, max_size=12)


def reference_fold(script: list[dict[str, Any]]) -> Rich:
    """What the state must be, computed without the engine: lists append, the rest overwrite."""
    values = Rich().model_dump()
    for index, update in enumerate(script):
        for key, value in update.items():
            if key in ("messages", "trace"):
                values[key] = [*values[key], *value]
            else:
                values[key] = value
        values["i"] = index + 1
    return Rich.model_validate(values)


def scripted_flow(script: list[dict[str, Any]]) -> Flow:
    def apply(state: Rich) -> dict[str, Any]:
        return {**script[state.i], "i": state.i + 1}

    loop = RouteTable("more", [Route(field("i").eq(len(script)), END)], default="apply")
    return Flow(
        name="rich", state=Rich, start="apply", nodes={"apply": apply}, routes={"apply": loop}
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=updates, data=st.data())
def test_replay_from_start_or_any_snapshot_equals_the_live_state(
    script: list[dict[str, Any]], data: st.DataObject
) -> None:
    expected = reference_fold(script)
    flow = scripted_flow(script)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with JsonFileStore(root, fsync=False) as store:
            live = Runner(flow, store=store).start("t").state
        assert live == expected

        with JsonFileStore(root, fsync=False) as reopened:
            runner = Runner(flow, store=reopened)
            assert runner.get_state("t").state == expected
            history = runner.history("t")
            for version, checkpoint in enumerate(history):
                assert checkpoint.version == version
                assert checkpoint.state == (reference_fold(script[:version]) if version else Rich())

            k = data.draw(st.integers(0, len(history) - 1), label="snapshot version")
            at = history[k]
            reopened.write_snapshot(
                "t",
                Snapshot(
                    version=at.version,
                    ts=0.0,
                    next=at.next,
                    status=at.status,
                    flow="rich",
                    state=at.state.model_dump(mode="json"),
                ),
            )
        with JsonFileStore(root, fsync=False) as from_snapshot:
            log = from_snapshot.load("t")
            assert log.snapshot is not None and log.snapshot.version == k
            assert len(log.records) == len(history) - 1 - k
            assert Runner(flow, store=from_snapshot).get_state("t").state == expected


@settings(max_examples=40, deadline=None)
@given(script=updates)
def test_memory_store_replay_matches_too(script: list[dict[str, Any]]) -> None:
    flow = scripted_flow(script)
    store = MemoryStore()
    live = Runner(flow, store=store).start("t").state
    assert live == reference_fold(script)
    assert Runner(flow, store=store).get_state("t").state == live
