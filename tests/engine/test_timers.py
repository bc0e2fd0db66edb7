"""Timers: a gate's deadline routes a thread nobody answered to its ``on_timeout``, and a node
that calls ``ctx.sleep_until`` wakes when its time comes and its route decides. Timers are
fired by ``Runner.fire_due`` exactly once, across restarts and concurrent callers, on every
shipped store; time is an injected clock throughout."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import pytest
from _pg import fresh_schema, require_postgres
from _timer_worker import FLOW, START, Review, Verdict
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Context, Flow, Gate, Map, Parallel, Runner, node
from flowkit.diagram import edges
from flowkit.errors import (
    FlowDefinitionError,
    NodeContractError,
    NotWaitingError,
    RunError,
)
from flowkit.stores import JsonFileStore, MemoryStore, Store

WORKER = Path(__file__).with_name("_timer_worker.py")


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "postgres":
        require_postgres()
    return kind


@pytest.fixture
def location(kind: str, tmp_path: Path) -> Iterator[str]:
    """Where the test's threads live: a folder, ``url#schema``, or ``memory``."""
    if kind == "postgres":
        require_postgres()
        with fresh_schema() as (url, schema):
            yield f"{url}#{schema}"
    elif kind == "jsonfile":
        yield str(tmp_path / "store")
    else:
        yield "memory"


class Stores:
    """Opens stores on the test's location (each a new object, as a restarted process would
    have); the memory store is one object, shared."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.opened: list[Any] = []
        self.memory = MemoryStore()

    def open(self) -> Store:
        if self.location == "memory":
            return self.memory
        if self.location.startswith("postgresql://"):
            from flowkit.stores.postgres import PostgresStore

            url, _, schema = self.location.partition("#")
            store: Any = PostgresStore(url, schema=schema)
        else:
            store = JsonFileStore(self.location, fsync=False)
        self.opened.append(store)
        return store  # type: ignore[no-any-return]


@pytest.fixture
def stores(location: str) -> Iterator[Stores]:
    found = Stores(location)
    yield found
    for store in found.opened:
        store.close()


class Clock:
    """An injected clock, moved by hand."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def kinds(runner: Runner[Any], thread_id: str) -> list[tuple[str, str | None, str]]:
    return [(c.kind, c.node, c.next) for c in runner.history(thread_id)]


# -- a gate's deadline --------------------------------------------------------------------------


def test_a_deadline_that_passes_fires_once_and_the_run_goes_on(stores: Stores) -> None:
    clock = Clock()
    runner = Runner(FLOW, store=stores.open(), clock=clock)
    waiting = runner.start("t")
    assert waiting.waiting and waiting.node == "review"
    assert waiting.due == START + timedelta(days=2)
    clock.advance(days=2, seconds=-1)
    assert runner.fire_due() == []  # not yet
    clock.advance(seconds=1)
    (fired,) = runner.fire_due()
    assert (fired.thread_id, fired.kind, fired.node, fired.target) == (
        "t",
        "deadline",
        "review",
        "escalate",
    )
    assert fired.due == START + timedelta(days=2) and fired.error is None
    assert fired.result is not None and fired.result.done
    assert fired.result.state.escalated == 1  # the node after the timer ran
    assert runner.fire_due() == []
    clock.advance(days=30)
    assert runner.fire_due() == []  # once, however late
    assert kinds(runner, "t") == [
        ("start", None, "write"),
        ("step", "write", "review"),
        ("timer", "review", "escalate"),
        ("step", "escalate", END),
    ]
    assert runner.get_state("t").due is None


def test_an_answer_before_the_deadline_means_it_never_fires(stores: Stores) -> None:
    clock = Clock()
    store = stores.open()
    runner = Runner(FLOW, store=store, clock=clock)
    runner.start("t")
    clock.advance(days=1)
    assert runner.resume("t", {"approved": True}).done
    assert store.records("t")[-2].kind == "input" and store.records("t")[-2].due is None
    clock.advance(days=5)
    assert runner.fire_due() == []
    assert "timer" not in [kind for kind, _, _ in kinds(runner, "t")]
    assert store.due_timers(clock().timestamp()) == []  # type: ignore[attr-defined]


