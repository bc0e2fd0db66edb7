"""Deciding what a re-check made of one issue: where its range is now, how strongly the
re-check found it again (``recurrence_score``), and the lifecycle verdict.

The recurrence score of an issue is the best match among the re-check's findings of the same
category that overlap the issue's new range: ``0.6 * overlap + 0.4 * similarity``, where
``overlap`` is the share of the shorter range they have in common and ``similarity`` the
embedder's cosine between the finding's quote and the issue's old text. A finding elsewhere
in the manuscript is not this issue coming back, so it scores 0; which is why only a verified
placement is judged at all (an unverified one waits for a person, never ``Resolved``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .embed import Embedder, cosine
from .lifecycle import Verification, verdict
from .models import AdjustmentAttempt, Issue, IssueState, TextRange, sha256_text
from .remap import Placement
from .state import Finding

__all__ = ["Judgement", "judge", "locate", "locate_findings"]


def locate(text: str, quote: str, *, taken: frozenset[int] = frozenset()) -> TextRange | None:
    """Where ``quote`` is in ``text`` (the first occurrence not in ``taken``), if anywhere."""
    if not quote:
        return None
    at = text.find(quote)
    while at != -1 and at in taken:
        at = text.find(quote, at + 1)
    return None if at == -1 else TextRange.of(text, at, at + len(quote))


def locate_findings(text: str, findings: Sequence[Finding]) -> list[TextRange | None]:
    """Each finding's range in ``text`` (repeated quotes take successive occurrences)."""
    taken: dict[str, set[int]] = {}
    out: list[TextRange | None] = []
    for finding in findings:
        used = taken.setdefault(finding.quote, set())
        found = locate(text, finding.quote, taken=frozenset(used))
        if found is not None:
            used.add(found.start_char)
        out.append(found)
    return out


class Judgement:
    """The outcome for one issue: its new place, score, state and the findings it explains."""

    def __init__(
        self,
        *,
        state: IssueState,
        placement: Placement,
        new_checksum: str | None,
        recurrence_score: float,
        checksum_changed: bool,
        matched: tuple[int, ...],
    ) -> None:
        self.state = state
        self.placement = placement
        self.new_checksum = new_checksum
        self.recurrence_score = recurrence_score
        self.checksum_changed = checksum_changed
        self.matched = matched


def _overlap(a: TextRange, b: TextRange) -> float:
    if b.start_char == b.end_char:  # the issue's text was deleted: touching counts half
        return 0.5 if a.start_char <= b.start_char <= a.end_char else 0.0
    common = min(a.end_char, b.end_char) - max(a.start_char, b.start_char)
    shorter = min(a.end_char - a.start_char, b.end_char - b.start_char)
    return max(0, common) / max(1, shorter)


def _needs_a_person(placement: Placement) -> Placement:
    if placement.range is None:
        return placement
    required = AdjustmentAttempt(strategy="manual_confirmation", result="required", confidence=0.0)
    return Placement(None, None, 0.0, (*placement.attempts, required))


def judge(
    issue: Issue,
    placement: Placement,
    *,
    old_text: str,
    new_text: str,
    findings: Sequence[Finding],
    located: Sequence[TextRange | None],
    embedder: Embedder,
    worked: bool,
) -> Judgement:
    """The verdict on ``issue`` given where its range was placed in ``new_text``.

    Only a verified placement (``Placement.verified``) is judged: any other leaves the issue
    ``Partial`` with its range waiting for a person (QC-013), so a problem whose text moved
    is never closed as fixed because its range was looked for in the wrong place.
    """
    if placement.range is None or not placement.verified:
        return Judgement(
            state="Partial",
            placement=_needs_a_person(placement),
            new_checksum=None,
            recurrence_score=0.0,
            checksum_changed=False,
            matched=(),
        )
    new_checksum = sha256_text(new_text[placement.range.start_char : placement.range.end_char])
    changed = new_checksum != issue.range_checksum
    old_piece = old_text[issue.text_range.start_char : issue.text_range.end_char]
    score, matched = 0.0, []
    candidates = [
        (i, f, r)
        for i, (f, r) in enumerate(zip(findings, located, strict=True))
        if r is not None and f.category == issue.category
    ]
    if candidates:
        vectors = embedder.embed([old_piece, *(f.quote for _, f, _ in candidates)])
        for (index, _, found), vector in zip(candidates, vectors[1:], strict=True):
            assert found is not None
            position = _overlap(found, placement.range)
            if position > 0:
                matched.append(index)
                score = max(score, 0.6 * position + 0.4 * max(0.0, cosine(vectors[0], vector)))
    score = round(min(1.0, score), 3)
    state: IssueState = issue.state
    if worked:
        state = verdict(
            Verification(
                recurrence_score=score,
                checksum_changed=changed,
                category_matches=bool(matched),
                confidence=placement.confidence,
            )
        )
    return Judgement(
        state=state,
        placement=placement,
        new_checksum=new_checksum,
        recurrence_score=score,
        checksum_changed=changed,
        matched=tuple(matched),
    )
