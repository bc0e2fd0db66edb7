"""DBOS peer scenarios: durable sleep, and messages a workflow waits for.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_dbos.py`` (``test_sleep``,
``test_send_recv``, ``test_send_idempotency_key``, ``test_recv_timeout``,
``test_get_event_timeout``) and ``tests/test_scheduler.py`` (``test_automatic_backfill_on_restart``:
a due timer found by a restarted process). DBOS's ``recv`` is a flowkit gate, ``send`` a
``resume`` with the message, a receive timeout the gate's deadline, ``DBOS.sleep`` a node's
``ctx.sleep_until``. Every time is an injected clock: nothing here waits or measures time.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, Gate, Runner, append, node
from flowkit.errors import ConflictError, InvalidResumeInputError, NotWaitingError
from flowkit.stores import JsonFileStore

from . import _child


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Nap(BaseModel):
    slept: int = 0
    woke: bool = False


def _sleeper(runs: Counter[str]) -> Flow:
    @node(writes=["slept"])
    def nap(state: Nap, ctx: Context) -> None:
        runs["nap"] += 1
        ctx.sleep_until(timedelta(seconds=1.5), update={"slept": state.slept + 1})

    def wake(state: Nap) -> dict[str, Any]:
        runs["wake"] += 1
        return {"woke": True}

    return Flow(
        name="dbos_nap",
        state=Nap,
        start="nap",
        nodes={"nap": nap, "wake": wake},
        routes={"nap": "wake", "wake": END},
    )


def test_a_sleep_survives_a_restart_and_the_sleeping_step_never_runs_again(
    tmp_path: Path,
) -> None:
    runs: Counter[str] = Counter()
    clock = Clock()
    with JsonFileStore(tmp_path / "store") as store:
        asleep = Runner(_sleeper(runs), store=store, clock=clock).start("wf-nap")
    assert (asleep.status, asleep.node, asleep.gates) == ("waiting", "nap", ())
    assert asleep.due == clock.now + timedelta(seconds=1.5)

    clock.now += timedelta(seconds=1)
    with JsonFileStore(tmp_path / "store") as store:  # restarted before the time came
        runner = Runner(_sleeper(runs), store=store, clock=clock)
        assert runner.fire_due() == []
        with pytest.raises(NotWaitingError):
            runner.resume("wf-nap")  # a sleeper takes no input and is not woken early
    clock.now += timedelta(seconds=1)
    with JsonFileStore(tmp_path / "store") as store:  # restarted again, after the time
        runner = Runner(_sleeper(runs), store=store, clock=clock)
        (fired,) = runner.fire_due()
        assert (fired.thread_id, fired.kind, fired.target) == ("wf-nap", "wake", "wake")
        assert fired.result.done and fired.result.state == Nap(slept=1, woke=True)
        assert runner.fire_due() == []  # once
    assert runs == {"nap": 1, "wake": 1}


@pytest.mark.slow
def test_a_sleep_started_by_a_process_that_exited_is_fired_by_another(tmp_path: Path) -> None:
    root, log = tmp_path / "store", tmp_path / "runs.log"
    started = subprocess.run(
        [sys.executable, _child.__file__, "sleep", str(root), "wf-sleep", str(log)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    with JsonFileStore(root) as store:
        runner = Runner(_child.SLEEPER, store=store)
        due = runner.get_state("wf-sleep").due
        assert due is not None
        assert runner.fire_due(now=due - timedelta(seconds=1)) == []
        (fired,) = runner.fire_due(now=due)
        assert fired.result.done and fired.result.state.steps == ["before", "after"]
    ran = [line.split()[0] for line in log.read_text().splitlines()]
    assert ran == ["before"]  # `after` ran here, in the parent, whose nodes do not log


def test_two_restarted_processes_fire_one_due_sleep_once(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    clock = Clock()
    with JsonFileStore(tmp_path / "store") as store:
        Runner(_sleeper(runs), store=store, clock=clock).start("wf-nap")
    clock.now += timedelta(days=1)
    with JsonFileStore(tmp_path / "store") as a, JsonFileStore(tmp_path / "store") as b:
        one = Runner(_sleeper(runs), store=a, clock=clock)
        other = Runner(_sleeper(runs), store=b, clock=clock)
        assert len(one.fire_due()) + len(other.fire_due()) == 1
    assert runs == {"nap": 1, "wake": 1}


class Mailbox(BaseModel):
    messages: Annotated[list[str], append] = []
    timed_out: bool = False


class Message(BaseModel):
    text: str


def _receive(state: Mailbox, message: Message) -> dict[str, Any]:
    return {"messages": [message.text]}


def _timed_out(state: Mailbox) -> dict[str, Any]:
    return {"timed_out": True}


def _inbox() -> Flow:
    return Flow(
        name="dbos_inbox",
        state=Mailbox,
        start="first",
        nodes={"gave_up": _timed_out},
        gates={
            "first": Gate(
                Message, apply=_receive, deadline=timedelta(seconds=5), on_timeout="gave_up"
            ),
            "second": Gate(Message, apply=_receive),
        },
        routes={"first": "second", "second": END, "gave_up": END},
    )


def test_messages_sent_to_a_waiting_workflow_are_received_in_order(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_inbox(), store=store)
        waiting = runner.start("wf-recv")
        assert waiting.waiting and waiting.gates == ("first",)
        with pytest.raises(InvalidResumeInputError):
            runner.resume("wf-recv", {"txt": "typo"})  # a bad message is refused ...
        assert runner.get_state("wf-recv").gates == ("first",)  # ... and nothing moved
        runner.resume("wf-recv", {"text": "test1"}, gate="first")
    with JsonFileStore(tmp_path / "store") as store:  # the receiver restarted in between
        runner = Runner(_inbox(), store=store)
        done = runner.resume("wf-recv", {"text": "test2"}, gate="second")
    assert done.done and done.state.messages == ["test1", "test2"]


def test_a_message_sent_twice_with_the_same_version_is_received_once(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_inbox(), store=store)
        version = runner.start("wf-once").version
        runner.resume("wf-once", {"text": "hello"}, expected_version=version)
        with pytest.raises(ConflictError):  # the retried send is recognised, not applied
            runner.resume("wf-once", {"text": "hello"}, expected_version=version)
        state = runner.get_state("wf-once")
    assert state.state.messages == ["hello"] and state.gates == ("second",)


def test_a_receive_that_times_out_moves_on_and_a_late_message_is_refused(tmp_path: Path) -> None:
    clock = Clock()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_inbox(), store=store, clock=clock)
        assert runner.start("wf-late").due == clock.now + timedelta(seconds=5)
        clock.now += timedelta(seconds=5)
        (fired,) = runner.fire_due()
        assert (fired.kind, fired.node, fired.target) == ("deadline", "first", "gave_up")
        assert fired.result.done and fired.result.state.timed_out
        with pytest.raises(NotWaitingError):
            runner.resume("wf-late", {"text": "too late"})
        assert runner.get_state("wf-late").state.messages == []


def test_a_message_before_the_timeout_cancels_it(tmp_path: Path) -> None:
    clock = Clock()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_inbox(), store=store, clock=clock)
        runner.start("wf-early")
        clock.now += timedelta(seconds=1)
        assert runner.resume("wf-early", {"text": "in time"}).gates == ("second",)
        clock.now += timedelta(days=1)
        assert runner.fire_due() == []
        assert not runner.get_state("wf-early").state.timed_out