def test_a_timer_fires_after_a_restart_from_a_new_runner_on_the_same_store(
    stores: Stores,
) -> None:
    clock = Clock()
    Runner(FLOW, store=stores.open(), clock=clock).start("t")
    clock.advance(days=3)
    restarted = Runner(FLOW, store=stores.open(), clock=clock)  # a new process, say
    (fired,) = restarted.fire_due()
    assert fired.thread_id == "t" and fired.result is not None and fired.result.done
    assert Runner(FLOW, store=stores.open(), clock=clock).fire_due() == []


def test_two_runners_firing_at_once_fire_each_timer_once(stores: Stores) -> None:
    clock = Clock()
    starter = Runner(FLOW, store=stores.open(), clock=clock)
    ids = [f"t{i}" for i in range(6)]
    for thread_id in ids:
        starter.start(thread_id)
    clock.advance(days=3)
    runners = [Runner(FLOW, store=stores.open(), clock=clock) for _ in range(2)]
    barrier = threading.Barrier(2)
    fired: list[list[Any]] = [[], []]

    def fire(index: int) -> None:
        barrier.wait()
        for _ in range(3):  # again and again, while the other one fires too
            fired[index] += runners[index].fire_due()

    workers = [threading.Thread(target=fire, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(f.thread_id for f in fired[0] + fired[1]) == ids
    for thread_id in ids:
        journal = stores.open().records(thread_id)
        assert [r.kind for r in journal].count("timer") == 1
        assert starter.get_state(thread_id).state.escalated == 1


@pytest.mark.parametrize("kind", ["jsonfile", "postgres"])  # stores processes share
def test_two_processes_firing_at_once_fire_each_timer_once(
    kind: str, location: str, tmp_path: Path
) -> None:
    store = Stores(location).open()
    ids = [f"t{i}" for i in range(8)]
    for thread_id in ids:
        Runner(FLOW, store=store, clock=lambda: START).start(thread_id)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), location, str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert all(proc.returncode == 0 for proc in procs)
    counts = [int(out.split()[-1]) for out in outputs]
    assert sum(counts) == len(ids)
    for thread_id in ids:
        assert [r.kind for r in store.records(thread_id)].count("timer") == 1
        assert store.records(thread_id)[-1].status == "done"
    close = getattr(store, "close", None)
    if close is not None:
        close()


def test_due_threads_fire_earliest_first_and_limit_caps_a_call(stores: Stores) -> None:
    clock = Clock()
    runner = Runner(FLOW, store=stores.open(), clock=clock)
    for thread_id in ("late", "early", "middle"):
        runner.start(thread_id)
        clock.advance(hours=1)
    clock.advance(days=3)
    assert [f.thread_id for f in runner.fire_due(limit=2)] == ["late", "early"]
    assert [f.thread_id for f in runner.fire_due()] == ["middle"]


def test_now_may_be_given_and_only_this_flows_threads_fire(stores: Stores) -> None:
    clock = Clock()
    store = stores.open()
    runner = Runner(FLOW, store=store, clock=clock)
    other = Runner(sleepy_flow(), store=store, clock=clock)
    runner.start("review")
    other.start("nap")
    assert runner.fire_due(now=START + timedelta(hours=1)) == []
    (fired,) = runner.fire_due(now=START + timedelta(days=9))
    assert fired.thread_id == "review"
    assert other.get_state("nap").waiting  # its flow's runner fires it, not this one
    assert [f.thread_id for f in other.fire_due(now=START + timedelta(days=9))] == ["nap"]


def test_a_chain_of_deadlines_fires_one_step_per_due_time(stores: Stores) -> None:
    class Quiet(BaseModel):
        approved: bool = False
        reminded: bool = False

    reminder = Flow(
        name="reminders",
        state=Quiet,
        start="ask",
        nodes={"remind": lambda s: {"reminded": True}},
        gates={
            "ask": Gate(Verdict, deadline=timedelta(hours=1), on_timeout="remind"),
            "last_call": Gate(Verdict, deadline=timedelta(hours=2), on_timeout="given_up"),
        },
        finals={"given_up": "failed"},
        routes={"ask": END, "remind": "last_call", "last_call": END},
    )
    clock = Clock()
    runner = Runner(reminder, store=stores.open(), clock=clock)
    runner.start("t")
    clock.advance(hours=1)
    (first,) = runner.fire_due()
    assert first.result is not None and first.result.node == "last_call"
    assert first.result.due == clock.now + timedelta(hours=2)  # from when it got there
    assert runner.fire_due() == []
    clock.advance(hours=2)
    (second,) = runner.fire_due()
    assert second.result is not None
    assert (second.result.status, second.result.node) == ("failed", "given_up")


def test_a_fork_of_a_waiting_thread_keeps_its_timer(stores: Stores) -> None:
    clock = Clock()
    runner = Runner(FLOW, store=stores.open(), clock=clock)
    runner.start("t")
    assert runner.fork("t", "copy").due == START + timedelta(days=2)
    clock.advance(days=2)
    assert sorted(f.thread_id for f in runner.fire_due()) == ["copy", "t"]


def test_a_patch_that_moves_the_thread_drops_the_timer(stores: Stores) -> None:
    clock = Clock()
    runner = Runner(FLOW, store=stores.open(), clock=clock)
    runner.start("t")
    assert runner.update_state("t", {"text": "edited"}).due is not None  # still waiting there
    assert runner.update_state("t", goto="publish").due is None
    clock.advance(days=3)
    assert runner.fire_due() == []


def test_the_timer_move_mirrors_dialog_state_and_checks_invariants() -> None:
    class Mirrored(BaseModel):
        approved: bool = False
        dialog_state: str = ""

    def no_escalation(state: Mirrored) -> str | None:
        return "escalation is off" if state.dialog_state == "escalate" else None

    shape: dict[str, Any] = {
        "name": "mirrored",
        "state": Mirrored,
        "start": "review",
        "nodes": {"escalate": lambda s: {}},
        "gates": {"review": Gate(Verdict, deadline=60, on_timeout="escalate")},
        "routes": {"review": END, "escalate": END},
    }
    clock = Clock()
    store = MemoryStore()
    runner = Runner(Flow(**shape), store=store, clock=clock)
    runner.start("t")
    clock.advance(minutes=1)
    assert len(runner.fire_due()) == 1
    assert store.records("t")[1].kind == "timer"
    assert store.records("t")[1].update == {"dialog_state": "escalate"}  # type: ignore[union-attr]

    strict = Runner(Flow(**shape, invariants=[no_escalation]), store=MemoryStore(), clock=clock)
    strict.start("t")
    clock.advance(minutes=1)
    with capture_logs() as logs:
        assert strict.fire_due() == []
    assert "timer_failed" in [e["event"] for e in logs if e["log_level"] == "warning"]
    assert strict.get_state("t").waiting  # nothing saved: tried again next time


def test_a_timer_is_logged_and_never_its_state() -> None:
    clock = Clock()
    runner = Runner(FLOW, store=MemoryStore(), clock=clock)
    runner.start("t", {"text": "secret draft"})
    clock.advance(days=3)
    with capture_logs() as logs:
        runner.fire_due()
    (line,) = [e for e in logs if e["event"] == "timer_fired"]
    assert (line["thread_id"], line["node"], line["target"]) == ("t", "review", "escalate")
    assert "secret" not in repr(logs)


def test_a_runner_without_a_store_fires_its_own_threads() -> None:
    clock = Clock()
    runner = Runner(FLOW, store=None, clock=clock)
    runner.start("t")
    clock.advance(days=2)
    (fired,) = runner.fire_due()
    assert fired.result is not None and fired.result.done


# -- a node that sleeps -------------------------------------------------------------------------


class Nap(BaseModel):
    naps: int = 0
    woke: bool = False
    until: str = ""


def sleepy_flow(when: Any = timedelta(hours=8), calls: list[str] | None = None) -> Flow:
    @node(writes=["naps"])
    def nap(state: Nap, ctx: Context) -> dict[str, Any]:
        if calls is not None:
            calls.append("nap")
        ctx.sleep_until(when, update={"naps": state.naps + 1})
        raise AssertionError("never reached: the step ended")

    return Flow(
        name="sleepy",
        state=Nap,
        start="nap",
        nodes={"nap": nap, "wake": lambda s: {"woke": True}},
        routes={"nap": "wake", "wake": END},
    )


def test_a_node_that_sleeps_waits_with_nothing_to_answer_then_wakes_and_routes(
    stores: Stores,
) -> None:
    clock = Clock()
    calls: list[str] = []
    runner = Runner(sleepy_flow(calls=calls), store=stores.open(), clock=clock)
    asleep = runner.start("t")
    assert (asleep.status, asleep.node, asleep.gates, asleep.pauses) == ("waiting", "nap", (), ())
    assert asleep.due == START + timedelta(hours=8)
    assert asleep.state.naps == 1  # the update given with the sleep is saved
    with pytest.raises(NotWaitingError, match=r"sleeps at `nap` until 2026-03-02T17:00:00"):
        runner.resume("t", {"anything": 1})
    with pytest.raises(NotWaitingError, match="sleeps"):
        runner.resume("t")
    clock.advance(hours=8)
    restarted = Runner(sleepy_flow(calls=calls), store=stores.open(), clock=clock)
    (fired,) = restarted.fire_due()
    assert (fired.kind, fired.node, fired.target) == ("wake", "nap", "wake")
    assert fired.result is not None and fired.result.done
    assert fired.result.state == Nap(naps=1, woke=True)
    assert calls == ["nap"]  # the node never ran again
    assert kinds(restarted, "t") == [
        ("start", None, "nap"),
        ("step", "nap", "nap"),
        ("timer", "nap", "wake"),
        ("step", "wake", END),
    ]


def test_sleep_until_an_aware_time_in_any_zone(stores: Stores) -> None:
    tokyo = timezone(timedelta(hours=9))
    when = datetime(2026, 3, 3, 8, 30, tzinfo=tokyo)
    clock = Clock()
    runner = Runner(sleepy_flow(when), store=stores.open(), clock=clock)
    assert runner.start("t").due == when.astimezone(UTC)
    clock.now = when - timedelta(seconds=1)
    assert runner.fire_due() == []
    clock.now = when
    assert [f.thread_id for f in runner.fire_due()] == ["t"]


def test_a_time_already_past_wakes_at_the_next_call() -> None:
    runner = Runner(sleepy_flow(START - timedelta(days=1)), store=MemoryStore(), clock=Clock())
    assert runner.start("t").waiting
    assert [f.target for f in runner.fire_due()] == ["wake"]


def test_a_sleeping_thread_moved_by_a_patch_wakes_no_more() -> None:
    clock = Clock()
    runner = Runner(sleepy_flow(), store=MemoryStore(), clock=clock)
    runner.start("t")
    moved = runner.update_state("t", goto="wake")
    assert moved.due is None and moved.status == "pending"
    assert runner.resume("t").done
    clock.advance(days=1)
    assert runner.fire_due() == []


@pytest.mark.parametrize(
    ("when", "words"),
    [
        (datetime(2026, 3, 3, 9, 0), "naive datetime"),  # naive, on purpose
        (timedelta(minutes=-5), "negative time"),
        ("tomorrow", "sleep until a str"),
        (3600, "sleep until a int"),
    ],
)
def test_a_sleep_until_a_time_that_is_no_time_is_refused_and_nothing_saved(
    when: Any, words: str
) -> None:
    store = MemoryStore()
    runner = Runner(sleepy_flow(when), store=store, clock=Clock())
    with pytest.raises(NodeContractError, match=words) as caught:
        runner.start("t")
    assert caught.value.node == "nap"
    assert [r.kind for r in store.records("t")] == ["start"]  # the node's step is not saved


def test_a_map_call_cannot_sleep() -> None:
    class Items(BaseModel):
        items: list[int] = [1, 2]
        done: list[int] = []

    def each(state: Items, item: int, ctx: Context) -> dict[str, Any]:
        ctx.sleep_until(timedelta(hours=1))

    flow = Flow(
        name="mapped",
        state=Items,
        start="each",
        nodes={"each": Map(each, over=lambda s: s.items)},
        routes={"each": END},
    )
    store = MemoryStore()
    result = Runner(flow, store=store, clock=Clock()).start("t")
    assert result.status == "failed" and result.due is None
    errors = [r.error for r in store.records("t") if r.kind == "item"]  # type: ignore[union-attr]
    assert len(errors) == 2
    assert all(e["type"] == "RunError" and "sleep_until" in e["message"] for e in errors)


# -- definitions and bad input --------------------------------------------------------------------


def shape(**gate: Any) -> dict[str, Any]:
    return {
        "name": "bad",
        "state": Review,
        "start": "review",
        "nodes": {"escalate": lambda s: {}},
        "gates": {"review": Gate(Verdict, **gate)},
        "routes": {"review": END, "escalate": END},
    }


def test_on_timeout_must_name_a_state_of_the_flow_other_than_the_gate() -> None:
    with pytest.raises(FlowDefinitionError, match=r"on_timeout=`escalat`.*`escalate`"):
        Flow(**shape(deadline=60, on_timeout="escalat"))
    with pytest.raises(FlowDefinitionError, match="itself"):
        Flow(**shape(deadline=60, on_timeout="review"))
    Flow(**shape(deadline=60, on_timeout="escalate"))
    Flow(**{**shape(deadline=60, on_timeout=END), "nodes": {}, "routes": {"review": END}})


def test_a_deadline_where_no_timer_fires_is_refused_at_build() -> None:
    @node(asks=Gate(Verdict, deadline=60, on_timeout="escalate"))
    def asking(state: Review, ctx: Context) -> None:
        ctx.ask("ok?")

    with pytest.raises(FlowDefinitionError, match="asks with a deadline"):
        Flow(
            name="asks",
            state=Review,
            start="asking",
            nodes={"asking": asking, "escalate": lambda s: {}},
            routes={"asking": END, "escalate": END},
        )
    branches = Parallel({"check": lambda s: {}, "sign": Gate(Verdict, deadline=60, on_timeout="x")})
    with pytest.raises(FlowDefinitionError, match="Gate branch `sign` of `both` has a deadline"):
        Flow(
            name="branches",
            state=Review,
            start="both",
            nodes={"both": branches},
            routes={"both": END},
        )


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"deadline": -1, "on_timeout": "escalate"}, ValueError),
        ({"deadline": timedelta(0), "on_timeout": "escalate"}, ValueError),
        ({"deadline": "2 days", "on_timeout": "escalate"}, TypeError),
        ({"deadline": 60}, TypeError),
        ({"on_timeout": "escalate"}, TypeError),
    ],
)
def test_a_deadline_that_is_no_positive_time_or_lacks_its_route_is_refused(
    options: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error, match="deadline"):
        Gate(Verdict, **options)


