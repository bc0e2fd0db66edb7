"""Integers longer than Python reads back are refused before the write, in every store.

CPython converts at most ``sys.get_int_max_str_digits()`` (4,300 by default) decimal digits
between ``int`` and text. Such an integer used to be written as it was, and every later load
of the thread failed with ``CorruptStoreError``: the thread was lost. Now it is an
``UnstorableValueError`` naming where the value is, nothing is written, and the thread loads
(from a fresh store object, as another process would) exactly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.errors import UnstorableValueError
from flowkit.stores import JsonFileStore, MemoryStore, Store

LIMIT = sys.get_int_max_str_digits() or sys.int_info.default_max_str_digits
LONG = 10**LIMIT  # LIMIT + 1 digits: one too many
LONGEST = 10**LIMIT - 1  # LIMIT digits: the longest that round-trips


class Holder(BaseModel):
    n: int = 0
    blob: Any = None


class Answer(BaseModel):
    n: int = 0
    blob: Any = None


def _flow(update: dict[str, Any]) -> Flow[Any]:
    return Flow(
        name="holder",
        state=Holder,
        start="produce",
        nodes={"produce": lambda state: update},
        gates={"ask": Gate(Answer, apply=lambda s, a: {"n": a.n, "blob": a.blob})},
        routes={"produce": "ask", "ask": END},
    )


QUIET = _flow({"n": 1})

#: (a value holding a long integer, where inside the field it sits)
PLACES = {
    "plain": ({"n": LONG}, "n"),
    "negative": ({"n": -LONG}, "n"),
    "in a list": ({"blob": [1, LONG]}, "blob[1]"),
    "in a dict": ({"blob": {"a": {"b": LONG}}}, "blob.a.b"),
}


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """``reopen()``: a store object over the same data (a new one where the data outlives it)."""
    if request.param == "memory":
        memory = MemoryStore()
        yield lambda: memory
        return
    opened: list[Any] = []
    if request.param == "jsonfile":

        def open_file() -> Store:
            opened.append(JsonFileStore(tmp_path / "store"))
            return opened[-1]  # type: ignore[no-any-return]

        yield open_file
    else:
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema):

            def open_pg() -> Store:
                opened.append(PostgresStore(url, schema=schema))
                return opened[-1]  # type: ignore[no-any-return]

            yield open_pg
            for store in opened:
                store.close()
            return
    for store in opened:
        store.close()


def _refused(caught: pytest.ExceptionInfo[UnstorableValueError], who: str, at: str) -> None:
    error = caught.value
    assert (error.thread_id, error.node, error.at) == ("t", who, at)
    assert f"{LIMIT + 1:,} digits" in str(error)


@pytest.mark.parametrize("place", list(PLACES), ids=list(PLACES))
def test_a_node_update_with_a_too_long_integer_is_refused(
    place: str, reopen: Callable[[], Store]
) -> None:
    update, at = PLACES[place]
    with pytest.raises(UnstorableValueError) as caught:
        Runner(_flow(update), store=reopen()).start("t")
    _refused(caught, "produce", at)
    fresh = Runner(QUIET, store=reopen())
    assert fresh.get_state("t").version == 0
    assert fresh.resume("t").status == "waiting"


@pytest.mark.parametrize("place", list(PLACES), ids=list(PLACES))
def test_a_start_input_with_a_too_long_integer_creates_no_thread(
    place: str, reopen: Callable[[], Store]
) -> None:
    value, at = PLACES[place]
    runner = Runner(QUIET, store=reopen())
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t", value)
    _refused(caught, "start", at)
    assert Runner(QUIET, store=reopen()).threads() == []


@pytest.mark.parametrize("place", list(PLACES), ids=list(PLACES))
def test_a_gate_answer_with_a_too_long_integer_is_refused(
    place: str, reopen: Callable[[], Store]
) -> None:
    value, at = PLACES[place]
    runner = Runner(QUIET, store=reopen())
    assert runner.start("t").status == "waiting"
    with pytest.raises(UnstorableValueError) as caught:
        runner.resume("t", value)
    _refused(caught, "ask", at)
    fresh = Runner(QUIET, store=reopen())
    assert fresh.get_state("t").status == "waiting"
    assert fresh.resume("t", {"n": 2}).status == "done"


@pytest.mark.parametrize("place", list(PLACES), ids=list(PLACES))
def test_an_update_state_patch_with_a_too_long_integer_is_refused(
    place: str, reopen: Callable[[], Store]
) -> None:
    value, at = PLACES[place]
    runner = Runner(QUIET, store=reopen())
    runner.start("t")
    with pytest.raises(UnstorableValueError) as caught:
        runner.update_state("t", value)
    _refused(caught, "update_state", at)
    fresh = Runner(QUIET, store=reopen())
    assert fresh.get_state("t").version == 1
    assert fresh.resume("t", {"n": 2}).status == "done"


def test_the_longest_integer_python_reads_round_trips(reopen: Callable[[], Store]) -> None:
    runner = Runner(_flow({"n": LONGEST, "blob": [-LONGEST]}), store=reopen())
    runner.start("t")
    state = Runner(QUIET, store=reopen()).get_state("t").state
    assert (state.n, state.blob) == (LONGEST, [-LONGEST])
