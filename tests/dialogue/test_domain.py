"""Loading a domain: YAML or JSON, shipped examples, every problem listed with its location,
and the JSON schema in schemas/ kept in step with the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from flowkit.dialogue import Domain, domain_json_schema, load_domain
from flowkit.dialogue.domain import example_names
from flowkit.dialogue.services import parse_timezone
from flowkit.errors import DomainError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "dialogue-domain.schema.json"


def minimal(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "tiny",
        "intents": {"order": {"examples": {"en": ["order a part"]}}},
        "entities": {"part": {"kind": "choice", "values": {"gear": {"en": ["gear"]}}}},
        "slots": {"part": {"entity": "part", "question": {"en": "Which part?"}}},
        "goals": {"order": {"intent": "order", "mode": "SLOT_FILLING", "slots": ["part"]}},
    }
    data.update(extra)
    return data


def test_the_shipped_example_loads_by_name_and_by_path(domain: Domain) -> None:
    assert example_names() == ["robot_cell"]
    assert domain.languages == ["en", "ja"] and domain.pii_slots() == {"requester"}
    path = Path(__file__).resolve().parents[2] / "src/flowkit/dialogue/examples/robot_cell.yaml"
    assert load_domain(path) == domain
    assert load_domain(domain) is domain


def test_json_and_yaml_files_load_alike(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps(minimal()), encoding="utf-8")
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(minimal()), encoding="utf-8")
    assert load_domain(tmp_path / "d.json") == load_domain(tmp_path / "d.yaml")


def test_every_problem_is_listed_with_its_location(tmp_path: Path) -> None:
    data = minimal(
        languages=["en", "ja"],
        goals={
            "order": {
                "intent": "ordr",
                "mode": "SLOT_FILLING",
                "slots": ["part", "qty"],
                "action": "ship",
            }
        },
        intents={
            "order": {"examples": {"en": ["order a part"]}},
            "hello": {"kind": "small_talk", "examples": {"en": ["hi"], "ja": ["やあ"]}},
        },
    )
    data["slots"]["part"]["validation"] = {"earliest": "08:00"}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(DomainError) as caught:
        load_domain(path)
    error = caught.value
    assert error.path == str(path) and str(path) in str(error)
    text = "\n".join(error.problems)
    for expected in (
        "intents.order: no goal starts on this task intent",
        "intents.order: no examples or keywords in `ja`",
        "intents.hello: a small_talk intent needs `response:`",
        "slots.part.question: no question in `ja`",
        "slots.part.validation.earliest: does not apply to a choice entity",
        "goals.order.intent: `ordr` is not a task intent",
        "goals.order.slots: slot `qty` is not defined",
        "goals.order.action: action `ship` is not declared",
    ):
        assert expected in text, expected


def test_model_errors_name_the_field_without_echoing_input(tmp_path: Path) -> None:
    with pytest.raises(DomainError) as caught:
        load_domain(minimal(threshold=3, slots={"part": {"entity": "part", "pii": "Sato"}}))
    text = "\n".join(caught.value.problems)
    # pydantic's reason is passed on in its words (not asserted here), framed by ours.
    problems = caught.value.problems
    assert any(p.startswith("threshold: ") and p.endswith("; fix the value") for p in problems)
    assert "slots.part.question: `question` is required but missing; add it" in text
    assert "Sato" not in str(caught.value)


def test_syntax_errors_carry_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nintents: {a: [\n", encoding="utf-8")
    with pytest.raises(DomainError, match=r"line \d+: \(file\): invalid YAML"):
        load_domain(path)
    bad_json = tmp_path / "broken.json"
    bad_json.write_text('{"name": ', encoding="utf-8")
    with pytest.raises(DomainError, match=r"line 1: \(file\): invalid JSON"):
        load_domain(bad_json)


def test_an_unknown_source_says_what_exists(tmp_path: Path) -> None:
    with pytest.raises(DomainError, match=r"neither a file nor a shipped example \(robot_cell\)"):
        load_domain("no-such-domain.yaml")
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(DomainError, match="expected a mapping of domain keys, got a list"):
        load_domain(listing)


def test_response_shorthand_and_style() -> None:
    domain = load_domain(
        minimal(responses={"hi": {"en": "Hello"}, "bye": {"text": {"en": "Bye"}, "style": "llm"}})
    )
    assert domain.responses["hi"].text == {"en": "Hello"} and domain.responses["hi"].style is None
    assert domain.responses["bye"].style == "llm"


def test_languages_other_than_en_and_ja_must_define_the_builtin_responses() -> None:
    data = minimal(languages=["de"])
    data["intents"]["order"]["examples"] = {"de": ["ein Teil bestellen"]}
    data["slots"]["part"]["question"] = {"de": "Welches Teil?"}
    with pytest.raises(DomainError) as caught:
        load_domain(data)
    assert any(p.startswith("responses.fallback: no text in `de`") for p in caught.value.problems)


def test_timezones() -> None:
    from datetime import UTC, timedelta

    assert parse_timezone("UTC") is UTC
    assert parse_timezone("+09:00").utcoffset(None) == timedelta(hours=9)
    with pytest.raises(DomainError, match="timezone"):
        parse_timezone("Mars/Olympus")


def test_the_json_schema_file_is_up_to_date() -> None:
    generated = json.dumps(domain_json_schema(), indent=2, ensure_ascii=False) + "\n"
    assert SCHEMA.read_text(encoding="utf-8") == generated, (
        "schemas/dialogue-domain.schema.json is stale; regenerate it with "
        "`flowkit dialogue schema > schemas/dialogue-domain.schema.json`"
    )


def test_the_example_domain_satisfies_the_schema(domain: Domain) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    data = yaml.safe_load(
        (ROOT / "src/flowkit/dialogue/examples/robot_cell.yaml").read_text(encoding="utf-8")
    )
    # A structural check without a JSON-schema library: every top-level key is described.
    assert set(data) <= set(schema["properties"])
    assert set(schema["required"]) <= set(data)


BROKEN = """\
name: tiny
languages: [en]
intents:
  order:
    examples: {en: [order a part]}