def test_the_timeout_route_is_an_edge_of_the_machine_the_data_and_the_diagram() -> None:
    assert FLOW.machine.advance("review", "escalate") == "escalate"
    assert FLOW.to_data()["deadlines"] == {
        "review": {"seconds": 172800.0, "on_timeout": "escalate"}
    }
    assert "deadlines" not in sleepy_flow().to_data()
    assert ("review", "escalate", "timeout 2d") in [
        (e.source, e.target, e.label) for e in edges(FLOW)
    ]


def test_a_state_reached_only_by_a_timeout_is_reachable() -> None:
    flow = Flow(**shape(deadline=60, on_timeout="escalate"))
    assert "escalate" in {t for s, t in flow.machine.edges if s == "review"}


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"now": datetime(2026, 1, 1)}, "aware datetime"),  # naive, on purpose
        ({"now": "now"}, "aware datetime"),
        ({"limit": 0}, "at least 1"),
        ({"limit": True}, "at least 1"),
    ],
)
def test_fire_due_refuses_a_naive_now_or_a_limit_that_is_no_count(
    options: dict[str, Any], words: str
) -> None:
    with pytest.raises(RunError, match=words):
        Runner(FLOW, store=MemoryStore()).fire_due(**options)


def test_a_flow_with_async_nodes_is_fired_from_a_thread_inside_an_event_loop() -> None:
    import asyncio

    async def write(state: Review) -> dict[str, Any]:
        return {"text": "draft"}

    flow = Flow(
        name="async_review",
        state=Review,
        start="write",
        nodes={"write": write, "escalate": lambda s: {"escalated": 1}},
        gates={"review": Gate(Verdict, deadline=60, on_timeout="escalate")},
        routes={"write": "review", "review": END, "escalate": END},
    )
    clock = Clock()
    runner = Runner(flow, store=MemoryStore(), clock=clock)

    async def main() -> Literal["done"]:
        await runner.astart("t")
        clock.advance(minutes=1)
        with pytest.raises(RunError, match="to_thread"):
            runner.fire_due()
        (fired,) = await asyncio.to_thread(runner.fire_due)
        assert fired.result is not None
        return "done"

    assert asyncio.run(main()) == "done"
