"""Range re-mapping (seed §3.3): UNIT-QUALITY-120-002 (exact_match), UNIT-QUALITY-120-003
(semantic_search below 0.8 asks for manual alignment), INT-QUALITY-120-002 (diff3), and the
order of strategies with every attempt recorded."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowkit.quality.embed import NGramEmbedder, SentenceTransformerEmbedder, cosine
from flowkit.quality.errors import ManualAlignmentRequired, QualityInputError, qc_code_for
from flowkit.quality.models import TextRange, sha256_text
from flowkit.quality.remap import Remapper

OLD = (
    "吾輩は猫である。名前はまだ無い。\n"
    "どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた"
    "事だけは記憶している。\n吾輩はここで始めて人間というものを見た。"
)


def at(text: str, piece: str) -> tuple[TextRange, str]:
    start = text.index(piece)
    return TextRange.of(text, start, start + len(piece)), sha256_text(piece)


def test_UNIT_QUALITY_120_002_exact_match_updates_the_offsets() -> None:
    new = "第一話\n\n" + OLD
    rng, checksum = at(OLD, "名前はまだ無い")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert (placed.method, placed.confidence) == ("exact_match", 1.0)
    assert placed.range is not None
    assert new[placed.range.start_char : placed.range.end_char] == "名前はまだ無い"
    assert placed.range.start_char == rng.start_char + 5
    assert placed.range.start_line == rng.start_line + 2
    assert [a.strategy for a in placed.attempts] == ["exact_match"]
    assert placed.attempts[0].adjustment_delta == 5


def test_exact_match_picks_the_occurrence_nearest_the_old_place() -> None:
    old = "猫。犬。猫。犬。猫。"
    rng = TextRange.of(old, 4, 5)  # the second 猫
    new = "前置き。" + old
    placed = Remapper(old, new).place(rng, sha256_text("猫"))
    assert placed.range is not None and placed.range.start_char == 8


def test_exact_match_needs_the_checksum_of_the_old_text() -> None:
    rng, _ = at(OLD, "名前はまだ無い")
    range_, attempt = Remapper(OLD, OLD).exact_match(
        rng.start_char, rng.end_char, sha256_text("別の文")
    )
    assert range_ is None and attempt.result == "failure"


def test_INT_QUALITY_120_002_diff3_follows_an_edited_range() -> None:
    new = "序。" + OLD.replace("とんと見当がつかぬ", "まったく見当がつかない")
    rng, checksum = at(OLD, "とんと見当がつかぬ")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert placed.method == "diff3"
    assert 0.7 <= placed.confidence <= 0.9
    assert placed.range is not None
    assert new[placed.range.start_char : placed.range.end_char] == "まったく見当がつかない"
    assert [(a.strategy, a.result) for a in placed.attempts] == [
        ("exact_match", "failure"),
        ("diff3", "success"),
    ]
    assert placed.attempts[-1].adjustment_delta == 2


def test_diff3_confidence_drops_with_the_context_it_loses() -> None:
    rng, _ = at(OLD, "とんと見当がつかぬ")
    edited = OLD.replace("どこで生れたか", "どこで生まれたのか")  # the text just before
    _, attempt = Remapper(OLD, edited).diff3(rng.start_char, rng.end_char)
    assert attempt.result == "success" and 0.7 <= attempt.confidence < 0.9


def test_a_deleted_range_maps_to_an_empty_range() -> None:
    new = OLD.replace("ニャーニャー泣いていた", "")
    rng, checksum = at(OLD, "ニャーニャー泣いていた")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert placed.method == "diff3" and placed.range is not None
    assert placed.range.start_char == placed.range.end_char


def test_a_range_deleted_with_its_sentence_maps_to_an_empty_range_at_the_gap() -> None:
    # The whole sentence went, between unchanged text, and nothing like it is anywhere else.
    sentence = "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。"
    new = OLD.replace(sentence, "")
    rng, checksum = at(OLD, "ニャーニャー泣いていた")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert placed.method == "diff3" and placed.verified and placed.range is not None
    gap = OLD.index(sentence)
    assert placed.range.start_char == placed.range.end_char == gap
    assert 0.7 <= placed.confidence <= 0.9


def test_a_copy_of_a_range_fixed_in_place_is_another_occurrence() -> None:
    # Fixed where it was; the old words also appear in a new sentence with other neighbours.
    new = (
        OLD.replace("ニャーニャー泣いていた", "ニャーニャー鳴いていた")
        + "\n隣の猫もニャーニャー泣いていた。"
    )
    rng, checksum = at(OLD, "ニャーニャー泣いていた")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert placed.method == "diff3" and placed.verified and placed.range is not None
    assert new[placed.range.start_char : placed.range.end_char] == "ニャーニャー鳴いていた"
    assert [(a.strategy, a.result) for a in placed.attempts] == [
        ("exact_match", "failure"),
        ("diff3", "success"),
    ]


def test_a_range_fixed_in_place_and_copied_with_its_neighbours_needs_a_person() -> None:
    # Either the fixed sentence or the copied one may be the passage now.
    sentence = "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。"
    new = OLD.replace("ニャーニャー泣いていた", "ニャーニャー鳴いていた") + "\n" + sentence
    rng, checksum = at(OLD, "ニャーニャー泣いていた")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert not placed.placed and not placed.verified
    assert placed.attempts[0].strategy == "exact_match"
    assert placed.attempts[0].result == "failure"
    assert placed.attempts[-1].strategy == "manual_confirmation"


def test_a_range_in_a_moved_paragraph_is_placed_between_its_unchanged_neighbours() -> None:
    # A short paragraph moved to the front over longer ones, the range fixed in it: the diff
    # sees it deleted and inserted, the n-gram embedder no longer finds 4 characters at 0.8,
    # but the text right before and after the range moved with it.
    first, second = OLD.split("\n")[:2]
    short = "この書生というのは時々我々を捕えて煮て食うという話である。"
    long = (
        "吾輩はここで始めて人間というものを見た。しかもあとで聞くとそれは書生という人間中で"
        "一番獰悪な種族であったそうだ。しかしその当時は何という考もなかったから別段恐しいとも"
        "思わなかった。"
    )
    old = "\n".join([first, second, short, long, "吾輩は猫である。"]) + "\n"
    moved = short.replace("煮て食う", "煮て喰う")
    new = "\n".join([moved, first, second, long, "吾輩は猫である。"]) + "\n"
    rng, checksum = at(old, "煮て食う")
    placed = Remapper(old, new).place(rng, checksum)
    assert placed.method == "diff3" and placed.verified and placed.range is not None
    assert new[placed.range.start_char : placed.range.end_char] == "煮て喰う"
    assert placed.range.start_char == new.index("煮て喰う")


def test_a_range_inside_a_larger_rewrite_is_placed_on_that_rewrite() -> None:
    # The sentence was rewritten around the range: its place is what replaced it (no longer
    # than about twice the range), once nothing like it is found anywhere else.
    new = OLD.replace(
        "どこで生れたかとんと見当がつかぬ。", "どこで生れたのか。それはとんと分からぬ。"
    )
    rng, checksum = at(OLD, "とんと見当がつかぬ")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert placed.method == "diff3" and placed.verified and placed.range is not None
    text = new[placed.range.start_char : placed.range.end_char]
    assert "とんと分からぬ" in text and len(text) <= 2 * len("とんと見当がつかぬ") + 10
    assert [(a.strategy, a.result) for a in placed.attempts] == [
        ("exact_match", "failure"),
        ("semantic_search", "failure"),
        ("diff3", "success"),
    ]


def test_semantic_search_finds_a_paraphrased_passage() -> None:
    passage = "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。"
    old = "x" * 300 + OLD + "y" * 300
    new = (
        "y" * 40 + OLD.replace("泣いていた", "鳴いていた").replace("何でも", "なんでも") + "x" * 200
    )
    rng, _ = at(old, passage)
    found, attempt = Remapper(old, new).semantic_search(rng.start_char, rng.end_char)
    assert attempt.strategy == "semantic_search" and attempt.confidence >= 0.8
    assert "鳴いていた事だけは記憶" in new[found.start_char : found.end_char]


def test_UNIT_QUALITY_120_003_semantic_search_below_0_8_requires_manual_alignment() -> None:
    new = "The cat has no name yet. It cannot remember where it was born at all."
    rng, _ = at(OLD, "とんと見当がつかぬ")
    with pytest.raises(ManualAlignmentRequired) as caught:
        Remapper(OLD, new).semantic_search(rng.start_char, rng.end_char)
    assert caught.value.best_confidence < 0.8
    assert qc_code_for(caught.value) == "QC-013"


def test_when_every_strategy_fails_manual_confirmation_is_required() -> None:
    new = "まったく別の物語が、ここから始まる。" * 4
    rng, checksum = at(OLD, "とんと見当がつかぬ")
    placed = Remapper(OLD, new).place(rng, checksum)
    assert not placed.placed and placed.method is None and placed.confidence == 0.0
    assert [(a.strategy, a.result) for a in placed.attempts] == [
        ("exact_match", "failure"),
        ("diff3", "failure"),
        ("semantic_search", "failure"),
        ("manual_confirmation", "required"),
    ]


def test_bad_ranges_are_refused() -> None:
    with pytest.raises(QualityInputError):
        Remapper(OLD, OLD).place(TextRange(start_char=0, end_char=len(OLD) + 1), "0" * 64)
    with pytest.raises(QualityInputError):
        Remapper(OLD, None)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    prefix=st.text(alphabet="あいうえおかきくけこ。", max_size=30),
    start=st.integers(0, 60),
    length=st.integers(1, 15),
)
def test_an_unchanged_range_under_an_insertion_is_always_found_exactly(
    prefix: str, start: int, length: int
) -> None:
    start = min(start, len(OLD) - length)
    rng = TextRange.of(OLD, start, start + length)
    piece = OLD[start : start + length]
    placed = Remapper(OLD, prefix + OLD).place(rng, sha256_text(piece))
    assert placed.method == "exact_match" and placed.range is not None
    assert (prefix + OLD)[placed.range.start_char : placed.range.end_char] == piece


def test_ngram_embedder_works_on_japanese_and_english() -> None:
    embed = NGramEmbedder()
    a, b, c = embed.embed(["名前はまだ無い", "名前はまだない", "今日は晴れです"])
    assert cosine(a, b) > cosine(a, c)
    e, f = embed.embed(["the cat has no name", "THE CAT HAS NO NAME"])
    assert cosine(e, e) == pytest.approx(1.0)
    assert cosine(e, f) == pytest.approx(1.0)  # case and width do not count
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(QualityInputError):
        NGramEmbedder(sizes=())


def test_the_sentence_transformer_embedder_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As on a machine without the extra, installed here or not (None in sys.modules makes
    # the import fail); no model is ever downloaded in tests.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(QualityInputError, match="quality-embeddings"):
        SentenceTransformerEmbedder().embed(["x"])
