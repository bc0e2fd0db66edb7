"""``ctx.step_key``: the same on every attempt of a step and every re-run of it after a crash
or a failure (also from a snapshot, inside a Map or a Subflow), different for every other step
(another node, another visit of the same node, another thread, after a patch)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Flow,
    Map,
    RetryPolicy,
    Route,
    RouteTable,
    Runner,
    Subflow,
    append,
    field,
    node,
)
from flowkit.stores import JsonFileStore, MemoryStore, Store


class Crash(BaseException):
    """Stands for the process dying: nothing in the engine catches it."""


class Loop(BaseModel):
    laps: int = 0
    items: list[str] = ["a", "b", "c"]
    keys: Annotated[list[str], append] = []


def recorder(keys: list[str], *, fail_first: int = 0, crash_first: int = 0) -> Any:
    """A node that notes its step key, raising ValueError then Crash for its first calls."""
    calls = {"n": 0}

    def work(state: Loop, ctx: Context) -> dict[str, Any]:
        calls["n"] += 1
        keys.append(ctx.step_key)
        if calls["n"] <= crash_first:
            raise Crash
        if calls["n"] <= crash_first + fail_first:
            raise ValueError("not yet")
        return {"laps": state.laps + 1, "keys": [ctx.step_key]}

    return work


def loop_flow(work: Any, *, laps: int = 2, retry: RetryPolicy | None = None) -> Flow:
    again = RouteTable(
        "again", [Route(field("laps").is_in(list(range(laps))), "work")], default=END
    )
    return Flow(
        name="loop",
        state=Loop,
        start="prep",
        nodes={"prep": lambda s: None, "work": node(work, retry=retry)},
        routes={"prep": "work", "work": again},
        error_field=None,
    )


def test_keys_name_thread_version_and_node_and_differ_per_visit(store: Store) -> None:
    keys: list[str] = []
    result = Runner(loop_flow(recorder(keys), laps=3), store=store).start("order-7")
    assert result.state.keys == keys == ["order-7/1/work", "order-7/2/work", "order-7/3/work"]


def test_every_attempt_of_a_step_has_the_same_key() -> None:
    keys: list[str] = []
    retry = RetryPolicy(max_attempts=3, initial_delay=0, jitter=False, retry_on=(ValueError,))
    Runner(loop_flow(recorder(keys, fail_first=2), laps=1, retry=retry)).start("t")
    assert keys == ["t/1/work"] * 3


def test_other_threads_get_other_keys() -> None:
    keys: list[str] = []
    runner = Runner(loop_flow(recorder(keys), laps=1))
    runner.start("a")
    runner.start("b")
    assert keys == ["a/1/work", "b/1/work"]


@pytest.mark.parametrize("snapshots", [False, True])
def test_a_step_rerun_after_a_crash_keeps_its_key(tmp_path: Path, snapshots: bool) -> None:
    keys: list[str] = []
    work = recorder(keys, crash_first=2)
    ratio: dict[str, Any] = {"min_snapshot_bytes": 1, "snapshot_ratio": 0} if snapshots else {}
    with JsonFileStore(tmp_path, fsync=False, **ratio) as store, pytest.raises(Crash):
        Runner(loop_flow(work), store=store).start("t")
    for _ in range(2):  # a new process each time: nothing cached
        with JsonFileStore(tmp_path, fsync=False, **ratio) as store:
            runner = Runner(loop_flow(work), store=store)
            try:
                result = runner.resume("t")
            except Crash:
                continue
    assert result.done
    assert keys == ["t/1/work", "t/1/work", "t/1/work", "t/2/work"]


def test_a_failed_step_resumed_keeps_its_key_and_a_patch_starts_a_new_one() -> None:
    keys: list[str] = []
    store = MemoryStore()
    flow = loop_flow(recorder(keys, fail_first=2), laps=1)
    runner = Runner(flow, store=store)
    assert runner.start("t").status == "failed"
    assert Runner(flow, store=store).resume("t").status == "failed"  # from the journal
    assert keys == ["t/1/work", "t/1/work"]
    runner.update_state("t", {"items": ["fixed"]}, reason="fixed the input")
    assert runner.resume("t").done
    assert keys[2:] == ["t/4/work"]  # the patch was version 3, the step starts from it


def test_map_calls_have_a_key_per_item_kept_across_a_crash(store: Store) -> None:
    keys: list[tuple[str, str]] = []
    crashed: list[str] = []

    def per_item(state: Loop, item: str, ctx: Context) -> dict[str, Any]:
        keys.append((item, ctx.step_key))
        if item == "b" and not crashed:
            crashed.append(item)
            raise Crash
        return {"keys": [ctx.step_key]}

    flow = Flow(
        name="fan",
        state=Loop,
        start="prep",
        nodes={
            "prep": lambda s: None,
            "fan": Map(per_item, over=lambda s: s.items, concurrency=1, key=str.upper),
        },
        routes={"prep": "fan", "fan": END},
    )
    with pytest.raises(Crash):
        Runner(flow, store=store).start("t")
    result = Runner(flow, store=store).resume("t")
    assert result.done
    assert keys == [
        ("a", "t/1/fan[0]"),
        ("b", "t/1/fan[1]"),
        ("b", "t/1/fan[1]"),  # re-run after the crash, item a already committed
        ("c", "t/1/fan[2]"),
    ]


def test_nodes_of_a_subflow_are_keyed_under_the_parents_step(tmp_path: Path) -> None:
    keys: list[str] = []
    crashed: list[bool] = []

    def inner(state: Loop, ctx: Context) -> dict[str, Any]:
        keys.append(ctx.step_key)
        if state.laps == 1 and not crashed:
            crashed.append(True)
            raise Crash
        return {"laps": state.laps + 1}

    child = Flow(
        name="child",
        state=Loop,
        start="one",
        nodes={"one": inner, "two": inner},
        routes={"one": "two", "two": END},
    )
    again = RouteTable("again", [Route(field("laps").is_in([0, 1, 2, 3]), "sub")], default=END)
    parent = Flow(
        name="parent",
        state=Loop,
        start="sub",
        nodes={"sub": Subflow(child, writes=["laps"])},
        routes={"sub": again},
    )
    with JsonFileStore(tmp_path, fsync=False) as store, pytest.raises(Crash):
        Runner(parent, store=store).start("t")
    with JsonFileStore(tmp_path, fsync=False) as store:
        assert Runner(parent, store=store).resume("t").done
    assert keys == [
        "t/0/sub/0/one",
        "t/0/sub/1/two",  # crashed here
        "t/0/sub/1/two",  # the same step, re-run
        "t/4/sub/0/one",  # the parent's next visit of `sub`: a new step
        "t/4/sub/1/two",
    ]


def test_a_context_made_by_hand_still_has_a_key_per_node() -> None:
    from datetime import UTC, datetime

    ctx: Context[None] = Context(
        thread_id="t", run_id="r", node="n", attempt=1, llm=None, clock=lambda: datetime.now(UTC)
    )
    assert ctx.step_key == "t/-/n"


@settings(max_examples=30, deadline=None)
@given(plan=st.lists(st.sampled_from(["ok", "fail", "crash"]), min_size=1, max_size=8))
def test_any_mix_of_failures_and_crashes_gives_one_key_per_visit(plan: list[str]) -> None:
    """However each visit's attempts end, a visit's attempts share one key and no two visits
    share one."""
    store = MemoryStore()
    seen: list[tuple[int, str]] = []
    outcomes = iter(plan + ["ok"] * 10)

    def work(state: Loop, ctx: Context) -> dict[str, Any]:
        seen.append((state.laps, ctx.step_key))
        outcome = next(outcomes)
        if outcome == "crash":
            raise Crash
        if outcome == "fail":
            raise ValueError("no")
        return {"laps": state.laps + 1}

    flow = loop_flow(work, laps=3)
    with contextlib.suppress(Crash):
        Runner(flow, store=store).start("t")
    for _ in range(len(plan) + 5):
        runner = Runner(flow, store=store)  # a new process: nothing cached
        if runner.get_state("t").done:
            break
        try:
            runner.resume("t")
        except Crash:
            continue
    assert Runner(flow, store=store).get_state("t").done
    keys_by_lap: dict[int, set[str]] = {}
    for lap, key in seen:
        keys_by_lap.setdefault(lap, set()).add(key)
    assert sorted(keys_by_lap) == [0, 1, 2]
    assert all(len(keys) == 1 for keys in keys_by_lap.values())
    assert len({next(iter(k)) for k in keys_by_lap.values()}) == 3


class LoopV2(Loop):
    region: str


def test_a_deploy_that_migrates_the_thread_keeps_the_crashed_steps_key() -> None:
    """Crashed inside `work`, then a new flow version with a migration is deployed: the
    resumed step is the same step, with the same key (the migration patch keeps it)."""
    from flowkit import Migration

    keys: list[str] = []
    store = MemoryStore()
    with contextlib.suppress(Crash):
        Runner(loop_flow(recorder(keys, crash_first=1), laps=1), store=store).start("t")

    def work(state: Any, ctx: Context) -> dict[str, Any]:
        keys.append(ctx.step_key)
        return {"laps": state.laps + 1}

    v2 = Flow(
        name="loop",
        state=LoopV2,
        start="prep",
        nodes={"prep": lambda s: None, "work": work},
        routes={"prep": "work", "work": END},
        error_field=None,
        version=2,
        migrations=[Migration(to=2, fields={"region": "eu"})],
    )
    assert Runner(v2, store=store).resume("t").done
    assert keys == ["t/1/work", "t/1/work"]