entities:
  part:
    kind: choise
slots:
  part:
    entity: part
    question: {en: Which part?}
  size:
    entity: sizes
    question: {en: Which size?}
goals:
  order:
    intent: order
    mode: SLOT_FILLING
    slots: [part, size, colour]
    colour: red
"""


def test_shape_errors_do_not_hide_unknown_names_and_every_problem_has_its_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    with pytest.raises(DomainError) as caught:
        load_domain(path)
    first, *others = caught.value.problems
    # pydantic's reason (the allowed kinds) is passed on in its words, framed by ours.
    assert first.startswith("line 8: entities.part.kind: ") and first.endswith("; fix the value")
    assert others == [
        "line 21: goals.order.colour: unknown key `colour`; remove it or fix its spelling",
        "line 14: slots.size.entity: entity `sizes` is not defined; add it under entities or "
        "fix the name",
    ]
    # The slot `part` names the malformed entity `part`: that is not reported a second time,
    # and the goal `order` is malformed, so neither is its unknown slot `colour`.


def test_a_typo_in_a_key_suggests_the_key(tmp_path: Path) -> None:
    data = minimal(entites={})
    with pytest.raises(DomainError, match=r"unknown key `entites` \(did you mean `entities`\?\)"):
        load_domain(data)


def test_an_unknown_timezone_is_listed_with_the_other_problems() -> None:
    with pytest.raises(DomainError) as caught:
        load_domain(minimal(timezone="Mars/Olympus", threshold=2))
    text = "\n".join(caught.value.problems)
    assert "timezone: `Mars/Olympus` is unknown" in text and "threshold:" in text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"  \n", "the file is empty"),
        (b"name: \xff\xfe\n", "line 1: (file): not UTF-8 text"),
        (b"name: a\x00b\n", "a NUL byte"),
        (b"[" * 100_000, "nested too deeply"),
        (b"a: " + b"x" * (3 * 1024 * 1024), "a domain file is at most 2 MB"),
        (b"- a\n", "expected a mapping of domain keys, got a list"),
    ],
)
def test_files_that_are_not_domains_are_plain_problems(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "d.yaml"
    path.write_bytes(content)
    with pytest.raises(DomainError) as caught:
        load_domain(path)
    assert expected in str(caught.value)
    assert len(str(caught.value)) < 500  # the input is never echoed back
