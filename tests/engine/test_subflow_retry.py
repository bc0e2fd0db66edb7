"""``Subflow(retry=..., timeout=...)``: a failed child runs again afresh, as a new attempt whose
records stay in the parent's journal by path (``sub#2/work``); a crash or a gate in the middle
of an attempt goes on with that attempt; a child that runs past the node's timeout fails the
node with ``NodeTimeoutError`` (time waiting at a child gate does not count); a node that fails
in the end sends the events a failing plain node sends."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import _subflow_retry_worker as worker
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import flowkit.execution.subflows._attempts as attempts_module
import flowkit.execution.subflows._run as subflow_run
from flowkit import (
    END,
    Context,
    Flow,
    Migration,
    NodeError,
    RetryPolicy,
    Route,
    RouteTable,
    Runner,
    Subflow,
    append,
    field,
    node,
)
from flowkit.errors import FlowkitError, LLMError, LLMUnavailableError, SubflowError
from flowkit.execution._cursor import Sleep
from flowkit.stores import JsonFileStore, MemoryStore, Store, SubRecord
from flowkit.testing import ScriptedLLM, capture_events

WORKER = Path(__file__).with_name("_subflow_retry_worker.py")


class Job(BaseModel):
    topic: str = ""
    notes: Annotated[list[str], append] = []
    result: str = ""
    approved: bool = False
    error: NodeError | None = None


class JobV2(Job):
    desk: str


class Approve(BaseModel):
    approved: bool


class Flaky:
    """A child node that raises ``error()`` on its first ``failures`` calls."""

    def __init__(
        self, failures: int, error: Callable[[], Exception] = lambda: ConnectionError("down")
    ) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, state: Job) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error()
        return {"result": f"call {self.calls}", "notes": ["worked"]}


def child_flow(work: Any, *, gate: bool = False) -> Flow:
    """prep -> work -> END (with ``gate``: prep -> work -> approve -> END)."""
    return Flow(
        name="research",
        state=Job,
        start="prep",
        nodes={"prep": lambda s: {"notes": ["prep"]}, "work": work},
        gates={"approve": Approve} if gate else {},
        routes={"prep": "work", "work": "approve" if gate else END, "approve": END}
        if gate
        else {"prep": "work", "work": END},
        error_field=None,
    )


def parent_flow(
    child: Flow,
    *,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    routed: bool = False,
    state: type[BaseModel] = Job,
    **versioning: Any,
) -> Flow:
    """sub -> END; ``routed``: a failure of ``sub`` goes to ``recover`` through the table."""
    nodes: dict[str, Any] = {"sub": Subflow(child, writes=["result"], retry=retry, timeout=timeout)}
    routes: dict[str, Any] = {"sub": END}
    if routed:
        nodes["recover"] = lambda s: {"notes": ["recovered"]}
        routes = {
            "sub": RouteTable("after_sub", [Route(field("error"), "recover")], default=END),
            "recover": END,
        }
    return Flow(
        name="desk",
        state=state,
        start="sub",
        nodes=nodes,
        routes=routes,
        error_field="error" if routed else None,
        **versioning,
    )


RETRY = RetryPolicy(max_attempts=3, initial_delay=0, jitter=False)


def rows(runner: Runner[Any], thread_id: str) -> list[tuple[Any, ...]]:
    return [(c.kind, c.node, c.next, c.status, c.attempts) for c in runner.history(thread_id)]


# -- retry --------------------------------------------------------------------------------------


def test_a_child_failing_twice_then_succeeding_finishes_in_its_third_attempt(store: Store) -> None:
    work = Flaky(2)
    runner = Runner(parent_flow(child_flow(work), retry=RETRY), store=store)
    with capture_events(runner) as events:
        result = runner.start("t", {"topic": "tides"})
    assert result.done and result.state.result == "call 3" and work.calls == 3
    assert rows(runner, "t") == [
        ("start", None, "sub", "pending", 1),
        ("start", "sub", "sub/prep", "pending", 1),
        ("step", "sub/prep", "sub/work", "pending", 1),
        ("step", "sub/work", "sub/work", "pending", 1),  # failed; retried, so still pending
        ("start", "sub#2", "sub#2/prep", "pending", 1),
        ("step", "sub#2/prep", "sub#2/work", "pending", 1),
        ("step", "sub#2/work", "sub#2/work", "pending", 1),
        ("start", "sub#3", "sub#3/prep", "pending", 1),
        ("step", "sub#3/prep", "sub#3/work", "pending", 1),
        ("step", "sub#3/work", "sub#3/__end__", "pending", 1),
        ("step", "sub", END, "done", 3),  # the node's own step: three attempts
    ]
    errors = [c.error for c in runner.history("t") if c.error is not None]
    assert [(e.type, e.node, e.message, e.attempts) for e in errors] == [
        ("ConnectionError", "sub", "sub/work: down", 1),
        ("ConnectionError", "sub", "sub/work: down", 2),
    ]
    started = [e.attempt for e in events if e.kind == "node_started" and e.node == "sub"]
    finished = [e for e in events if e.kind == "node_finished" and e.node == "sub"]
    assert started == [1, 2, 3]
    assert [(e.attempts, e.error) for e in finished] == [(3, None)]
    # Every attempt starts afresh from input(parent): the failed attempts' notes are gone.
    assert [r.attempts for r in store.records("t") if isinstance(r, SubRecord)] == [1] * 3 + [
        2
    ] * 3 + [3] * 3


def test_the_async_api_retries_a_failing_async_child_alike() -> None:
    calls = {"n": 0}

    async def work(state: Job) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("down")
        return {"result": f"call {calls['n']}"}

    runner = Runner(parent_flow(child_flow(work), retry=RETRY), store=MemoryStore())
    result = asyncio.run(runner.astart("t"))
    assert result.done and result.state.result == "call 3"
    assert rows(runner, "t")[-1] == ("step", "sub", END, "done", 3)


@pytest.mark.parametrize(
    ("error", "retry_on", "attempts"),
    [
        # the default: what a plain node's policy retries (retryable errors, timeouts)
        (lambda: ConnectionError("down"), None, 3),
        (lambda: ValueError("bad"), None, 1),
        (lambda: LLMUnavailableError("busy"), None, 3),
        # classes: the child's error type by name, the class or a subclass of it
        (lambda: ValueError("bad"), (ValueError,), 3),
        (lambda: KeyError("k"), (LookupError,), 3),
        (lambda: LLMUnavailableError("busy"), (LLMError,), 3),
        (lambda: ConnectionError("down"), (ValueError,), 1),
        (lambda: ValueError("bad"), (FlowkitError,), 1),
        (lambda: ValueError("bad"), (SubflowError,), 3),  # every failure of the child
        # a function: asked with a SubflowError carrying the child's NodeError
        (lambda: ValueError("bad"), lambda exc: exc.error.type == "ValueError", 3),
        (lambda: ValueError("bad"), lambda exc: exc.error.message.endswith("worse"), 1),
    ],
)
def test_which_child_failures_are_retried_and_the_last_one_is_routed(
    error: Callable[[], Exception], retry_on: Any, attempts: int
) -> None:
    work = Flaky(10, error)
    retry = RetryPolicy(max_attempts=3, initial_delay=0, jitter=False, retry_on=retry_on)
    result = Runner(parent_flow(child_flow(work), retry=retry, routed=True)).start("t")
    assert result.done and result.state.notes == ["recovered"]  # routed by the parent's table
    assert result.state.error is not None
    assert (result.state.error.type, result.state.error.attempts) == (
        type(error()).__name__,
        attempts,
    )
    assert result.state.error.node == "sub" and work.calls == attempts


def test_a_failed_final_state_is_retried_only_when_the_policy_says_so() -> None:
    outcomes = iter(["rejected", "rejected", "accepted"])
    child = Flow(
        name="vote",
        state=Job,
        start="count",
        nodes={"count": lambda s: {"result": next(outcomes)}},
        finals={"no": "failed"},
        routes={
            "count": RouteTable(
                "verdict", [Route(field("result").eq("rejected"), "no")], default=END
            )
        },
        error_field=None,
    )
    by_default = Runner(parent_flow(child, retry=RETRY, routed=True)).start("t")
    assert by_default.state.error is not None and by_default.state.error.type == "SubflowFailed"
    assert by_default.state.error.attempts == 1  # not retryable: a final state is no accident
    anything = RetryPolicy(max_attempts=3, initial_delay=0, retry_on=(SubflowError,))
    retried = Runner(parent_flow(child, retry=anything, routed=True)).start("t")
    assert retried.done and retried.state.error is None and retried.state.result == "accepted"


def test_retries_exhausted_without_a_route_fail_the_thread_and_resume_goes_on_inside(
    store: Store,
) -> None:
    work = Flaky(3)
    flow = parent_flow(child_flow(work), retry=RETRY)
    runner = Runner(flow, store=store)
    with capture_events(runner) as events:
        failed = runner.start("t")
    assert (failed.status, failed.node) == ("failed", "sub")
    assert failed.error is not None and (failed.error.type, failed.error.attempts) == (
        "ConnectionError",
        3,
    )
    assert [e.kind for e in events if e.kind == "failed"] == ["failed"]  # told once, at the end
    assert Runner(flow, store=store).get_state("t").error == failed.error
    # Resuming goes on with the last attempt where it failed: no new attempt, no new budget.
    done = Runner(flow, store=store).resume("t")
    assert done.done and done.state.result == "call 4" and work.calls == 4
    assert rows(runner, "t")[-2:] == [
        ("step", "sub#3/work", "sub#3/__end__", "pending", 1),
        ("step", "sub", END, "done", 3),
    ]


# -- events of a failing subflow node -------------------------------------------------------------


def _seen(runner: Runner[Any], how: str) -> list[Any]:
    """Every event of one run of thread ``t``, as a subscriber, a stream or an async stream sees."""
    if how == "subscriber":
        with capture_events(runner) as events:
            runner.start("t")
        return list(events)
    if how == "stream":
        return list(runner.stream("t", mode="events"))

    async def collect() -> list[Any]:
        return [event async for event in runner.astream("t", mode="events")]

    return asyncio.run(collect())


def _own(events: list[Any]) -> list[tuple[Any, ...]]:
    """The events of the top flow's own nodes (not a child's, named by path): kind, attempt(s),
    error type."""
    return [
        (
            e.kind,
            getattr(e, "attempt", None) or getattr(e, "attempts", None),
            None if getattr(e, "error", None) is None else e.error.type,
        )
        for e in events
        if "/" not in getattr(e, "node", "")
    ]


@pytest.mark.parametrize("how", ["subscriber", "stream", "astream"])
def test_a_subflow_failing_with_nowhere_to_route_tells_what_a_failing_node_tells(how: str) -> None:
    retry = RetryPolicy(max_attempts=2, initial_delay=0, jitter=False)
    plain = Flow(
        name="desk",
        state=Job,
        start="sub",
        nodes={"sub": node(Flaky(10), retry=retry)},
        routes={"sub": END},
        error_field=None,
    )
    ordinary = _own(_seen(Runner(plain, store=MemoryStore()), how))
    runner = Runner(parent_flow(child_flow(Flaky(10)), retry=retry), store=MemoryStore())
    events = _seen(runner, how)
    assert ordinary == [
        ("node_started", 1, None),
        ("node_started", 2, None),
        ("node_finished", 2, "ConnectionError"),
        ("failed", None, "ConnectionError"),
    ]
    assert _own(events) == ordinary
    # The node's own, right after its child's last step.
    assert [(e.kind, e.node) for e in events[-3:]] == [
        ("node_finished", "sub/work"),
        ("node_finished", "sub"),
        ("failed", "sub"),
    ]
    finished, failed = events[-2:]
    assert finished.error == failed.error == runner.get_state("t").error


def test_nested_subflows_that_fail_each_finish_inside_out_before_the_one_failed() -> None:
    runner = Runner(parent_flow(parent_flow(child_flow(Flaky(10)))))
    with capture_events(runner) as events:
        runner.start("t")
    told = [e for e in events if e.kind in ("node_finished", "failed")]
    tail = [(e.kind, e.node, e.error and e.error.type) for e in told][-4:]
    assert tail == [
        ("node_finished", "sub/sub/work", "ConnectionError"),
        ("node_finished", "sub/sub", "ConnectionError"),
        ("node_finished", "sub", "ConnectionError"),
        ("failed", "sub", "ConnectionError"),
    ]


def test_a_child_ending_at_a_failed_final_state_finishes_its_node_with_the_error() -> None:
    child = Flow(
        name="vote",
        state=Job,
        start="count",
        nodes={"count": lambda s: {"result": "rejected"}},
        finals={"no": "failed"},
        routes={"count": "no"},
        error_field=None,
    )
    runner = Runner(parent_flow(child))
    with capture_events(runner) as events:
        runner.start("t")
    finished = [e for e in events if e.kind == "node_finished" and e.node == "sub"]
    assert [(e.attempts, e.error.type if e.error else None) for e in finished] == [
        (1, "SubflowFailed")
    ]
    assert [e.kind for e in events][-2:] == ["node_finished", "failed"]


def test_update_state_goto_starts_the_subflow_over_with_all_its_attempts(store: Store) -> None:
    keys: list[str] = []

    def work(state: Job, ctx: Context) -> dict[str, Any]:
        keys.append(ctx.step_key)
        if len(keys) <= 3:
            raise ConnectionError("down")
        return {"result": f"call {len(keys)}"}

    runner = Runner(parent_flow(child_flow(work), retry=RETRY), store=store)
    assert runner.start("t").status == "failed"
    runner.update_state("t", goto="sub", reason="the service is back")
    done = runner.resume("t")
    assert done.done and done.state.result == "call 4"
    assert rows(runner, "t")[-5:] == [
        ("patch", None, "sub", "pending", 1),
        ("start", "sub", "sub/prep", "pending", 1),  # attempt 1 again
        ("step", "sub/prep", "sub/work", "pending", 1),
        ("step", "sub/work", "sub/__end__", "pending", 1),
        ("step", "sub", END, "done", 1),
    ]
    assert keys == ["t/0/sub/1/work"] * 3 + ["t/10/sub/1/work"]  # a new step: a new key


def test_the_child_starts_from_input_on_every_attempt_and_keeps_its_step_keys() -> None:
    keys: list[str] = []
    seen: list[list[str]] = []

    def work(state: Job, ctx: Context) -> dict[str, Any]:
        keys.append(ctx.step_key)
        seen.append(list(state.notes))
        if len(keys) < 3:
            raise ConnectionError("down")
        return {"result": "ok"}

    flow = Flow(
        name="desk",
        state=Job,
        start="first",
        nodes={
            "first": lambda s: {"notes": ["parent"]},
            "sub": Subflow(
                child_flow(work), input=lambda p: {"notes": p.notes}, writes=["result"], retry=RETRY
            ),
        },
        routes={"first": "sub", "sub": END},
        error_field=None,
    )
    assert Runner(flow).start("t").done
    assert seen == [["parent", "prep"]] * 3  # afresh each time, from input(parent)
    # Like every attempt of a plain node, every attempt of the subflow has the same keys.
    assert keys == ["t/1/sub/1/work"] * 3


def test_input_and_output_functions_that_raise_are_not_retried() -> None:
    calls: list[str] = []

    def bad_output(parent: Job, child: Job) -> dict[str, Any]:
        calls.append("output")
        raise KeyError("result")

    flow = Flow(
        name="desk",
        state=Job,
        start="sub",
        nodes={"sub": Subflow(child_flow(Flaky(1)), output=bad_output, retry=RETRY)},
        routes={"sub": END},
        error_field=None,
    )
    result = Runner(flow).start("t")
    assert result.status == "failed" and result.error is not None
    assert (result.error.type, result.error.attempts, calls) == ("KeyError", 2, ["output"])


# -- gates and crashes in the middle of an attempt ------------------------------------------------


def test_a_gate_in_the_second_attempt_pauses_the_parent_and_resume_continues_it(
    store: Store,
) -> None:
    work = Flaky(1)
    flow = parent_flow(child_flow(work, gate=True), retry=RETRY)
    paused = Runner(flow, store=store).start("t")
    assert (paused.status, paused.node, paused.gates) == ("waiting", "sub", ("sub/approve",))
    runner = Runner(flow, store=store)  # another process, later
    assert runner.get_state("t").gates == ("sub/approve",)
    done = runner.resume("t", {"approved": True}, gate="sub/approve")
    assert done.done and done.state.result == "call 2" and work.calls == 2
    assert rows(runner, "t")[-3:] == [
        ("step", "sub#2/work", "sub#2/approve", "waiting", 1),
        ("input", "sub#2/approve", "sub#2/__end__", "pending", 1),
        ("step", "sub", END, "done", 2),
    ]


def test_a_failure_after_the_gate_asks_again_in_the_next_attempt() -> None:
    answers = iter([ConnectionError("lost the answer"), None])

    def after(state: Job) -> dict[str, Any]:
        raised = next(answers)
        if raised is not None:
            raise raised
        return {"result": "filed"}

    child = Flow(
        name="form",
        state=Job,
        start="ask",
        nodes={"file": after},
        gates={"ask": Approve},
        routes={"ask": "file", "file": END},
        error_field=None,
    )
    runner = Runner(parent_flow(child, retry=RETRY))
    assert runner.start("t").gates == ("sub/ask",)
    again = runner.resume("t", {"approved": True})
    assert (again.status, again.gates) == ("waiting", ("sub/ask",))  # attempt 2, at its gate
    done = runner.resume("t", {"approved": True})
    assert done.done and done.state.result == "filed"


def test_a_sigkilled_second_attempt_resumes_without_asking_the_llm_again(tmp_path: Path) -> None:
    root, calls = tmp_path / "store", tmp_path / "calls.log"
    with subprocess.Popen(
        [sys.executable, str(WORKER), str(root), "t", str(calls)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "inside\n", "the worker never reached attempt 2's slow"
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    asked_before = calls.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in asked_before] == ["explain tides"] * 2  # 1 per try

    llm = ScriptedLLM([("explain", "fresh answer")])
    flow = worker.flow(calls.with_suffix(".failed-once"), hang=False)
    with JsonFileStore(root) as store:
        runner = Runner(flow, store=store, llm=llm)
        stuck = runner.get_state("t")
        assert (stuck.status, stuck.node) == ("pending", "research")
        done = runner.resume("t")
        history = rows(runner, "t")
        journaled = runner.llm_calls("t")
    assert done.done and done.state.checked and done.state.answer == "about tides"
    assert llm.calls == [] and calls.read_text().splitlines() == asked_before  # none again
    assert len(journaled) == 2  # attempt 1's and attempt 2's, each made once
    assert [h[1] for h in history[-3:]] == ["research#2/check", "research#2/slow", "research"]
    assert history[-1][-1] == 2 and not any("#3" in str(h[1]) for h in history)


def test_a_crash_between_a_failed_attempt_and_the_next_starts_the_next(store: Store) -> None:
    """The failed attempt is committed with the parent still pending: a run that stops right
    there goes on with the next attempt, as the interrupted one would have."""

    class Stop(BaseException):
        pass

    work = Flaky(1)
    flow = parent_flow(child_flow(work), retry=RETRY)
    sleeps = {"n": 0}
    original = subflow_run.back_off

    def dying_back_off(*args: Any) -> Any:
        sleeps["n"] += 1
        if sleeps["n"] == 1:
            raise Stop
        return original(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subflow_run, "back_off", dying_back_off)
        with pytest.raises(Stop):
            Runner(flow, store=store).start("t")
        assert Runner(flow, store=store).get_state("t").status == "pending"
        done = Runner(flow, store=store).resume("t")
    assert done.done and work.calls == 2
    assert rows(Runner(flow, store=store), "t")[-1] == ("step", "sub", END, "done", 2)


# -- journal: replay, snapshots, forks, migrations ------------------------------------------------


@pytest.mark.parametrize("snapshots", [False, True])
def test_a_new_process_replays_every_attempt_from_disk(tmp_path: Path, snapshots: bool) -> None:
    ratio: dict[str, Any] = {"min_snapshot_bytes": 1, "snapshot_ratio": 0} if snapshots else {}
    flow = parent_flow(child_flow(Flaky(1), gate=True), retry=RETRY)
    with JsonFileStore(tmp_path, fsync=False, **ratio) as store:
        live = Runner(flow, store=store)
        paused = live.start("t")
        live_rows = rows(live, "t")
    with JsonFileStore(tmp_path, fsync=False, **ratio) as store:
        again = Runner(flow, store=store)
        assert again.get_state("t") == replace(paused, run_id=None)
        assert rows(again, "t") == live_rows
        if snapshots:
            snap = store.load("t").snapshot
            assert snap is not None and snap.sub is not None and snap.sub["attempts"] == 2
        assert again.fork("t", "f").gates == ("sub/approve",)
    with JsonFileStore(tmp_path, fsync=False, **ratio) as store:  # a third process
        third = Runner(flow, store=store)
        for thread_id in ("t", "f"):  # from the journal (or snapshot), and from the fork's start
            done = third.resume(thread_id, {"approved": True})
            assert done.done and rows(third, thread_id)[-1] == ("step", "sub", END, "done", 2)


def test_a_thread_migrated_in_the_middle_of_an_attempt_keeps_its_number() -> None:
    store = MemoryStore()
    v1 = parent_flow(child_flow(Flaky(1), gate=True), retry=RETRY)
    assert Runner(v1, store=store).start("t").gates == ("sub/approve",)
    v2 = parent_flow(
        child_flow(Flaky(0), gate=True),
        retry=RETRY,
        state=JobV2,
        version=2,
        migrations=[Migration(to=2, fields={"desk": "science"})],
    )
    runner = Runner(v2, store=store)
    done = runner.resume("t", {"approved": True})
    assert done.done and done.state.desk == "science"
    assert rows(runner, "t")[-2:] == [
        ("input", "sub#2/approve", "sub#2/__end__", "pending", 1),
        ("step", "sub", END, "done", 2),
    ]


@settings(max_examples=40, deadline=None)
@given(
    plan=st.lists(st.booleans(), min_size=1, max_size=5),
    max_attempts=st.integers(min_value=1, max_value=4),
)
def test_attempts_are_the_first_success_within_the_budget(
    plan: list[bool], max_attempts: int
) -> None:
    """Whatever each attempt does, the node takes attempts up to its first success or its
    budget, history has one child start per attempt, and a fresh replay agrees."""
    outcomes = iter([*plan, True, True, True, True, True])

    def work(state: Job) -> dict[str, Any]:
        if not next(outcomes):
            raise TimeoutError("slow service")
        return {"result": "ok"}

    retry = RetryPolicy(max_attempts=max_attempts, initial_delay=0, jitter=False)
    store = MemoryStore()
    flow = parent_flow(child_flow(work), retry=retry)
    result = Runner(flow, store=store).start("t")
    first_success = [*plan, True].index(True) + 1
    expected = min(first_success, max_attempts)
    assert result.done == (first_success <= max_attempts)
    starts = [c.node for c in Runner(flow, store=store).history("t") if c.kind == "start"][1:]
    assert starts == ["sub"] + [f"sub#{n}" for n in range(2, expected + 1)]
    if result.done:
        assert rows(Runner(flow, store=store), "t")[-1] == ("step", "sub", END, "done", expected)
    else:
        assert result.error is not None and result.error.attempts == expected
    assert Runner(flow, store=store).get_state("t").version == result.version


# -- timeout --------------------------------------------------------------------------------------


def patient(state: Job, ctx: Context) -> dict[str, Any]:
    """Sleeps for up to a minute, waking up when its call is given up."""
    ctx.cancel_event.wait(60)
    return {"result": "too late" if ctx.cancelled else "in time"}


async def patient_async(state: Job) -> dict[str, Any]:
    await asyncio.sleep(60)
    return {"result": "in time"}


@pytest.mark.parametrize("slow", [patient, patient_async], ids=["sync", "async"])
def test_a_slow_child_times_out_and_the_timeout_is_routed(store: Store, slow: Any) -> None:
    flow = parent_flow(child_flow(slow), timeout=0.05, routed=True)
    runner = Runner(flow, store=store)
    result = runner.start("t")
    assert result.done and result.state.notes == ["recovered"] and result.state.result == ""
    assert result.state.error is not None
    assert (result.state.error.type, result.state.error.node) == ("NodeTimeoutError", "sub")
    assert result.state.error.message.startswith("sub/work: Node `sub` did not finish within")
    kinds = [(c.kind, c.node, c.next) for c in runner.history("t")]
    assert kinds[-3:] == [
        ("step", "sub/work", "sub/work"),  # the child failed where it stood
        ("step", "sub", "recover"),
        ("step", "recover", END),
    ]


def test_a_slow_child_times_out_under_the_async_api_too() -> None:
    async def scenario() -> Any:
        return await Runner(parent_flow(child_flow(patient_async), timeout=0.05)).astart("t")

    result = asyncio.run(scenario())
    assert result.status == "failed" and result.error is not None
    assert result.error.type == "NodeTimeoutError" and result.error.retryable


def test_a_policy_that_retries_timeouts_runs_the_timed_out_child_again() -> None:
    calls = {"n": 0}

    def slow_once(state: Job, ctx: Context) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            ctx.cancel_event.wait(60)
        return {"result": f"call {calls['n']}"}

    runner = Runner(parent_flow(child_flow(slow_once), retry=RETRY, timeout=0.2))
    result = runner.start("t")
    assert result.done and result.state.result == "call 2"
    no_timeouts = RetryPolicy(max_attempts=3, initial_delay=0, retry_on=(ValueError,))
    calls["n"] = 0
    failed = Runner(parent_flow(child_flow(slow_once), retry=no_timeouts, timeout=0.2)).start("t")
    assert failed.status == "failed" and failed.error is not None
    assert (failed.error.type, failed.error.attempts, calls["n"]) == ("NodeTimeoutError", 1, 1)


class FakeClock:
    """The subflow timeout's clock, moved by hand: no test waits for real time to pass."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    shim = SimpleNamespace(monotonic=fake.monotonic, perf_counter=time.perf_counter, time=time.time)
    monkeypatch.setattr(attempts_module, "time", shim)
    yield fake


