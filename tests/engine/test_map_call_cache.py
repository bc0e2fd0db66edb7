"""A ``Map`` whose function has a ``CachePolicy`` caches each call by the function's reads and
the call's item (LangGraph caches each ``Send`` task by its input); a ``Parallel`` branch with
one caches its own update. A Map is still never cached as a whole."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, CachePolicy, Flow, Map, NodeFinished, Parallel, Runner, append, node
from flowkit.memory import InProcessMemory, JsonFileMemory
from flowkit.stores import JsonFileStore, Store
from flowkit.testing import capture_events


class Item(BaseModel):
    name: str
    weight: int


class Jokes(BaseModel):
    topic: str = "cats"
    subjects: list[str | Item] = []
    jokes: Annotated[list[str], append] = []


def joking(ran: list[Any], *, version: str = "", over: Any = None, **policy: Any) -> Flow:
    lock = threading.Lock()

    @node(reads=["topic"], writes=["jokes"], cache=CachePolicy(version=version, **policy))
    def joke(state: Jokes, subject: Any) -> dict[str, Any]:
        with lock:
            ran.append(subject)
        name = getattr(subject, "name", subject)
        return {"jokes": [f"{state.topic}/{name}"]}

    return Flow(
        name="jokes",
        state=Jokes,
        start="tell",
        nodes={"tell": Map(joke, over=over or (lambda s: s.subjects), concurrency=4)},
        routes={"tell": END},
        error_field=None,
    )


def test_calls_with_an_item_seen_before_are_not_run_again(store: Store) -> None:
    ran: list[Any] = []
    runner = Runner(joking(ran), store=store)
    first = runner.start("1", {"subjects": ["a", "b"]})
    with capture_events(runner) as events:
        second = runner.start("2", {"subjects": ["b", "c", "a"]})
    assert sorted(ran) == ["a", "b", "c"]  # only "c" ran the second time
    assert first.state.jokes == ["cats/a", "cats/b"]
    assert second.state.jokes == ["cats/b", "cats/c", "cats/a"]  # still in item order
    finished = {e.node: e.cached for e in events if isinstance(e, NodeFinished)}
    assert finished == {"tell[0]": True, "tell[1]": False, "tell[2]": True, "tell": False}
    items = [(c.update["jokes"], c.cached, c.attempts) for c in runner.history("2")
             if c.kind == "item"]  # fmt: skip
    assert sorted(items) == [
        (["cats/a"], True, 0), (["cats/b"], True, 0), (["cats/c"], False, 1),
    ]  # fmt: skip
    # a fresh runner over the same store reads the same state back from the journal
    assert Runner(joking([]), store=store).get_state("2").state.jokes == second.state.jokes


def test_other_reads_run_every_call_again() -> None:
    ran: list[Any] = []
    runner = Runner(joking(ran))
    runner.start("1", {"subjects": ["a"]})
    assert runner.start("2", {"subjects": ["a"], "topic": "dogs"}).state.jokes == ["dogs/a"]
    assert ran == ["a", "a"]


def test_items_that_are_models_are_keyed_by_their_json_form() -> None:
    ran: list[Any] = []
    runner = Runner(joking(ran))
    runner.start("1", {"subjects": [Item(name="x", weight=1)]})
    runner.start("2", {"subjects": [Item(name="x", weight=1), Item(name="x", weight=2)]})
    assert [item.weight for item in ran] == [1, 2]


class Opaque:
    """An item with no JSON form: its calls are never cached (nothing could key them)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_an_item_with_no_json_form_is_run_every_time() -> None:
    ran: list[Any] = []

    def over(state: Jokes) -> list[Any]:  # items made from the state, not kept in it
        return [Opaque(str(s)) if s == "opaque" else s for s in state.subjects]

    runner = Runner(joking(ran, over=over))
    for thread in ("1", "2"):
        result = runner.start(thread, {"subjects": ["opaque", "a"]})
        assert result.state.jokes == ["cats/opaque", "cats/a"]
    names = [getattr(item, "name", item) for item in ran]
    assert names.count("opaque") == 2 and names.count("a") == 1


