"""LangGraph's fan-out, failure-recovery, retry and node-cache scenarios, as flowkit behaviour.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_pregel.py::test_pending_writes_resume (parallel branches, one failing: resume re-runs
  only the failed one), test_checkpoint_recovery, test_send_sequences /
  test_in_one_fan_out_state_graph_waiting_edge (Send map-reduce, merged in a fixed order)
- test_retry.py::test_graph_with_single_retry_policy, test_graph_with_max_attempts_exceeded,
  test_should_retry_on_single_exception, test_should_retry_on_subclass_of_exception,
  test_should_retry_on_callable
- test_durable_retry.py::test_retry_writes_are_overwritten_on_success,
  test_durable_retry_max_attempts_across_restart (attempts go on counting across a crash)
- test_pregel.py::test_checkpoint_errors (a saver that fails: the error reaches the caller)
- test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple (with_cache: a cached
  node reached again in a loop is skipped; ``clear_cache``),
  test_multiple_interrupts_functional_cache (a cached task's result reused across runs), plus
  expiry by ttl and failures never cached
- test_pregel.py::test_send_sequences, test_imp_task (Send to a node declared with its contract)

LangGraph's Send(node, arg) per item is flowkit's ``Map``; parallel edges out of START are a
``Parallel`` node; a node's ``CachePolicy`` keys on the node's declared ``reads``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import (
    END,
    CachePolicy,
    Flow,
    Map,
    NodeError,
    Parallel,
    RetryPolicy,
    Route,
    RouteTable,
    Runner,
    append,
    node,
    when,
)
from flowkit.errors import UndeclaredWriteError
from flowkit.stores import JsonFileStore, Store

NO_WAIT = RetryPolicy(max_attempts=2, initial_delay=0, jitter=False)


class Total(BaseModel):
    value: Annotated[list[int], append] = []


def test_resume_after_a_failed_branch_reruns_only_that_branch(durable_store: Store) -> None:
    calls: Counter[str] = Counter()
    broken = {"two": True}

    @node(writes=["value"])
    def one(state: Total) -> dict[str, Any]:
        calls["one"] += 1
        return {"value": [2]}

    @node(writes=["value"], retry=NO_WAIT)
    def two(state: Total) -> dict[str, Any]:
        calls["two"] += 1
        if broken["two"]:
            raise ConnectionError("not good")
        return {"value": [3]}

    flow = Flow(
        name="pending_writes",
        state=Total,
        start="both",
        nodes={"both": Parallel({"one": one, "two": two})},
        routes={"both": END},
    )
    runner = Runner(flow, store=durable_store)
    failed = runner.start("1", {"value": [1]})
    assert failed.status == "failed" and failed.node == "both"
    assert failed.state.value == [1]  # nothing merged while a branch failed
    assert calls == {"one": 1, "two": 2}  # two attempts of the failing branch
    assert Runner(flow, store=durable_store).resume("1").status == "failed"
    assert calls == {"one": 1, "two": 4}  # "one" succeeded before: never called again
    broken["two"] = False
    done = Runner(flow, store=durable_store).resume("1")
    assert done.done and done.state.value == [1, 2, 3]
    assert calls == {"one": 1, "two": 5}


class Steps(BaseModel):
    steps: Annotated[list[str], append] = []
    attempt: int = 1
    error: NodeError | None = None


def test_failed_node_keeps_the_input_and_resumes_after_a_fix(durable_store: Store) -> None:
    def node1(state: Steps) -> dict[str, Any]:
        if state.attempt == 1:
            raise RuntimeError("simulated failure")
        return {"steps": ["node1"]}

    flow = Flow(
        name="recovery",
        state=Steps,
        start="node1",
        nodes={"node1": node1, "node2": lambda s: {"steps": ["node2"]}},
        routes={"node1": "node2", "node2": END},
        error_field=None,
    )
    runner = Runner(flow, store=durable_store)
    failed = runner.start("1", {"steps": ["start"]})
    assert failed.status == "failed" and failed.node == "node1"
    assert failed.error is not None and failed.error.type == "RuntimeError"
    assert failed.state.steps == ["start"]
    runner.update_state("1", {"attempt": 2}, reason="fixed the input")
    done = runner.resume("1")
    assert done.done and done.state.steps == ["start", "node1", "node2"]
    errors = [c.error for c in runner.history("1") if c.error is not None]
    assert [e.type for e in errors] == ["RuntimeError"]  # the failure stays in history


class Fan(BaseModel):
    subjects: list[str] = []
    jokes: Annotated[list[str], append] = []
    summary: str = ""


def test_send_style_fan_out_merges_in_item_order_whatever_finishes_first(
    durable_store: Store,
) -> None:
    def joke(state: Fan, subject: str) -> dict[str, Any]:
        time.sleep(0.02 * (3 - len(subject) % 3))  # later items tend to finish first
        return {"jokes": [f"joke about {subject}"]}

    flow = Flow(
        name="map_reduce",
        state=Fan,
        start="generate",
        nodes={
            "generate": Map(joke, over=lambda s: s.subjects, concurrency=3),
            "reduce": lambda s: {"summary": " | ".join(s.jokes)},
        },
        routes={"generate": "reduce", "reduce": END},
    )
    runner = Runner(flow, store=durable_store)
    subjects = ["cats", "dogs", "lions", "owls"]
    done = runner.start("m", {"subjects": subjects})
    assert done.state.jokes == [f"joke about {s}" for s in subjects]
    kinds = [c.kind for c in runner.history("m")]
    assert kinds.count("item") == 4 and kinds.count("join") == 1


class Foo(BaseModel):
    foo: str = ""


def test_retry_policy_retries_until_the_node_succeeds(durable_store: Store) -> None:
    attempts: list[int] = []

    @node(
        writes=["foo"],
        retry=RetryPolicy(
            max_attempts=5, initial_delay=0, jitter=False, retry_on=(ConnectionError,)
        ),
    )
    def failing(state: Foo, ctx: Any) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("transient")
        return {"foo": "success"}

    flow = Flow(
        name="retried",
        state=Foo,
        start="failing",
        nodes={"failing": failing},
        routes={"failing": END},
    )
    runner = Runner(flow, store=durable_store)
    done = runner.start("t1")
    assert done.done and done.state.foo == "success" and attempts == [1, 2, 3]
    step = runner.history("t1")[-1]
    assert (step.kind, step.attempts, step.error) == ("step", 3, None)


def test_max_attempts_exceeded_fails_the_thread_with_the_count(durable_store: Store) -> None:
    calls: list[int] = []

    @node(writes=["foo"], retry=RetryPolicy(max_attempts=3, initial_delay=0, jitter=False))
    def always(state: Foo) -> dict[str, Any]:
        calls.append(1)
        raise ConnectionError("down")

    flow = Flow(
        name="exhausted",
        state=Foo,
        start="always",
        nodes={"always": always},
        routes={"always": END},
    )
    failed = Runner(flow, store=durable_store).start("t")
    assert failed.status == "failed" and len(calls) == 3
    assert failed.error is not None
    assert (failed.error.type, failed.error.attempts, failed.error.retryable) == (
        "ConnectionError",
        3,
        True,
    )


def test_retry_on_picks_the_errors_by_class_subclass_or_callable() -> None:
    assert RetryPolicy(retry_on=(ValueError,)).should_retry(ValueError(), attempt=1)
    assert RetryPolicy(retry_on=(LookupError,)).should_retry(KeyError("k"), attempt=1)
    assert not RetryPolicy(retry_on=(ValueError,)).should_retry(TypeError(), attempt=1)
    only_odd = RetryPolicy(max_attempts=9, retry_on=lambda exc: "odd" in str(exc))
    assert only_odd.should_retry(RuntimeError("odd"), attempt=1)
    assert not only_odd.should_retry(RuntimeError("even"), attempt=1)
    assert not RetryPolicy(max_attempts=2).should_retry(ConnectionError(), attempt=2)


def test_a_bug_is_not_retried_by_default(durable_store: Store) -> None:
    calls: list[int] = []

    @node(writes=["foo"], retry=RetryPolicy(max_attempts=4, initial_delay=0, jitter=False))
    def buggy(state: Foo) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("bad")

    flow = Flow(name="bug", state=Foo, start="buggy", nodes={"buggy": buggy}, routes={"buggy": END})
    failed = Runner(flow, store=durable_store).start("t")
    assert failed.status == "failed" and calls == [1]
    assert failed.error is not None and not failed.error.retryable


class Ticket(BaseModel):
    text: str
    customer: str = ""
    category: str = ""


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _classifier(ran: list[str]) -> Flow:
    @node(reads=["text"], writes=["category"], cache=CachePolicy(ttl=timedelta(minutes=5)))
    def classify(state: Ticket) -> dict[str, Any]:
        ran.append(state.text)
        return {"category": "billing" if "invoice" in state.text else "other"}

    return Flow(
        name="tickets",
        state=Ticket,
        start="classify",
        nodes={"classify": classify},
        routes={"classify": END},
    )


def test_cached_node_runs_once_per_input_across_threads(durable_store: Store) -> None:
    ran: list[str] = []
    clock = Clock()
    runner = Runner(_classifier(ran), store=durable_store, clock=clock)
    runner.start("t1", {"text": "wrong invoice", "customer": "ann"})
    hit = runner.start("t2", {"text": "wrong invoice", "customer": "bob"})
    runner.start("t3", {"text": "hello"})
    assert ran == ["wrong invoice", "hello"]
    assert hit.state.category == "billing" and hit.state.customer == "bob"
    assert [c.cached for c in runner.history("t2")] == [False, True]


def test_cache_entries_expire_after_their_ttl(durable_store: Store) -> None:
    ran: list[str] = []
    clock = Clock()
    runner = Runner(_classifier(ran), store=durable_store, clock=clock)
    runner.start("t1", {"text": "wrong invoice"})
    clock.now += timedelta(minutes=4)
    runner.start("t2", {"text": "wrong invoice"})
    clock.now += timedelta(minutes=2)  # 6 minutes after the entry was made
    runner.start("t3", {"text": "wrong invoice"})
    assert ran == ["wrong invoice", "wrong invoice"]


def test_a_failure_is_never_cached(durable_store: Store) -> None:
    ran: list[str] = []

    @node(reads=["text"], writes=["category"], cache=CachePolicy())
    def flaky(state: Ticket) -> dict[str, Any]:
        ran.append(state.text)
        if len(ran) == 1:
            raise RuntimeError("first call fails")
        return {"category": "ok"}

    flow = Flow(
        name="flaky_cache",
        state=Ticket,
        start="flaky",
        nodes={"flaky": flaky},
        routes={"flaky": END},
        error_field=None,
    )
    runner = Runner(flow, store=durable_store)
    assert runner.start("t1", {"text": "x"}).status == "failed"
    assert runner.start("t2", {"text": "x"}).state.category == "ok"
    assert runner.start("t3", {"text": "x"}).state.category == "ok"
    assert ran == ["x", "x"]


def test_send_to_a_declared_node_keeps_its_contract(durable_store: Store) -> None:
    """test_pregel.py::test_send_sequences, test_imp_task: Send(node, item) targets a node
    declared with its contract; as a ``Map``'s function, a ``@node`` taking (state, item)
    runs once per item with its retry policy and its declared writes, sync or async."""
    attempts: Counter[str] = Counter()

    @node(writes=["jokes"], retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
    def joke(state: Fan, subject: str) -> dict[str, Any]:
        attempts[subject] += 1
        if attempts[subject] == 1:
            raise ConnectionError("flaky model")
        return {"jokes": [f"joke about {subject}"]}

    @node(writes=["jokes"])
    async def async_joke(state: Fan, subject: str) -> dict[str, Any]:
        return {"jokes": [f"async joke about {subject}"]}

    @node(writes=["summary"])
    def sloppy(state: Fan, subject: str) -> dict[str, Any]:
        return {"jokes": [subject]}  # not declared

    def flow(fn: Any) -> Flow:
        return Flow(
            name="send",
            state=Fan,
            start="generate",
            nodes={"generate": Map(fn, over=lambda s: s.subjects)},
            routes={"generate": END},
            error_field=None,
        )

    done = Runner(flow(joke), store=durable_store).start("1", {"subjects": ["cats", "dogs"]})
    assert done.done and done.state.jokes == ["joke about cats", "joke about dogs"]
    assert attempts == {"cats": 2, "dogs": 2}
    async_done = Runner(flow(async_joke), store=durable_store).start("2", {"subjects": ["owls"]})
    assert async_done.done and async_done.state.jokes == ["async joke about owls"]
    strict = Runner(flow(sloppy), store=durable_store)
    with pytest.raises(UndeclaredWriteError):
        strict.start("3", {"subjects": ["x"]})
    assert strict.get_state("3").state.jokes == []  # nothing of the call was saved


class Query(BaseModel):
    query: str = ""
    docs: Annotated[list[str], append] = []
    rounds: int = 0


def test_cached_node_in_a_loop_and_a_new_version_that_clears_it(store: Store) -> None:
    """test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_multiple (with_cache):
    a cached node reached again with the same input is skipped, streamed as cached; LangGraph's
    ``clear_cache()`` is a new ``CachePolicy(version=...)`` here."""
    rewrites: list[str] = []

    def flow(version: str) -> Flow:
        @node(reads=["query"], writes=["docs"], cache=CachePolicy(version=version))
        def rewrite(state: Query) -> dict[str, Any]:
            rewrites.append(state.query)
            return {"docs": [f"doc for {state.query}"]}

        again = when("twice", lambda s: s.rounds >= 2)
        return Flow(
            name="looped_cache",
            state=Query,
            start="rewrite",
            nodes={"rewrite": rewrite, "count": lambda s: {"rounds": s.rounds + 1}},
            routes={
                "rewrite": "count",
                "count": RouteTable("loop", [Route(again, END)], default="rewrite"),
            },
        )

    runner = Runner(flow("1"), store=store)
    events = list(runner.stream("q", {"query": "sf weather"}, mode="events"))
    finished = [(e.node, e.cached) for e in events if e.kind == "node_finished"]
    assert finished == [("rewrite", False), ("count", False), ("rewrite", True), ("count", False)]
    assert runner.get_state("q").state.docs == ["doc for sf weather"] * 2
    Runner(flow("1"), store=store, cache=runner.cache).start("q2", {"query": "sf weather"})
    assert rewrites == ["sf weather"]
    Runner(flow("2"), store=store, cache=runner.cache).start("q3", {"query": "sf weather"})
    assert rewrites == ["sf weather", "sf weather"]


class FullDisk(JsonFileStore):
    """A store that refuses to save a map's join, as a full disk would."""

    full = True

    def append(self, thread_id: str, records: Sequence[Any], *, expected_version: int) -> None:
        if self.full and any(getattr(r, "kind", "") == "join" for r in records):
            raise OSError(28, "No space left on device")
        super().append(thread_id, records, expected_version=expected_version)