def test_a_child_past_its_deadline_calls_no_further_node(clock: FakeClock) -> None:
    ran: list[str] = []

    def long_step(state: Job) -> dict[str, Any]:
        ran.append("long")
        clock.now += 100  # a step that took longer than the whole timeout
        return {"notes": ["long done"]}

    def next_step(state: Job) -> dict[str, Any]:
        ran.append("next")
        return {}

    child = Flow(
        name="steps",
        state=Job,
        start="long",
        nodes={"long": long_step, "next": next_step},
        routes={"long": "next", "next": END},
        error_field=None,
    )
    runner = Runner(parent_flow(child, timeout=30), store=MemoryStore())
    failed = runner.start("t")
    assert failed.status == "failed" and ran == ["long"]
    assert failed.error is not None and failed.error.type == "NodeTimeoutError"
    stopped = runner.history("t")[-1]
    assert (stopped.node, stopped.status) == ("sub/next", "failed")
    assert stopped.child_state is not None and stopped.child_state.notes == ["long done"]  # kept
    assert runner.resume("t").done and ran == ["long", "next"]  # goes on where it stopped


def test_a_child_node_retrying_past_the_deadline_stops_retrying(clock: FakeClock) -> None:
    calls = {"n": 0}

    def flaky(state: Job) -> dict[str, Any]:
        calls["n"] += 1
        clock.now += 20
        raise ValueError("not yet")

    retry = RetryPolicy(max_attempts=5, initial_delay=0, jitter=False, retry_on=(ValueError,))
    child = child_flow(node(flaky, retry=retry))
    result = Runner(parent_flow(child, timeout=30, routed=True)).start("t")
    assert result.state.error is not None and result.state.error.type == "NodeTimeoutError"
    assert calls["n"] == 2  # 20 s, then 20 s more: past 30 s, the third call is not made


