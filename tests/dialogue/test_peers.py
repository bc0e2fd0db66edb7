"""Rasa's example bots ported to flowkit domains (tests/dialogue/peers/, see its README):
their own test conversations, converted in format only, pass with ``flowkit dialogue test``."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.dialogue.actions import Handler
from flowkit.dialogue.conversations import format_results, run_conversations

from .peers.reminderbot import actions as reminder_actions

PEERS = Path(__file__).parent / "peers"

#: The handlers of each bot's actions (the domain files name them by module path, which
#: needs the repository root on the path: `PYTHONPATH=. flowkit dialogue test ...`).
HANDLERS: dict[str, dict[str, Handler]] = {
    "reminderbot": {
        "action_set_reminder": reminder_actions.set_reminder,
        "action_forget_reminders": reminder_actions.forget_reminders,
        "action_tell_id": reminder_actions.tell_id,
        "action_react_to_reminder": reminder_actions.react_to_reminder,
        "action_warn_dry": reminder_actions.warn_dry,
    },
}

#: Conversations that cannot pass, with the reason (also in peers/README.md). None today.
KNOWN_FAILURES: dict[str, set[str]] = {}


@pytest.mark.parametrize(
    ("bot", "conversations"),
    [("moodbot", 5), ("reminderbot", 8), ("responseselectorbot", 2)],
)
def test_the_bots_own_conversations_pass(bot: str, conversations: int) -> None:
    results = run_conversations(
        PEERS / bot / "domain.yaml",
        PEERS / bot / "conversations.yaml",
        actions=HANDLERS.get(bot),
    )
    assert len(results) == conversations
    failed = {r.name for r in results if not r.passed}
    assert failed == KNOWN_FAILURES.get(bot, set()), format_results(results)


def test_every_bot_is_listed_in_the_readme() -> None:
    readme = (PEERS / "README.md").read_text(encoding="utf-8")
    bots = sorted(p.name for p in PEERS.iterdir() if (p / "domain.yaml").exists())
    assert bots == ["moodbot", "reminderbot", "responseselectorbot"]
    assert "Apache-2.0" in readme
    assert all(f"`{bot}`" in readme for bot in bots)
