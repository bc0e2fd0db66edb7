"""Acceptance 1: the example domain's conversation tests pass and, in each language, take
every route of the flow (so every node runs); the `flowkit dialogue test` command reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flowkit import Flow
from flowkit.cli import main
from flowkit.dialogue import load_conversations, run_conversations
from flowkit.dialogue.conversations import ConversationResult, format_results
from flowkit.errors import DomainError
from flowkit.routing.dialogue import EP, STATES


@pytest.fixture(scope="module")
def results() -> list[ConversationResult]:
    return run_conversations("robot_cell", "robot_cell")


def _edges(flow: Flow) -> set[tuple[str, str]]:
    # A node raising (routes to and from the Error Policy) is covered by test_errors.py:
    # the example domain's conversations never make a node raise.
    return {(s, t) for s, t in flow.machine.edges if EP not in (s, t)}


def test_the_example_conversations_pass(results: list[ConversationResult]) -> None:
    assert len(results) >= 6
    assert [r.failures for r in results if not r.passed] == []


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_route_and_node_is_taken_in_each_language(
    results: list[ConversationResult], flow: Flow, lang: str
) -> None:
    taken: set[tuple[str, str]] = set()
    for result in results:
        if result.languages == {lang}:
            taken |= result.edges
    assert _edges(flow) - taken == set(), f"routes never taken in {lang}"
    assert {s for s, _ in taken} == set(STATES) - {EP}


def test_failures_are_reported_per_turn_with_personal_values_masked(tmp_path: Path) -> None:
    tests = {
        "today": "2025-03-10",
        "conversations": [
            {
                "name": "wrong expectations",
                "turns": [
                    {
                        "user": "book maintenance for robot 1 tomorrow at 10:00",
                        "response": "greet",
                        "slots": {"time": 1000},
                    },
                    {
                        "user": "Tanaka",
                        "intent": "QUESTION",
                        "slots": {"requester": "Suzuki"},
                        "says": "nothing like this",
                    },
                ],
                "ends": True,
            },
            {"name": "fine", "turns": [{"user": "hello", "response": "greet"}]},
        ],
    }
    results = run_conversations("robot_cell", tests)
    report = format_results(results)
    assert report.splitlines()[0] == "FAIL  wrong expectations"
    assert "turn 1: expected response 'greet', got 'ask_slot'" in report
    assert "(quote times in YAML: '15:00')" in report
    assert "turn 2: expected intent 'QUESTION', got 'inform'" in report
    assert "turn 2: expected slot requester ***, got ***" in report
    assert "expected the conversation to end, it is waiting" in report
    assert "Tanaka" not in report and "Suzuki" not in report
    assert report.splitlines()[-1] == "2 conversations: 1 passed, 1 failed"


def test_the_cli_runs_conversation_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dialogue", "test", "robot_cell", "robot_cell"]) == 0
    assert "8 conversations: 8 passed, 0 failed" in capsys.readouterr().out
    failing = tmp_path / "fail.yaml"
    failing.write_text(
        yaml.safe_dump(
            {"conversations": [{"name": "x", "turns": [{"user": "hello", "response": "goodbye"}]}]}
        ),
        encoding="utf-8",
    )
    assert main(["dialogue", "test", "robot_cell", str(failing)]) == 1
    assert "FAIL  x" in capsys.readouterr().out


def test_bad_conversation_files_are_domain_errors(tmp_path: Path) -> None:
    with pytest.raises(DomainError, match=r"missing\.yaml` does not exist"):
        load_conversations(tmp_path / "missing.yaml")
    with pytest.raises(DomainError) as caught:
        load_conversations({"conversations": [{"name": "x", "turns": [{"intent": "OOS"}]}]})
    [problem] = caught.value.problems
    # The turn by its path, and what it lacks: a user message (or an event, or a wait).
    assert problem.startswith("conversations.0.turns.0: ") and "user:" in problem


def test_dialogue_check_and_schema_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dialogue", "check", "robot_cell"]) == 0
    assert capsys.readouterr().out.startswith("OK robot_cell: 2 languages")
    assert main(["dialogue", "check", "nope.yaml"]) == 2
    assert "neither a file nor a shipped example" in capsys.readouterr().err
    assert main(["dialogue", "schema"]) == 0
    assert '"title": "Domain"' in capsys.readouterr().out
