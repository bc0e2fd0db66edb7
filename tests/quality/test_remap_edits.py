"""Re-mapping never reports a wrong place as found (seed §3.3, issue 28): over text moved
about (a paragraph moved with one word changed, a sentence moved, split, merged, a range whose
neighbours were rewritten), in Japanese and English and on every embedder, a placement is
either verified (the text at the new range is the text that was matched) or left to a person
(QC-013); and an issue whose range was not verified is never judged Resolved."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flowkit.quality.embed import Embedder, NGramEmbedder, cosine
from flowkit.quality.errors import ManualAlignmentRequired, qc_code_for
from flowkit.quality.ids import new_issue_id
from flowkit.quality.judge import judge, locate_findings
from flowkit.quality.models import AdjustmentAttempt, Issue, TextRange, sha256_text
from flowkit.quality.remap import SIMILARITY_THRESHOLD, Placement, Remapper
from flowkit.quality.state import Finding

from ._edits import EDITS, MOVED, Edit

CATEGORY = "style"


def right_place(edit: Edit, placed: TextRange) -> bool:
    """Covers at least half of the text's true new place, and is not much longer than it."""
    t_start, t_end = edit.truth
    common = min(placed.end_char, t_end) - max(placed.start_char, t_start)
    size, truth = placed.end_char - placed.start_char, t_end - t_start
    return common >= 0.5 * truth and size <= 1.5 * truth + 4


def issue_for(edit: Edit) -> Issue:
    return Issue(
        issue_id=new_issue_id(datetime(2026, 1, 1, tzinfo=UTC)),
        session_id="s",
        step_id=1,
        manuscript_hash="0" * 64,
        text_range=edit.range,
        range_checksum=edit.checksum,
        category=CATEGORY,
        state="InProgress",
    )


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_a_placement_is_at_the_texts_new_place_or_left_to_a_person(
    edit: Edit, embedder: Embedder
) -> None:
    placed = Remapper(edit.old, edit.new, embedder=embedder).place(edit.range, edit.checksum)
    if placed.range is None:
        assert placed.attempts[-1].strategy == "manual_confirmation"
        assert placed.attempts[-1].result == "required"
        return
    assert placed.verified
    assert right_place(edit, placed.range), (
        placed.method,
        placed.confidence,
        edit.new[placed.range.start_char : placed.range.end_char],
    )


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_semantic_search_returns_exactly_the_text_it_scored_or_asks_a_person(
    edit: Edit, embedder: Embedder
) -> None:
    rng = edit.range
    remapper = Remapper(edit.old, edit.new, embedder=embedder)
    try:
        found, attempt = remapper.semantic_search(rng.start_char, rng.end_char)
    except ManualAlignmentRequired as exc:
        assert qc_code_for(exc) == "QC-013"
        return
    text = edit.new[found.start_char : found.end_char]
    assert text.strip() and text == text.strip()
    assert right_place(edit, found), (attempt.confidence, text)
    vectors = embedder.embed([edit.old_piece, text])
    assert attempt.confidence == pytest.approx(round(cosine(*vectors), 3))
    assert attempt.confidence >= SIMILARITY_THRESHOLD


@pytest.mark.parametrize("edit", MOVED, ids=[e.name for e in MOVED])
def test_the_ngram_embedder_follows_a_moved_paragraph_with_one_word_changed(edit: Edit) -> None:
    # The n-gram embedder's own figures (the rules every embedder keeps are tested above).
    embedder = NGramEmbedder()
    placed = Remapper(edit.old, edit.new, embedder=embedder).place(edit.range, edit.checksum)
    assert placed.method == "semantic_search" and placed.verified
    assert placed.range is not None
    assert (placed.range.start_char, placed.range.end_char) == edit.truth
    assert placed.confidence >= SIMILARITY_THRESHOLD


def test_text_found_again_at_two_places_is_left_to_a_person(embedder: Embedder) -> None:
    sentence = "She pushed the door open gently and walked into the dim shop."
    old = "The rain had stopped. " + sentence + " The bell above the door rang.\n"
    new = (
        "The rain had stopped at last. The bell above the door rang twice.\n"
        + sentence.replace("gently", "slowly")
        + "\nA cat slept on the counter.\n"
        + sentence.replace("dim", "dark")
        + "\n"
    )
    start = old.index(sentence)
    rng = TextRange.of(old, start, start + len(sentence))
    placed = Remapper(old, new, embedder=embedder).place(rng, sha256_text(sentence))
    assert placed.range is None and not placed.verified
    assert placed.attempts[-1].strategy == "manual_confirmation"
    semantic = [a for a in placed.attempts if a.strategy == "semantic_search"]
    assert semantic and semantic[-1].result == "failure"
    with pytest.raises(ManualAlignmentRequired) as caught:
        Remapper(old, new, embedder=embedder).semantic_search(start, start + len(sentence))
    assert qc_code_for(caught.value) == "QC-013"


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_a_problem_found_again_where_its_text_went_is_never_resolved(
    edit: Edit, embedder: Embedder
) -> None:
    # The fix did not work: the re-check reports the same problem on the text's new place.
    placed = Remapper(edit.old, edit.new, embedder=embedder).place(edit.range, edit.checksum)
    findings = [Finding(category=CATEGORY, quote=edit.new_piece, description="again")]
    verdict = judge(
        issue_for(edit),
        placed,
        old_text=edit.old,
        new_text=edit.new,
        findings=findings,
        located=locate_findings(edit.new, findings),
        embedder=embedder,
        worked=True,
    )
    assert verdict.state != "Resolved", (placed.method, placed.range)
    assert verdict.state in {"Recurrence", "Partial"}


def test_a_placement_nobody_verified_is_never_resolved(embedder: Embedder) -> None:
    edit = MOVED[0]
    # A range with no successful attempt behind it (an old record, a hand-made placement).
    unverified = Placement(
        TextRange.of(edit.new, 0, 0),
        "semantic_search",
        0.93,
        (AdjustmentAttempt(strategy="semantic_search", result="failure", confidence=0.93),),
    )
    assert not unverified.verified
    verdict = judge(
        issue_for(edit),
        unverified,
        old_text=edit.old,
        new_text=edit.new,
        findings=[],
        located=[],
        embedder=embedder,
        worked=True,
    )
    assert verdict.state == "Partial"
