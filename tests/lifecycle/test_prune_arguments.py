"""``Runner.prune`` with arguments it cannot use: a ``RunError`` that says what to give, never
a TypeError or OverflowError; an age too large for a float is an age nothing is older than."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import RunError
from flowkit.examples.review import flow as review_flow
from flowkit.stores import MemoryStore


@pytest.fixture
def runner() -> Runner[Any]:
    # The runner's clock stamps the steps, then moves a day on: ages are measured with it.
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    made: Runner[Any] = Runner(review_flow, store=MemoryStore(), clock=lambda: now[0])
    made.start("a")
    made.resume("a", {"approved": True})
    now[0] += timedelta(days=1)
    return made


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"status": 5}, "names no thread status"),
        ({"status": [["done"]]}, "names no thread status"),
        ({"status": [None]}, "names no thread status"),
        ({"status": ()}, "nothing given"),
        ({"status": "finished"}, "names no thread status"),
        ({"older_than": "30d"}, "not an age"),
        ({"older_than": -1}, "not an age"),
        ({"older_than": float("nan")}, "not an age"),
        ({"older_than": True}, "not an age"),
    ],
    ids=repr,
)
def test_arguments_it_cannot_use_are_a_run_error(
    runner: Runner[Any], arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(RunError, match=message):
        runner.prune(**arguments)
    assert runner.threads() == ["a"]


@pytest.mark.parametrize(
    "age", [10**400, float("inf"), timedelta.max], ids=["huge int", "inf", "timedelta.max"]
)
def test_an_age_larger_than_any_thread_prunes_nothing(runner: Runner[Any], age: Any) -> None:
    assert runner.prune(older_than=age).deleted == ()
    assert runner.prune(older_than=0).deleted == ("a",)
