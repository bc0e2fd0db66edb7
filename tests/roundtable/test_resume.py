"""A whole conversation resumes in a new process: the session lives in the JSON-file store
and its round summaries in the store's memory file; each character's scripted LLM comes
from its own ``scripted:PATH`` spec in the configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit.roundtable.app import Roundtable
from flowkit.stores import JsonFileStore

WORKER = Path(__file__).with_name("resume_worker.py")
SUMMARY = {"summary": "Two rounds.", "keywords": ["a", "b", "c", "d", "e"]}


def scripted(path: Path, name: str, nominate: str) -> str:
    rules = [
        {"match": "] USER: ", "response": SUMMARY},  # the summary request shows log lines
        {"match": "first", "response": f"{name} one. [Next: {nominate}]"},
        {"match": "second", "response": f"{name} two. [Next: {nominate}]"},
    ]
    path.write_text(json.dumps({"rules": rules, "model": name}), encoding="utf-8")
    return f"scripted:{path}"


def write_config(folder: Path) -> Path:
    characters = [
        ("LUMINA", "Lumina", "NOX"),
        ("CLARIS", "Claris", "LUMINA"),
        ("NOX", "Nox", "CLARIS"),
    ]
    data = {
        "name": "trio",
        "language": "en",
        "characters": [
            {
                "id": cid,
                "display_name": name,
                "persona": f"You are {name}.",
                "llm": scripted(folder / f"{cid}.json", name, nominate),
            }
            for cid, name, nominate in characters
        ],
        "logs": {"conversation_dir": "logs", "operation_dir": "logs"},
    }
    path = folder / "table.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run(config: Path, store: Path, text: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(WORKER), str(config), str(store), "s1", text],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # a library is quiet
    return done.stdout.splitlines()


@pytest.mark.slow
def test_a_conversation_resumes_in_a_new_process(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    store = tmp_path / "store"
    assert run(config, store, "first") == [
        "Lumina|Lumina one.",
        "Nox|Nox one.",
        "Claris|Claris one.",
    ]
    assert run(config, store, "second") == [
        "Lumina|Lumina two.",
        "Nox|Nox two.",
        "Claris|Claris two.",
    ]
    # A third process reads it all back: one session, two rounds, two summaries.
    bot = Roundtable(config, store=JsonFileStore(store))
    state = bot.state("s1")
    assert state.round_index == 2 and state.turn_index == 6
    assert [e.speaker for e in state.conversation_log] == ["USER", "Lumina", "Nox", "Claris"] * 2
    records = bot.summaries("s1")
    assert [(r["session_id"], r["thread_id"], r["summary"]) for r in records] == [
        ("s1", 1, "Two rounds."),
        ("s1", 2, "Two rounds."),
    ]
    transcript = (tmp_path / "logs" / "conversation_s1.log").read_text(encoding="utf-8")
    assert transcript.count("USER: ") == 2


def test_a_round_cut_short_is_finished_by_the_next_message(tmp_path: Path) -> None:
    """A UI that stops listening mid-round (or Ctrl-C) left the session pending at a node;
    the next ``send``, and the CLI's next line, failed with NotWaitingError forever (found
    by a defect hunt)."""
    from flowkit.testing import ScriptedLLM

    llms = {
        name: ScriptedLLM(default=f"{name.title()} here.", model=name)
        for name in ("LUMINA", "CLARIS", "NOX")
    }
    store = tmp_path / "store"
    table = Roundtable("trio-en", llms=llms, store=JsonFileStore(store), memory=None)
    with table.stream("s", "hello") as events:
        for event in events:
            if event.get("type") == "message":
                break  # the listener leaves after the first message
    assert table.runner.get_state("s").status == "pending"
    again = Roundtable("trio-en", llms=llms, store=JsonFileStore(store), memory=None)
    reply = again.send("s", "are you there?")
    assert [text for _, text in reply.texts] == ["Lumina here.", "Claris here.", "Nox here."]
    said = [entry.text for entry in again.transcript("s")]
    assert said.count("Lumina here.") == 2 and said.count("hello") == 1
    assert said.index("are you there?") > said.index("Nox here.")
    assert again.runner.get_state("s").status == "waiting"
