"""Node caching: ``@node(reads=..., cache=CachePolicy(ttl=...))`` reuses the update while the
declared reads are unchanged; a hit is a step of its own (``cached`` in the journal, history and
``NodeFinished``), survives restarts with a durable cache, expires, and never fails a run."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import (
    END,
    CachePolicy,
    Flow,
    Map,
    NodeFinished,
    Runner,
    Subflow,
    append,
    node,
)
from flowkit.memory import InProcessMemory, JsonFileMemory
from flowkit.stores import JsonFileStore, StepRecord, Store
from flowkit.testing import capture_events


class Mood(enum.Enum):
    GOOD = "good"
    BAD = "bad"


class Answer(BaseModel):
    text: str
    at: datetime
    mood: Mood


class Ask(BaseModel):
    question: str = "why?"
    user: str = "ann"
    answer: Answer | None = None
    log: Annotated[list[str], append] = []


def answering(calls: list[str], *, fail: bool = False, **policy: Any) -> Flow:
    @node(reads=["question"], writes=["answer", "log"], cache=CachePolicy(**policy))
    def answer(state: Ask) -> dict[str, Any]:
        calls.append(state.question)
        if fail:
            raise ValueError("the oracle is out")
        text = f"because {state.question}"
        when = datetime(2026, 1, 5, tzinfo=UTC)
        return {"answer": Answer(text=text, at=when, mood=Mood.GOOD), "log": [text]}

    return Flow(
        name="ask",
        state=Ask,
        start="answer",
        nodes={"answer": answer},
        routes={"answer": END},
        error_field=None,
    )


def test_the_same_reads_reuse_the_update_and_the_hit_shows_everywhere(store: Store) -> None:
    calls: list[str] = []
    runner = Runner(answering(calls), store=store)
    first = runner.start("a")
    with capture_events(runner) as events:
        second = runner.start("b", {"user": "bob"})  # reads the same question
    assert calls == ["why?"]
    assert second.state.answer == first.state.answer  # models, enums, datetimes intact
    assert second.state.log == ["because why?"]
    assert second.state.user == "bob"
    finished = [e for e in events if isinstance(e, NodeFinished)]
    assert [(e.node, e.attempts, e.cached) for e in finished] == [("answer", 0, True)]
    assert [c.cached for c in runner.history("b")] == [False, True]
    assert [c.cached for c in runner.history("a")] == [False, False]
    step = store.records("b")[-1]
    assert isinstance(step, StepRecord) and step.cached and step.attempts == 0


def test_other_reads_run_the_node_again() -> None:
    calls: list[str] = []
    runner = Runner(answering(calls))
    runner.start("a")
    runner.start("b", {"question": "how?"})
    runner.start("c", {"question": "how?"})
    assert calls == ["why?", "how?"]


def test_entries_expire_after_their_ttl() -> None:
    calls: list[str] = []
    now = [datetime(2026, 1, 5, tzinfo=UTC)]
    runner = Runner(answering(calls, ttl=timedelta(minutes=5)), clock=lambda: now[0])
    runner.start("a")
    now[0] += timedelta(minutes=4)
    runner.start("b")
    now[0] += timedelta(minutes=2)  # 6 minutes after the entry was made
    runner.start("c")
    runner.start("d")
    assert calls == ["why?", "why?"]


def test_a_new_version_stops_old_entries_from_matching() -> None:
    calls: list[str] = []
    memory = InProcessMemory()
    Runner(answering(calls), cache=memory).start("a")
    Runner(answering(calls, version="2"), cache=memory).start("b")
    Runner(answering(calls, version="2"), cache=memory).start("c")
    assert calls == ["why?", "why?"]


def test_a_durable_cache_serves_a_new_process(tmp_path: Path) -> None:
    calls: list[str] = []
    with JsonFileStore(tmp_path / "store", fsync=False) as store:
        cache = JsonFileMemory(tmp_path / "cache", fsync=False)
        Runner(answering(calls), store=store, cache=cache).start("a")
    with JsonFileStore(tmp_path / "store", fsync=False) as store:
        cache = JsonFileMemory(tmp_path / "cache", fsync=False)
        result = Runner(answering(calls), store=store, cache=cache).start("b")
        assert Runner(answering(calls), store=store).history("b")[-1].cached
    assert calls == ["why?"]
    assert result.state.answer is not None and result.state.answer.mood is Mood.GOOD


def test_failures_are_not_cached() -> None:
    calls: list[str] = []
    runner = Runner(answering(calls, fail=True))
    assert runner.start("a").status == "failed"
    assert runner.start("b").status == "failed"
    assert calls == ["why?", "why?"]


def test_a_cache_that_cannot_keep_the_update_only_costs_a_run() -> None:
    calls: list[str] = []
    runner = Runner(answering(calls), cache=InProcessMemory(max_value_bytes=10))
    with capture_logs() as logs:
        assert runner.start("a").status == "done"
        assert runner.start("b").status == "done"
    assert calls == ["why?", "why?"]
    assert [e["event"] for e in logs].count("node_cache_not_written") == 2


#: Entries a shared cache may hold that this flow cannot use: damaged, or written by an
#: older deployment whose node wrote other fields or other types.
UNUSABLE_ENTRIES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "a time that is text": lambda entry: {**entry, "at": "soon"},
    "a time that is a list": lambda entry: {**entry, "at": [1]},
    "a time too large for a float": lambda entry: {**entry, "at": 10**400},
    "a time that is NaN": lambda entry: {**entry, "at": "nan"},
    "no update": lambda entry: {"at": entry["at"]},
    "an update of the wrong type": lambda entry: {**entry, "update": {"answer": 5}},
    "an update of a field the node does not write": lambda entry: {
        **entry,
        "update": {"user": "mallory"},
    },
    "an update of an unknown field": lambda entry: {**entry, "update": {"nosuch": 1}},
}


@pytest.mark.parametrize("damage", UNUSABLE_ENTRIES.values(), ids=list(UNUSABLE_ENTRIES))
def test_an_entry_the_flow_cannot_use_only_costs_a_run(
    damage: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    calls: list[str] = []
    memory = InProcessMemory()
    Runner(answering(calls, ttl=60), cache=memory).start("a")
    [entry] = memory.search(("flowkit.cache",))
    memory.put(entry.namespace, entry.key, damage(entry.value))
    with capture_logs() as logs:
        result = Runner(answering(calls, ttl=60), cache=memory).start("b")
    assert result.status == "done" and result.state.user == "ann"
    assert result.state.answer is not None and result.state.answer.text == "because why?"
    assert calls == ["why?", "why?"]
    assert "node_cache_unusable" in [e["event"] for e in logs]
    [entry] = memory.search(("flowkit.cache",))  # the run replaced it with a good one
    assert Runner(answering(calls, ttl=60), cache=memory).start("c").status == "done"
    assert calls == ["why?", "why?"]


def test_async_and_child_flow_nodes_are_cached_too() -> None:
    calls: list[str] = []

    @node(reads=["question"], writes=["log"], cache=CachePolicy())
    async def slow(state: Ask) -> dict[str, Any]:
        calls.append(state.question)
        await asyncio.sleep(0)
        return {"log": [state.question]}

    child = Flow(name="child", state=Ask, start="slow", nodes={"slow": slow}, routes={"slow": END})
    parent = Flow(
        name="parent",
        state=Ask,
        start="sub",
        nodes={"sub": Subflow(child, writes=["log"])},
        routes={"sub": END},
    )
    runner = Runner(parent)
    for thread in ("a", "b"):
        assert asyncio.run(runner.astart(thread)).state.log == ["why?"]
    assert calls == ["why?"]


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: node(lambda s: None, cache=CachePolicy()), TypeError),  # no reads
        (lambda: node(lambda s: None, reads=["a"], cache=3600), TypeError),
        (lambda: CachePolicy(ttl=-1), ValueError),
        (lambda: CachePolicy(ttl=0), ValueError),
        (lambda: CachePolicy(ttl="1h"), ValueError),
        (lambda: CachePolicy(version=2), TypeError),
        (
            lambda: Map(lambda s, i: None, over=lambda s: [], reads=["a"], cache=CachePolicy()),
            TypeError,
        ),
    ],
)
def test_bad_cache_declarations_are_refused_when_made(make: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        make()
