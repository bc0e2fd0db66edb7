"""Dialogue fixtures: the shipped example domain, its flow (built once), a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime

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
