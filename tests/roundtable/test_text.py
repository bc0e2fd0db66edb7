"""Post-processing of replies, rule by rule: <think> sections, directives, greetings, two
sentences, 160 characters, sentence-final punctuation, and the empty text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.roundtable.text import (
    EMPTY_TEXT,
    PostprocessSettings,
    display_text,
    ensure_final_punctuation,
    postprocess,
    remove_directives,
    remove_greeting,
    shorten,
)

NAMES = ["ルミナ", "クラリス", "ノクス", "Lumina", "Claris", "Nox"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # <think> sections go, closed or not
        ("<think>plan</think>晴れです。", "晴れです。"),
        ("<THINK>\nplan\n</THINK>Sunny.", "Sunny."),
        ("<thought>x</thought>OK.", "OK."),
        ("Sunny.<think>never closed", "Sunny."),
        # a stray close (the chat template opened the section) goes with all before it
        ("考え中。クラリスに振ろうかな</think>答えです。", "答えです。"),
        ("plan\n</THOUGHT>\nSunny.", "Sunny."),
        ("<think>a</think>b</think>晴れです。", "晴れです。"),
        # directives go from the displayed text
        ("晴れです。[Next: NOX]", "晴れです。"),
        ('Sunny. {"next": "NOX"}', "Sunny."),
        ('Sunny. [Next: NOX] {"next":"NOX"}', "Sunny."),
        # greeting preambles go
        ("こんにちは！晴れです。", "晴れです。"),
        ("こんにちは、皆さん。晴れです。", "晴れです。"),
        ("こんにちは、ノクスさん！晴れです。", "晴れです。"),
        ("Hello everyone! It is sunny.", "It is sunny."),
        ("Hi, Claris. It is sunny.", "It is sunny."),
        ("Hi, the answer is 4.", "The answer is 4."),
        ("Hello! Hi! It is sunny.", "It is sunny."),
        ("Highlights first.", "Highlights first."),  # "Hi" inside a word is no greeting
        ("こんにちは！", "こんにちは！"),  # a reply that is only a greeting stays
        # two sentences at most
        ("一つ。二つ。三つ。", "一つ。二つ。"),
        ("One. Two! Three? Four.", "One. Two!"),
        ("Pi is 3.14 today. Yes. No.", "Pi is 3.14 today. Yes."),
        ("「はい。」と言った。次。最後。", "「はい。」と言った。次。"),
        # sentence-final punctuation
        ("晴れです", "晴れです。"),
        ("It is sunny", "It is sunny."),
        ("It is sunny,", "It is sunny."),
        ("本当に？", "本当に？"),
        # whitespace folds
        ("Line one\n\nline two", "Line one line two."),
        # nothing left
        ("[Next: NOX]", ""),
        ("<think>only thinking</think>", ""),
        ("", ""),
    ],
)
def test_postprocess(raw: str, expected: str) -> None:
    assert postprocess(raw, names=NAMES) == expected


def test_long_replies_are_cut_to_160_characters_with_final_punctuation() -> None:
    long = "あ" * 300
    text = postprocess(long)
    assert len(text) == 160 and text.endswith("。")
    english = "word " * 100
    text = postprocess(english)
    assert len(text) <= 160 and text.endswith(".")


def test_the_limits_are_settings() -> None:
    settings = PostprocessSettings(max_sentences=1, max_chars=20, empty_text="-")
    assert postprocess("One. Two.", settings) == "One."
    assert len(postprocess("x" * 50, settings)) == 20
    assert display_text("", settings) == "-"


def test_an_empty_reply_is_shown_as_no_response() -> None:
    assert display_text(postprocess("[Next: NOX]")) == EMPTY_TEXT == "（応答なし）"
    assert display_text("   ") == EMPTY_TEXT


def test_helpers_one_by_one() -> None:
    assert remove_directives("a [next:x] b") == "a  b"
    assert remove_greeting("Good morning, folks! Go.") == "Go."
    assert shorten("a. b. c.", 2, 160) == "a. b."
    assert ensure_final_punctuation("はい、") == "はい。"


@given(st.text(max_size=500))
def test_any_reply_is_short_and_free_of_directives(raw: str) -> None:
    text = postprocess(raw)
    assert len(text) <= 160
    assert "[Next" not in text and "<think>" not in text.lower()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Sure." + "{" + '"next": "NOX", ' * 5_000, "Sure." + "{" + '"next": "NOX", ' * 5_000),
        ("Sure. {" + '"next": "NOX", ' * 5_000 + "}", "Sure."),
        ("Sure. [Next:" + " " * 50_000 + "]", "Sure."),
        ("Sure. " + "[Next: " * 100_000, "Sure. " + "[Next: " * 100_000),
        ("Sure. " + "[Next: " * 100_000 + "NOX]", "Sure. " + "[Next: " * 99_999),
    ],
    ids=[
        "unclosed object",
        "closed object",
        "tag with a long run of spaces",
        "unclosed tags",
        "unclosed tags, the last closed",
    ],
)
def test_directives_in_hostile_replies_are_removed_in_linear_time(raw: str, expected: str) -> None:
    assert remove_directives(raw) == expected.strip()
