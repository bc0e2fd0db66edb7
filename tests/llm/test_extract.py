"""JSON extraction from model answers: properties over generated JSON and surrounding text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.errors import LLMResponseError
from flowkit.llm import extract_json
from flowkit.llm._extract import json_candidates, strip_reasoning

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
containers = st.lists(json_values, max_size=4) | st.dictionaries(st.text(), json_values, max_size=4)
# Prose that cannot open JSON, a fence or a tag.
prose = st.text(st.characters(blacklist_characters='{[<`"', blacklist_categories=("Cs",)))


@given(json_values)
def test_plain_json_is_returned_as_is(value):
    assert extract_json(json.dumps(value)) == value


@given(containers, prose, prose)
def test_json_between_prose_is_found(value, before, after):
    assert extract_json(f"{before} {json.dumps(value)} {after}") == value


@given(containers, prose, prose, st.sampled_from(["json", "JSON", ""]))
def test_fenced_json_is_found(value, before, after, language):
    text = f"{before}\n```{language}\n{json.dumps(value, indent=2)}\n```\n{after}"
    assert extract_json(text) == value


@given(containers, containers, prose)
def test_reasoning_sections_are_ignored(decoy, value, thought):
    text = f"<think>{thought} {json.dumps(decoy)}</think>\n{json.dumps(value)}"
    assert extract_json(text) == value


@given(containers, containers)
def test_orphan_closing_think_tag_drops_what_came_before(decoy, value):
    assert extract_json(f"{json.dumps(decoy)} </think> {json.dumps(value)}") == value


@given(st.text())
def test_arbitrary_text_returns_a_value_or_raises_response_error(text):
    try:
        extract_json(text)
    except LLMResponseError as exc:
        assert exc.raw_text == text


@given(st.dictionaries(st.text(), json_values, min_size=1, max_size=3))
def test_nested_objects_are_never_offered_as_separate_answers(value):
    text = "Answer: " + json.dumps({"outer": value})
    assert list(json_candidates(text)) == [{"outer": value}]


def test_candidates_come_in_preference_order():
    text = 'See [1].\n```json\n{"a": 1}\n```\nalso {"b": 2}'
    assert list(json_candidates(text)) == [{"a": 1}, [1], {"b": 2}]


def test_unclosed_think_means_no_answer_yet():
    with pytest.raises(LLMResponseError, match="no JSON"):
        extract_json('<think>I will answer {"a": 1} once I am sure')


def test_strip_reasoning_handles_case_and_variants():
    assert strip_reasoning("<THINK>x</THINK> a <thinking>y</thinking> b") == "a  b"


def test_prose_without_json_raises_with_the_raw_text():
    with pytest.raises(LLMResponseError) as caught:
        extract_json("I am sorry, I cannot do that [citation needed].")
    assert caught.value.raw_text.startswith("I am sorry")


def test_plain_json_with_a_think_tag_inside_a_string_is_kept_whole():
    value = {"note": "the model wrote </think> here", "n": 1}
    assert extract_json(json.dumps(value)) == value
