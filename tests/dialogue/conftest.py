"""Dialogue fixtures: the shipped example domain, its flow (built once), a fixed clock."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from flowkit import Flow, Runner
from flowkit.dialogue import Domain, build_flow, load_domain
from flowkit.dialogue.state import DialogueState

#: Monday 2025-03-10, 09:00 in the domain's time zone (+09:00): "tomorrow" is 2025-03-11.
MONDAY = datetime(2025, 3, 10, 0, 0, tzinfo=UTC)


def monday() -> datetime:
    return MONDAY


@pytest.fixture(scope="session")
def domain() -> Domain:
    return load_domain("robot_cell")


@pytest.fixture(scope="session")
def flow(domain: Domain) -> Flow:
    return build_flow(domain)


@pytest.fixture
def runner(flow: Flow) -> Runner[DialogueState]:
    return Runner(flow, clock=monday)


Talk = Callable[..., DialogueState]


@pytest.fixture
def talk(runner: Runner[DialogueState]) -> Talk:
    """``talk("hello", "bye", thread="t")``: start the thread if needed, send each message,
    return the state after the last one."""

    def send(*texts: str, thread: str = "t", **start: Any) -> DialogueState:
        if thread not in runner.threads():
            runner.start(thread, {"thread_id": thread, "domain": "robot_cell", **start})
        state = runner.get_state(thread).state
        for text in texts:
            state = runner.resume(thread, {"text": text}).state
        return state

    return send


def replies(states: Iterable[DialogueState]) -> list[str | None]:
    return [s.response_plan.id if s.response_plan else None for s in states]
