"""An integer longer than Python converts (``sys.get_int_max_str_digits()``, 4,300 digits) is
a typed, line-numbered problem in every guarded parser and in the configuration loaders that
report lines (roundtable tables, dialogue domains), never Python's advice to call
``sys.set_int_max_str_digits()``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit.dialogue import load_domain
from flowkit.dialogue._report import check_domain
from flowkit.errors import DomainError, NumberTooLongError
from flowkit.foundation._untrusted import parse_json, parse_yaml
from flowkit.roundtable import RoundtableConfigError, load_config

LIMIT = sys.get_int_max_str_digits()
BIG = "9" * (LIMIT + 700)

YAML_DOCS = [
    (f"a: 1\nb:\n  - 2\n  - {BIG}\n", 4),
    (f"a: -{BIG}\n", 1),
    (f"a: 1\nb: {BIG[:50]}_{BIG[50:]}\n", 2),  # underscores are dropped before int()
    (f"a: !!int '{BIG}'\n", 1),  # quoted, but tagged as an integer
    (f"a:\n  b:\n    c: {BIG}:30\n", 3),  # a sexagesimal number
]
JSON_DOCS = [
    (f'{{"a": 1,\n "b": [2,\n  {BIG}]}}', 3),
    (f'{{"s": "{BIG}",\n "a": -{BIG}}}', 2),  # the string of digits is text, not a number
    (f'[\n"\\"{BIG}",\n{BIG}\n]', 3),  # an escaped quote does not end the string
]


@pytest.mark.parametrize(("text", "line"), YAML_DOCS)
def test_a_yaml_integer_too_long_to_read_is_typed_with_its_line(text: str, line: int) -> None:
    with pytest.raises(NumberTooLongError) as caught:
        parse_yaml(text, what="table")
    assert caught.value.line == line and caught.value.limit == LIMIT
    assert "set_int_max_str_digits" not in str(caught.value)
    assert f"an integer of {LIMIT + 700:,} digits" in str(caught.value)


@pytest.mark.parametrize(("text", "line"), JSON_DOCS)
def test_a_json_integer_too_long_to_read_is_typed_with_its_line(text: str, line: int) -> None:
    with pytest.raises(NumberTooLongError) as caught:
        parse_json(text, what="table")
    assert caught.value.line == line
    assert "set_int_max_str_digits" not in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        f"a: '{BIG}'\n",  # quoted: a string
        f"a: {BIG}.5\n",  # a float
        f"a: 0x{BIG[:3000]}\n",  # hexadecimal has no digit limit
        f"a: {'1' * LIMIT}\n",  # at the limit
    ],
)
def test_what_python_reads_still_reads(text: str) -> None:
    assert parse_yaml(text, what="table")["a"] is not None


CONFIGURATIONS = [
    ("roundtable", "t.yaml", f"name: pair\nconversation:\n  max_turns: {BIG}\n", 3),
    ("roundtable", "t.json", f'{{"name": "pair",\n "conversation": {{"max_turns": {BIG}}}}}', 2),
    ("dialogue", "d.yaml", f"name: x\nintents:\n  hi:\n    examples: [{BIG}]\n", 4),
    ("dialogue", "d.json", f'{{"name": "x",\n\n "intents": {BIG}}}', 3),
]


@pytest.mark.parametrize(("kind", "name", "text", "line"), CONFIGURATIONS)
def test_a_configuration_file_reports_the_line(
    tmp_path: Path, kind: str, name: str, text: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    said = (
        f"an integer of {LIMIT + 700:,} digits, over the {LIMIT:,} Python reads; write a "
        "smaller number, or quote it to keep it as text"
    )
    caught: pytest.ExceptionInfo[RoundtableConfigError | DomainError]
    if kind == "roundtable":
        with pytest.raises(RoundtableConfigError) as caught:
            load_config(path)
        assert caught.value.problems == [f"line {line}: {said}"]
    else:
        with pytest.raises(DomainError) as caught:
            load_domain(path)
        assert caught.value.problems == [f"line {line}: (file): {said}"]
        problem = check_domain(path).problems[0]
        assert (problem.where, problem.line, problem.message) == ("(file)", line, said)
    assert isinstance(caught.value.__cause__.__cause__, NumberTooLongError)