def test_a_checkpoint_that_cannot_be_saved_stops_the_run_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """test_pregel.py::test_checkpoint_errors: the saver's error reaches the caller (it is
    not swallowed), and the thread goes on from what was saved once saving works again,
    without calling the finished Send tasks again."""
    calls: list[int] = []

    def each(state: Fan, subject: str) -> dict[str, Any]:
        calls.append(len(subject))
        return {"jokes": [subject]}

    flow = Flow(
        name="full_disk",
        state=Fan,
        start="generate",
        nodes={
            "generate": Map(each, over=lambda s: s.subjects, concurrency=1),
            "reduce": lambda s: {"summary": ",".join(s.jokes)},
        },
        routes={"generate": "reduce", "reduce": END},
    )
    with FullDisk(tmp_path / "store") as store:
        with pytest.raises(OSError, match="No space left"):
            Runner(flow, store=store).start("t", {"subjects": ["a", "bb"]})
        store.full = False
        runner = Runner(flow, store=store)
        stuck = runner.get_state("t")
        assert (stuck.status, stuck.node, stuck.state.jokes) == ("pending", "generate", [])
        done = runner.resume("t")
    assert done.done and done.state.summary == "a,bb"
    assert calls == [1, 2]  # each call's checkpoint was kept: none ran twice


