"""Sample flows, records and an exact-equality check used by the store contract suite.

Kept apart from ``store_contract`` so the suite reads as a list of behaviours. Nothing here
imports pytest.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any
from uuid import UUID

from pydantic import BaseModel

from ..definition._conditions import field
from ..definition._flow import Flow
from ..definition._gate import Gate
from ..definition._reducers import AppendedList, append
from ..definition._route_table import END, Route, RouteTable
from ..records._records import PatchRecord, StartRecord, StepRecord

__all__ = [
    "BAD_THREAD_IDS",
    "REVIEW_FLOW",
    "STAMP",
    "TYPES_FLOW",
    "Doc",
    "Rich",
    "assert_identical",
    "patch_record",
    "rich_values",
    "start_record",
    "step_record",
]

#: Ids every store must refuse: traversal, empty, separators, too long, hidden, control chars.
BAD_THREAD_IDS = ("../../etc", "..", "", "a/b", "a\\b", "x" * 200, ".hidden", "\x00", "a\nb")

# -- records ---------------------------------------------------------------------------------


def start_record(state: Mapping[str, Any] | None = None, *, flow: str = "contract") -> StartRecord:
    return StartRecord(
        version=0,
        ts=1_700_000_000.0,
        next="work",
        status="pending",
        flow=flow,
        state=dict(state or {"n": 0}),
    )


def step_record(version: int, update: Mapping[str, Any] | None = None) -> StepRecord:
    return StepRecord(
        version=version,
        ts=1_700_000_000.0 + version,
        run_id="run-1",
        next="work",
        status="pending",
        node="work",
        update=dict(update if update is not None else {"n": version}),
        latency_s=0.25,
    )


def patch_record(version: int, update: Mapping[str, Any]) -> PatchRecord:
    return PatchRecord(
        version=version,
        ts=1_700_000_000.0 + version,
        next="work",
        status="pending",
        update=dict(update),
        reason="manual fix",
        actor="ops@example",
    )


# -- a review flow: draft -> review gate -> publish | draft ------------------------------------


class Doc(BaseModel):
    drafts: int = 0
    approved: bool = False
    notes: Annotated[list[str], append] = []
    published: bool = False


class ReviewInput(BaseModel):
    approved: bool
    notes: list[str] = []


def _draft(state: Doc) -> dict[str, Any]:
    return {"drafts": state.drafts + 1, "notes": [f"draft {state.drafts + 1}"]}


def _publish(state: Doc) -> dict[str, Any]:
    return {"published": True, "notes": ["published"]}


REVIEW_FLOW = Flow(
    name="contract_review",
    state=Doc,
    start="draft",
    nodes={"draft": _draft, "publish": _publish},
    gates={"review": ReviewInput},
    routes={
        "draft": "review",
        "review": RouteTable(
            "after_review", [Route(field("approved"), "publish")], default="draft"
        ),
        "publish": END,
    },
)

# -- a flow whose state has every kind of field that must survive a store exactly --------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    x: int
    y: float
    tags: tuple[str, ...] = ()


class Rich(BaseModel):
    color: Color = Color.RED
    level: Level = Level.LOW
    point: Point | None = None
    points: list[Point] = []
    by_name: dict[str, Point] = {}
    counts: dict[int, int] = {}
    when: datetime | None = None
    naive: datetime | None = None
    day: date | None = None
    alarm: time | None = None
    wait: timedelta = timedelta(0)
    amount: Decimal = Decimal("0")
    ident: UUID | None = None
    pair: tuple[int, str] = (0, "")
    labels: set[str] = set()
    ids: frozenset[int] = frozenset()
    maybe: int | None = None
    either: int | str = 0
    ratio: float = 0.0
    text: str = ""
    trail: Annotated[list[Color], append] = []


def rich_values() -> dict[str, Any]:
    """Non-default values for every field of ``Rich`` (what the flow's node writes)."""
    return {
        "color": Color.GREEN,
        "level": Level.HIGH,
        "point": Point(x=1, y=2.5, tags=("a", "b")),
        "points": [Point(x=-3, y=0.1), Point(x=4, y=1e-9, tags=("z",))],
        "by_name": {"origin": Point(x=0, y=-0.0)},
        "counts": {1: 10, -2: 20},
        "when": datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=timezone(timedelta(hours=9))),
        "naive": datetime(2024, 5, 1, 8, 0),
        "day": date(2024, 2, 29),
        "alarm": time(6, 45, 1),
        "wait": timedelta(days=1, seconds=3, microseconds=7),
        "amount": Decimal("1234.5600"),
        "ident": UUID("12345678-1234-5678-1234-567812345678"),
        "pair": (7, "seven"),
        "labels": {"x", "y", "日本語"},
        "ids": frozenset({3, 1, 2}),
        "maybe": None,
        "either": "42",
        "ratio": 0.1 + 0.2,
        "text": 'line\nbreak "quoted" \u2028 \x00 tab\t emoji \U0001f916',
        "trail": [Color.GREEN, Color.RED],
    }