def test_entries_expire_and_versions_part() -> None:
    ran: list[Any] = []
    now = [datetime(2026, 1, 5, tzinfo=UTC)]
    memory = InProcessMemory()
    runner = Runner(joking(ran, ttl=60), clock=lambda: now[0], cache=memory)
    runner.start("1", {"subjects": ["a"]})
    now[0] += timedelta(seconds=30)
    runner.start("2", {"subjects": ["a"]})
    now[0] += timedelta(seconds=61)
    runner.start("3", {"subjects": ["a"]})
    Runner(joking(ran, version="2", ttl=60), clock=lambda: now[0], cache=memory).start(
        "4", {"subjects": ["a"]}
    )
    assert ran == ["a", "a", "a"]


def test_a_durable_cache_serves_another_process(tmp_path: Path) -> None:
    ran: list[Any] = []
    for thread in ("1", "2"):
        with JsonFileStore(tmp_path / "store", fsync=False) as store:
            cache = JsonFileMemory(tmp_path / "cache", fsync=False)
            Runner(joking(ran), store=store, cache=cache).start(thread, {"subjects": ["a", "b"]})
    assert sorted(ran) == ["a", "b"]


def test_failed_calls_are_not_cached() -> None:
    ran: list[str] = []

    @node(reads=["topic"], writes=["jokes"], cache=CachePolicy())
    def joke(state: Jokes, subject: str) -> dict[str, Any]:
        ran.append(subject)
        if subject == "bad":
            raise ValueError("no joke")
        return {"jokes": [subject]}

    flow = Flow(
        name="failing",
        state=Jokes,
        start="tell",
        nodes={"tell": Map(joke, over=lambda s: s.subjects)},
        routes={"tell": END},
        error_field=None,
    )
    runner = Runner(flow)
    for thread in ("1", "2"):
        assert runner.start(thread, {"subjects": ["ok", "bad"]}).status == "failed"
    assert ran == ["ok", "bad", "bad"]


def test_an_entry_the_flow_can_no_longer_use_only_costs_a_run() -> None:
    ran: list[Any] = []
    memory = InProcessMemory()
    Runner(joking(ran), cache=memory).start("1", {"subjects": ["a"]})

    @node(reads=["topic"], writes=["topic"], cache=CachePolicy())  # now writes another field
    def joke(state: Jokes, subject: str) -> dict[str, Any]:
        ran.append(subject)
        return {"topic": subject}

    changed = Flow(
        name="jokes",
        state=Jokes,
        start="tell",
        nodes={"tell": Map(joke, over=lambda s: s.subjects, merge=lambda s, u: u[-1])},
        routes={"tell": END},
        error_field=None,
    )
    with capture_logs() as logs:
        result = Runner(changed, cache=memory).start("2", {"subjects": ["a"]})
    assert result.state.topic == "a" and ran == ["a", "a"]
    assert any(e["event"] == "node_cache_unusable" for e in logs)


class Fan(BaseModel):
    question: str = "why?"
    notes: Annotated[list[str], append] = []


def test_a_parallel_branch_with_a_cache_is_not_run_again() -> None:
    ran: list[str] = []

    @node(reads=["question"], writes=["notes"], cache=CachePolicy())
    def web(state: Fan) -> dict[str, Any]:
        ran.append("web")
        return {"notes": [f"web: {state.question}"]}

    @node(reads=["question"], writes=["notes"])
    def books(state: Fan) -> dict[str, Any]:
        ran.append("books")
        return {"notes": [f"books: {state.question}"]}

    flow = Flow(
        name="fan",
        state=Fan,
        start="look",
        nodes={"look": Parallel({"web": web, "books": books})},
        routes={"look": END},
        error_field=None,
    )
    runner = Runner(flow)
    runner.start("1")
    assert runner.start("2").state.notes == ["web: why?", "books: why?"]
    assert ran == ["web", "books", "books"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_map_answered_wholly_by_the_cache_joins_as_one_that_ran(concurrency: int) -> None:
    ran: list[Any] = []
    flow = joking(ran)
    tell = flow.nodes["tell"]
    assert isinstance(tell, Map)
    runner = Runner(flow)
    subjects = [f"s{i}" for i in range(20)]
    first = runner.start("1", {"subjects": subjects})
    second = runner.start("2", {"subjects": subjects})
    assert len(ran) == 20
    assert second.state == first.state and second.status == "done"
