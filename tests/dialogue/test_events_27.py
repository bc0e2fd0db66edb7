"""Issue #27: reminders and external events on the engine's timers. A reminder bot says "I
will remind you in 5 seconds" and the reminder comes when due (Dialogue.fire_due, the
server's timer loop, `flowkit chat`); an external event is handled like a user turn. Every
test runs on an injected clock: nothing sleeps."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.diagram import to_mermaid
from flowkit.dialogue import Dialogue
from flowkit.dialogue.actions import ActionCall, ActionResult, Schedule
from flowkit.dialogue.conversations import format_results, run_conversations
from flowkit.dialogue.delivery import Deliverer, parse_event
from flowkit.dialogue.events import pending
from flowkit.errors import DomainError, InvalidResumeInputError, RunError
from flowkit.server._timers import TimerLoop

from .test_peers import HANDLERS

ROOT = Path(__file__).resolve().parents[2]
REMINDERBOT = ROOT / "tests" / "dialogue" / "peers" / "reminderbot" / "domain.yaml"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def bot(clock: Clock) -> Dialogue:
    return Dialogue(REMINDERBOT, clock=clock, actions=HANDLERS["reminderbot"])


def test_a_reminder_comes_when_due_once(bot: Dialogue, clock: Clock) -> None:
    assert bot.send("u", "remind me to call John").text == "I will remind you in 5 seconds."
    assert bot.runner.get_state("u").due == clock.now + timedelta(seconds=5)
    clock.now += timedelta(seconds=4)
    assert bot.fire_due() == []  # not yet
    clock.now += timedelta(seconds=1)
    (reply,) = bot.fire_due()
    assert (reply.thread_id, reply.text) == ("u", "Remember to call John!")
    assert reply.intent_type == "EXTERNAL_reminder" and not reply.done
    assert bot.fire_due() == [] and bot.runner.get_state("u").due is None  # once
    # The turn ran from SG to IR on the timer (no user message), then as any turn.
    kinds = [(c.kind, c.node, c.next) for c in bot.runner.history("u")]
    assert ("timer", "SG", "IR") in kinds
    last = bot.state("u").messages[-1]
    assert last.role == "assistant" and last.event is not None
    assert last.event.intent == "EXTERNAL_reminder"
    # The conversation goes on as before.
    assert bot.send("u", "hi").text == "What can I do for you?"


def test_a_message_before_the_due_time_keeps_the_reminder(bot: Dialogue, clock: Clock) -> None:
    bot.send("u", "remind me to call Susan")
    clock.now += timedelta(seconds=2)
    assert bot.send("u", "hello").text == "What can I do for you?"
    assert bot.runner.get_state("u").due == datetime(2025, 3, 10, 9, 0, 5, tzinfo=UTC)
    clock.now += timedelta(seconds=10)  # overdue: fired at the next round
    assert [r.text for r in bot.fire_due()] == ["Remember to call Susan!"]


def test_two_reminders_come_in_order_and_forgetting_cancels_them(
    bot: Dialogue, clock: Clock
) -> None:
    bot.send("u", "remind me to call Alan")
    clock.now += timedelta(seconds=1)
    bot.send("u", "remind me to call Vova")
    clock.now += timedelta(seconds=10)
    # One round fires the earliest; the next round the one after it.
    assert [r.text for r in bot.fire_due()] == ["Remember to call Alan!"]
    assert [r.text for r in bot.fire_due()] == ["Remember to call Vova!"]
    bot.send("u", "remind me to call Tanja")
    assert bot.send("u", "cancel all reminders please").text == (
        "Okay, I'll cancel all your reminders."
    )
    assert pending(bot.state("u")) == [] and bot.runner.get_state("u").due is None
    clock.now += timedelta(minutes=5)
    assert bot.fire_due() == []


def test_an_external_event_is_handled_like_a_user_turn(bot: Dialogue) -> None:
    bot.send("u", "hi")
    reply = bot.trigger("u", "EXTERNAL_dry_plant", {"plant": "Orchid"})
    assert reply.text == "Your Orchid needs some water!"
    assert reply.turn_id == 2 and reply.intent_type == "EXTERNAL_dry_plant"
    assert bot.transcript("u")[-2:] == [
        ("user", "/EXTERNAL_dry_plant"),
        ("assistant", "Your Orchid needs some water!"),
    ]
    # A small-talk intent works too, and an event's intent is never recognised in text.
    assert bot.trigger("u", "greet").text == "What can I do for you?"
    assert bot.send("u", "EXTERNAL_reminder").intent_type == "OOS"
    with pytest.raises(DomainError, match="no intent `nope`"):
        bot.trigger("u", "nope")


def test_the_gate_refuses_a_malformed_event(bot: Dialogue) -> None:
    bot.open("u")
    bad_inputs: list[dict[str, Any]] = [
        {},
        {"text": "hi", "intent": "greet"},
        {"text": "hi", "entities": {"a": 1}},
        {"intent": "nope"},  # not an intent of the domain
    ]
    for bad in bad_inputs:
        with pytest.raises(InvalidResumeInputError):
            bot.runner.resume("u", bad, gate="SG")
    assert bot.state("u").turn_id == 0


def test_an_action_scheduling_an_unknown_intent_fails_the_goal(clock: Clock) -> None:
    def bad(call: ActionCall) -> ActionResult:
        return ActionResult(schedule=[Schedule(intent="nope", after=timedelta(seconds=1))])

    handlers = {**HANDLERS["reminderbot"], "action_set_reminder": bad}
    bot = Dialogue(REMINDERBOT, clock=clock, actions=handlers)
    reply = bot.send("u", "remind me to call John")
    assert reply.state.goal_state.status == "failed"
    assert reply.state.error is not None and reply.state.error.type == "ValueError"
    assert bot.runner.get_state("u").due is None
    with pytest.raises(ValueError, match=r"either after= .* or at="):
        Schedule(intent="x")


def test_a_reminder_at_a_given_time(clock: Clock) -> None:
    at = clock.now + timedelta(hours=1)

    def later(call: ActionCall) -> ActionResult:
        return ActionResult(schedule=[Schedule(intent="EXTERNAL_reminder", at=at)])

    handlers = {**HANDLERS["reminderbot"], "action_set_reminder": later}
    bot = Dialogue(REMINDERBOT, clock=clock, actions=handlers)
    bot.send("u", "remind me to call John")
    assert bot.runner.get_state("u").due == at
    clock.now = at
    assert [r.text for r in bot.fire_due()] == ["Remember to call someone!"]


def test_the_server_timer_loop_delivers_reminders(bot: Dialogue, clock: Clock) -> None:
    bot.send("u", "remind me to call Daksh")
    loop = TimerLoop([bot.runner], poll_s=60)
    assert loop.fire() == 0
    clock.now += timedelta(seconds=5)
    assert loop.fire() == 1
    assert bot.state("u").final_answer == "Remember to call Daksh!"


def test_chat_delivers_due_reminders_between_turns(bot: Dialogue, clock: Clock) -> None:
    said: list[str] = []
    bot.send("u", "remind me to call Juste")
    bot.send("other", "remind me to call Santa")
    deliverer = Deliverer(bot, "u", said.append, poll_s=0.01)
    assert deliverer.tick() == 0
    clock.now += timedelta(seconds=5)
    with deliverer:  # the thread fires it within a few polls
        for _ in range(200):
            if said:
                break
            deliverer._stop.wait(0.005)
    assert said == ["Remember to call Juste!"]  # the other conversation's is not said here
    assert bot.state("other").final_answer == "Remember to call Santa!"  # but it was fired


def test_parse_event() -> None:
    assert parse_event("hello") is None
    assert parse_event("/event greet") == ("greet", {})
    assert parse_event("/event EXTERNAL_dry_plant plant=Orchid") == (
        "EXTERNAL_dry_plant",
        {"plant": "Orchid"},
    )
    for bad in ("/event", "/event x plant"):
        with pytest.raises(ValueError):
            parse_event(bad)


def test_parse_event_takes_quoted_values_with_spaces() -> None:
    line = "/event report_fault faulty_machine=\"robot 2\" note='gripper stuck'"
    assert parse_event(line) == (
        "report_fault",
        {"faulty_machine": "robot 2", "note": "gripper stuck"},
    )
    assert parse_event("/event x name=O'Brien") == ("x", {"name": "O'Brien"})  # a lone quote


def test_the_chat_command_takes_an_external_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.cli import main

    monkeypatch.syspath_prepend(str(ROOT))  # the domain's handlers: tests.dialogue.peers...
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    typed = "hi\n/event EXTERNAL_dry_plant plant=Orchid\n/event nope\n/event\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(typed.encode())))
    code = main(["chat", str(REMINDERBOT), "--store", str(tmp_path), "--thread", "c"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [
        "bot> What can I do for you?",
        "bot> Your Orchid needs some water!",
    ]
    errors = [line for line in captured.err.splitlines() if line.startswith("flowkit: error")]
    assert len(errors) == 2 and "no intent `nope`" in errors[0] and "usage" in errors[1]


def test_conversation_files_wait_for_reminders() -> None:
    tests: dict[str, Any] = {
        "conversations": [
            {
                "name": "reminded",
                "turns": [
                    {"user": "remind me to call John", "response": "action_set_reminder"},
                    {"wait": 5, "response": "action_react_to_reminder", "says": "John"},
                    {"event": "EXTERNAL_dry_plant", "entities": {"plant": "Fern"}},
                ],
            },
            {"name": "too early", "turns": [{"user": "hi"}, {"wait": 1}]},
        ]
    }
    results = run_conversations(REMINDERBOT, tests, actions=HANDLERS["reminderbot"])
    report = format_results(results)
    assert [r.passed for r in results] == [True, False], report
    assert "turn 2: nothing came after waiting 1 s" in report


# -- the engine: a gate whose deadline is a function of the state -------------------------------


class Memo(BaseModel):
    wake_at: datetime | None = None
    woke: bool = False
    ok: bool = False


class Answer(BaseModel):
    ok: bool = True


def _flow(deadline: Any) -> Flow:
    def woke(state: Memo) -> dict[str, Any]:
        return {"woke": True}

    return Flow(
        name="memo",
        state=Memo,
        start="wait",
        nodes={"woke": woke},
        gates={"wait": Gate(Answer, deadline=deadline, on_timeout="woke")},
        routes={"wait": END, "woke": END},
    )


def test_a_gate_deadline_from_the_state(clock: Clock) -> None:
    flow = _flow(lambda state: state.wake_at)
    runner = Runner(flow, clock=clock)
    assert runner.start("none", {}).due is None  # None: no timer
    at = clock.now + timedelta(minutes=3)
    assert runner.start("later", {"wake_at": at}).due == at
    clock.now = at
    (fired,) = runner.fire_due()
    assert fired.thread_id == "later" and fired.result is not None and fired.result.state.woke
    assert flow.to_data()["deadlines"] == {"wait": {"seconds": None, "on_timeout": "woke"}}
    assert "wake-up" in to_mermaid(flow)
    relative = Runner(_flow(lambda state: timedelta(seconds=30)), clock=clock)
    assert relative.start("r", {}).due == clock.now + timedelta(seconds=30)


def test_a_gate_deadline_function_that_fails_saves_nothing(clock: Clock) -> None:
    runner = Runner(_flow(lambda state: datetime(2025, 3, 10, 9, 0)), clock=clock)  # naive
    with pytest.raises(RunError, match="aware datetime"):
        runner.start("naive", {})
    broken = Runner(_flow(lambda state: 1 / 0), clock=clock)
    with pytest.raises(RunError, match="ZeroDivisionError"):
        broken.start("broken", {})
