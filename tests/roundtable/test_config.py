"""The configuration as data: the shipped examples load, every problem is reported at once
with its place and line, keys never live in the file, and the JSON schema is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from flowkit.errors import FlowkitError
from flowkit.roundtable import RoundtableConfigError, config_json_schema, load_config
from flowkit.roundtable.config import example_names
from flowkit.roundtable.prompt import render_template

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "roundtable-config.schema.json"


def minimal(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "pair",
        "characters": [
            {"id": "A", "display_name": "Ann", "persona": "You are Ann."},
            {"id": "B", "display_name": "Bob", "persona": "You are Bob."},
        ],
    }
    data.update(changes)
    return data


def problems(data: Any) -> list[str]:
    with pytest.raises(RoundtableConfigError) as caught:
        load_config(data)
    assert isinstance(caught.value, FlowkitError)
    return caught.value.problems


@pytest.mark.parametrize("name", ["trio-ja", "trio-en"])
def test_the_shipped_examples_load(name: str) -> None:
    config = load_config(name)
    assert [m.internal_id for m in config.registry] == ["LUMINA", "CLARIS", "NOX"]
    assert all(config.persona(m.internal_id) for m in config.registry)
    assert len({c.llm for c in config.characters}) == 3  # each on its own model


def test_examples_are_listed() -> None:
    assert example_names() == ["trio-en", "trio-ja"]


def test_defaults() -> None:
    config = load_config(minimal())
    assert config.conversation.auto_loops == 0
    assert config.conversation.max_turns == 8
    assert config.conversation.timeout_s == 60
    assert config.next.fuzzy_threshold == 0.85 and config.next.fallback == "round_robin"
    assert config.first_speaker == "A"
    assert config.postprocess_settings.empty_text == "（応答なし）"
    assert "{persona_prompt}" in config.rule("prompt_template")


def test_personas_may_come_from_the_origins_personas_section() -> None:
    data = minimal()
    data["characters"][0].pop("persona")
    data["personas"] = {"A": {"name": "Ann", "system_prompt": "You are Ann, listed."}}
    assert load_config(data).persona("A") == "You are Ann, listed."


def test_every_problem_is_reported_at_once() -> None:
    data = minimal(
        name="Bad Name",
        personas={"Z": {"system_prompt": "who?"}},
        rules={"prompt_template": "{persona_prompt} {bogus}"},
        conversation={"auto_loops": 9, "max_turns": 2, "first_speaker": "D"},
    )
    data["characters"][0]["api_key"] = "sk-secretsecret"
    data["characters"][1]["llm"] = "gemini-pro"
    # clashes with B's id once normalised
    data["characters"].append({"id": "C", "display_name": "b", "persona": "You are C."})
    found = problems(data)
    text = "\n".join(found)
    assert any(p.startswith("name: ") and p.endswith("; fix the value") for p in found)
    assert "characters.0.api_key: never write an API key" in text
    assert "characters.2.display_name: `b` is also a name of `B`" in text
    assert "characters.1.llm: `gemini-pro` is not an LLM spec" in text
    assert "personas.Z: no character has the id `Z`" in text
    assert "conversation.first_speaker: `D` is not a character id" in text
    assert "conversation.auto_loops: 9 turns per message is more than max_turns (2)" in text
    assert "rules.prompt_template: unknown placeholder {bogus}" in text
    assert "sk-secret" not in text


@pytest.mark.parametrize(
    ("change", "where", "fix"),
    [
        ({"characters": []}, "characters", "; fix the value"),
        ({"conversation": {"auto_loops": -1}}, "conversation.auto_loops", "; fix the value"),
        ({"next": {"fallback": "loudest"}}, "next.fallback", "; fix the value"),
        ({"next": {"fuzzy_threshold": 2}}, "next.fuzzy_threshold", "; fix the value"),
        ({"colour": "red"}, "colour", ": unknown key `colour`; remove it or fix its spelling"),
        ({"version": 2}, "version", "; fix the value"),
    ],
)
def test_shape_problems(change: dict[str, Any], where: str, fix: str) -> None:
    # Where, then pydantic's reason (its words, not asserted here), then what to do.
    found = problems(minimal(**change))
    assert any(p.startswith(f"{where}: ") and p.endswith(fix) for p in found), found


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c.pop("persona"), "characters.0: `A` has no persona"),
        (lambda c: c.update(id="USER"), "characters.0.id: `USER` means the person"),
        (lambda c: c.update(short_name="Bob"), "display_name: `Bob` is also a name of `A`"),
        (lambda c: c.update(llm="ollama:x", model="y"), "give either `llm`"),
        (lambda c: c.update(provider="ollama"), "provider `ollama` needs a `model`"),
        (lambda c: c.update(model="gpt"), "model `gpt` needs a `provider`"),
        (
            lambda c: c.update(provider="ollama", model="m", api_key_env="KEY"),
            "Ollama takes no API key",
        ),
    ],
)
def test_meaning_problems(edit: Any, expected: str) -> None:
    data = minimal()
    edit(data["characters"][0])
    assert any(expected in p for p in problems(data))


def test_a_broken_character_does_not_hide_the_others_problems() -> None:
    data = minimal()
    data["characters"][0]["generation"] = {"temperature": 9}
    data["characters"][1].pop("persona")
    found = problems(data)
    assert any(p.startswith("characters.0.generation.temperature") for p in found)
    assert any(p.startswith("characters.1: `B` has no persona") for p in found)


def test_problems_in_a_file_carry_their_line(tmp_path: Path) -> None:
    path = tmp_path / "table.yaml"
    path.write_text(
        "name: pair\ncharacters:\n  - id: A\n    display_name: Ann\n    persona: hi\n"
        "  - id: B\n    display_name: Bob\nconversation:\n  max_turns: 0\n",
        encoding="utf-8",
    )
    with pytest.raises(RoundtableConfigError) as caught:
        load_config(path)
    assert caught.value.path == str(path)
    assert any(
        p.startswith("line 6: characters.1: `B` has no persona") for p in caught.value.problems
    )
    assert any(p.startswith("line 9: conversation.max_turns") for p in caught.value.problems)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"name: [unclosed\n", "invalid YAML"),
        (b"\xff\xfe", "not UTF-8"),
        (b"a: &x 1\nb: *x\n", "anchor or alias"),
        (b"- just\n- a list\n", "expected a mapping"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "table.yaml"
    path.write_bytes(content)
    with pytest.raises(RoundtableConfigError, match=expected):
        load_config(path)


def test_a_missing_file_names_the_examples() -> None:
    with pytest.raises(RoundtableConfigError, match="neither a file nor a shipped example"):
        load_config("no-such-table")


def test_bad_source_types_are_refused() -> None:
    with pytest.raises(RoundtableConfigError, match="expected a file path"):
        load_config(42)  # type: ignore[arg-type]


def test_json_files_load_and_relative_log_folders_follow_the_file(tmp_path: Path) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(minimal(logs={"conversation_dir": "logs"})), encoding="utf-8")
    config = load_config(path)
    assert config.logs.conversation_dir == str(tmp_path / "logs")


def test_templates_replace_only_known_identifiers() -> None:
    template = 'Hi {name}. End with {"next":"ID"} and keep {unknown} and {{x}}.'
    assert render_template(template, {"name": "Ann"}) == (
        'Hi Ann. End with {"next":"ID"} and keep {unknown} and {{x}}.'
    )


def test_the_json_schema_file_is_up_to_date() -> None:
    generated = json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n"
    assert SCHEMA.read_text(encoding="utf-8") == generated, (
        "schemas/roundtable-config.schema.json is stale; regenerate it with "
        "`flowkit roundtable --schema > schemas/roundtable-config.schema.json`"
    )


@pytest.mark.parametrize("name", ["trio-ja", "trio-en"])
def test_the_examples_fit_the_schema(name: str) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    path = ROOT / "src/flowkit/roundtable/examples" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(data) <= set(schema["properties"])
    assert set(schema["required"]) <= set(data)