def test_a_back_off_ends_at_the_deadline() -> None:
    assert attempts_module._within(Sleep(60.0), 10.0, Any, "run") == Sleep(10.0)
    assert attempts_module._within(Sleep(5.0), 10.0, Any, "run") == Sleep(5.0)


def test_time_waiting_at_a_child_gate_does_not_count(clock: FakeClock) -> None:
    child = Flow(
        name="asked",
        state=Job,
        start="prep",
        nodes={"prep": lambda s: {}, "work": Flaky(0)},
        gates={"approve": Approve},
        routes={"prep": "approve", "approve": "work", "work": END},
        error_field=None,
    )
    runner = Runner(parent_flow(child, timeout=30))
    assert runner.start("t").gates == ("sub/approve",)
    clock.now += 3600  # an hour until someone answers
    done = runner.resume("t", {"approved": True})  # the child runs `work` in a new run
    assert done.done and done.state.result == "call 1"


def test_a_childs_own_shorter_timeout_stays_its_own_failure() -> None:
    quick = node(patient, timeout=0.05)
    child = Flow(
        name="own",
        state=Job,
        start="prep",
        nodes={"prep": lambda s: {}, "work": quick, "fallback": lambda s: {"result": "fallback"}},
        routes={
            "prep": "work",
            "work": RouteTable("w", [Route(field("error"), "fallback")], default=END),
            "fallback": END,
        },
    )
    result = Runner(parent_flow(child, timeout=60)).start("t")
    assert result.done and result.state.result == "fallback"  # the child routed it itself