def test_cached_send_tasks_are_reused_by_the_next_run(store: Store) -> None:
    """test_pregel.py::test_multiple_interrupts_functional_cache: a cached task called with
    the same input in a later run is not called again."""
    ran: list[str] = []

    @node(reads=["subjects"], writes=["jokes"], cache=CachePolicy())
    def joke(state: Fan, subject: str) -> dict[str, Any]:
        ran.append(subject)
        return {"jokes": [subject]}

    flow = Flow(
        name="cached_send",
        state=Fan,
        start="generate",
        nodes={"generate": Map(joke, over=lambda s: s.subjects)},
        routes={"generate": END},
    )
    runner = Runner(flow, store=store)
    runner.start("1", {"subjects": ["cats"]})
    assert runner.start("2", {"subjects": ["cats"]}).state.jokes == ["cats"]
    assert ran == ["cats"]


class ProcessDied(BaseException):
    """Stands in for the process dying inside a node: nothing catches it."""


def test_max_attempts_hold_across_a_crash_between_retries(durable_store: Store) -> None:
    """test_durable_retry.py::test_durable_retry_max_attempts_across_restart."""
    seen: list[int] = []
    dies = {"now": True}

    @node(writes=["foo"], retry=RetryPolicy(max_attempts=3, initial_delay=0, jitter=False))
    def flaky(state: Foo, ctx: Any) -> dict[str, Any]:
        seen.append(ctx.attempt)
        if ctx.attempt == 2 and dies["now"]:
            raise ProcessDied
        raise ConnectionError("still down")

    flow = Flow(
        name="durable_retry",
        state=Foo,
        start="flaky",
        nodes={"flaky": flaky},
        routes={"flaky": END},
        error_field=None,
    )
    with pytest.raises(ProcessDied):
        Runner(flow, store=durable_store).start("t")
    dies["now"] = False
    failed = Runner(flow, store=durable_store).resume("t")
    assert failed.status == "failed"
    assert len(seen) == 3  # attempts 1 and 2 before the crash, 3 after it
