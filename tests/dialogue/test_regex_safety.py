"""Domain and catalog patterns run on RE2: ``(a+)+`` cannot stall a turn, and a pattern that
needs backtracking is refused when the file loads. The test's timeout bounds the time."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from flowkit.dialogue import load_domain
from flowkit.dialogue.entities import EntityExtractor
from flowkit.dialogue.validation import check_value
from flowkit.errors import DomainError, UnsafePatternError
from flowkit.foundation._safe_regex import compile_pattern
from flowkit.robot._specs import ValueRule

pytestmark = pytest.mark.timeout(30)

HOSTILE_TEXT = "a" * 50_000 + "!"


def domain_with(patterns: list[str], rule: str | None = None) -> dict[str, Any]:
    return {
        "name": "regex",
        "intents": {"order": {"examples": {"en": ["order a part"]}}},
        "entities": {"code": {"kind": "regex", "patterns": patterns}},
        "slots": {
            "code": {
                "entity": "code",
                "question": {"en": "Which code?"},
                "validation": {"pattern": rule} if rule else {},
            }
        },
        "goals": {"order": {"intent": "order", "mode": "SLOT_FILLING", "slots": ["code"]}},
    }


def test_nested_quantifiers_match_in_linear_time() -> None:
    domain = load_domain(domain_with([r"(?P<value>(a+)+)$"], rule=r"(a+)+\d"))
    extractor = EntityExtractor(domain)
    assert extractor.extract(HOSTILE_TEXT, date(2025, 3, 10)) == []
    assert [f.value for f in extractor.extract("code AAA", date(2025, 3, 10))] == ["AAA"]
    assert check_value(domain, "code", HOSTILE_TEXT, date(2025, 3, 10)) is not None


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [(r"(a)\1", "needs backtracking"), (r"(?<!x)a", "needs backtracking"), ("(", "not a valid")],
)
def test_patterns_that_cannot_run_safely_are_refused_at_load(pattern: str, reason: str) -> None:
    with pytest.raises(DomainError) as caught:
        load_domain(domain_with([pattern]))
    assert any("entities.code.patterns.0" in p and reason in p for p in caught.value.problems)
    with pytest.raises(DomainError, match=r"validation\.pattern"):
        load_domain(domain_with(["x"], rule=pattern))


def test_catalog_rules_run_on_the_same_engine() -> None:
    rule = ValueRule(kind="text", pattern=r"(a+)+b")
    assert rule.accepts("aab") and not rule.accepts(HOSTILE_TEXT)
    with pytest.raises(UnsafePatternError, match="needs backtracking"):
        compile_pattern(r"(a)\1", what="pattern")


def test_compiling_says_nothing_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnsafePatternError):
        compile_pattern(r"(b)\1", what="pattern")
    assert capfd.readouterr() == ("", "")