def test_a_next_attempt_never_runs_a_node_the_timed_out_one_left_running() -> None:
    """A sync child node stopped at the deadline runs on in its worker thread (Python cannot
    stop a thread); as for a plain node's timeout, its next call waits for it, and fails with
    ``NodeStillRunningError`` rather than run the node twice at once."""
    running, release = threading.Event(), threading.Event()
    overlaps: list[bool] = []

    def stubborn(state: Job) -> dict[str, Any]:  # never looks at ctx.cancelled
        overlaps.append(running.is_set())
        running.set()
        try:
            release.wait(60)  # runs on until the test has its answer
            return {}
        finally:
            running.clear()

    retry = RetryPolicy(max_attempts=2, initial_delay=0, jitter=False)
    # Time enough for the second attempt to reach `work` before the subflow's deadline (with
    # 0.05 s, a loaded machine failed it there, with a plain NodeTimeoutError).
    flow = parent_flow(child_flow(stubborn), retry=retry, timeout=0.5)
    try:
        result = Runner(flow).start("stubborn-thread")  # an id no other test's call waits on
    finally:
        release.set()
    assert result.status == "failed" and result.error is not None
    assert (result.error.type, result.error.attempts) == ("NodeStillRunningError", 2)
    assert overlaps == [False]


# -- the node's definition ------------------------------------------------------------------------


def test_retry_and_timeout_show_in_the_flows_data_like_a_plain_nodes() -> None:
    data = parent_flow(child_flow(Flaky(0)), retry=RETRY, timeout=90).to_data()
    assert (data["nodes"]["sub"]["retry"], data["nodes"]["sub"]["timeout"]) == (3, 90)
    plain = parent_flow(child_flow(Flaky(0))).to_data()["nodes"]["sub"]
    assert (plain["retry"], plain["timeout"], plain["kind"]) == (1, None, "subflow")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"retry": 3}, TypeError, "retry= takes a RetryPolicy"),
        ({"retry": {"max_attempts": 3}}, TypeError, "retry= takes a RetryPolicy"),
        ({"timeout": 0}, ValueError, "timeout= is positive seconds"),
        ({"timeout": -1.5}, ValueError, "timeout= is positive seconds"),
        ({"timeout": True}, ValueError, "timeout= is positive seconds"),
        ({"timeout": "30"}, ValueError, "timeout= is positive seconds"),
    ],
)
def test_a_bad_retry_or_timeout_is_refused_when_the_node_is_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Subflow(child_flow(Flaky(0)), **options)