class Stamp(BaseModel):
    """Gate input with typed fields: the input record must round-trip too."""

    when: datetime
    amount: Decimal
    color: Color


def _fill(state: Rich) -> dict[str, Any]:
    return rich_values()


def _stamp(state: Rich, value: Stamp) -> dict[str, Any]:
    return {"when": value.when, "amount": value.amount, "trail": [value.color]}


def _finish(state: Rich) -> dict[str, Any]:
    return {"maybe": 5, "ids": state.ids | {99}}


TYPES_FLOW = Flow(
    name="contract_types",
    state=Rich,
    start="fill",
    nodes={"fill": _fill, "finish": _finish},
    gates={"stamp": Gate(Stamp, apply=_stamp)},
    routes={"fill": "stamp", "stamp": "finish", "finish": END},
)

STAMP = Stamp(
    when=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
    amount=Decimal("0.010"),
    color=Color.RED,
)

# -- exact equality ------------------------------------------------------------------------------


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, AppendedList) else value


def assert_identical(expected: Any, actual: Any, where: str = "state") -> None:
    """Assert equal values of identical types, all the way down (``1 == 1.0`` is not enough).

    Datetimes must keep their UTC offset (or lack of one), decimals their exponent. An
    ``append`` field's ``AppendedList`` counts as the list it stands for (pydantic sees a list).
    """
    expected, actual = _as_list(expected), _as_list(actual)
    if type(expected) is not type(actual):
        raise AssertionError(
            f"{where}: type {type(actual).__name__} is not {type(expected).__name__} "
            f"({actual!r} vs {expected!r})"
        )
    if isinstance(expected, BaseModel):
        for name in type(expected).model_fields:
            assert_identical(getattr(expected, name), getattr(actual, name), f"{where}.{name}")
    elif isinstance(expected, dict):
        if list(expected) != list(actual):
            raise AssertionError(f"{where}: keys {list(actual)!r} are not {list(expected)!r}")
        for key in expected:
            assert_identical(key, next(k for k in actual if k == key), f"{where} key {key!r}")
            assert_identical(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, list | tuple):
        if len(expected) != len(actual):
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_identical(e, a, f"{where}[{index}]")
    elif isinstance(expected, set | frozenset):
        if {(type(v), v) for v in expected} != {(type(v), v) for v in actual}:
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
    elif isinstance(expected, datetime | time):
        if expected != actual or expected.utcoffset() != actual.utcoffset():
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
    elif isinstance(expected, Decimal):
        if expected.as_tuple() != actual.as_tuple():
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
    elif isinstance(expected, float):
        if not (expected == actual or (math.isnan(expected) and math.isnan(actual))):
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
    elif isinstance(expected, enum.Enum):
        if expected is not actual:
            raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
    elif expected != actual:
        raise AssertionError(f"{where}: {actual!r} is not {expected!r}")
