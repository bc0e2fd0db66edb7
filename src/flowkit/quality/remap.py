"""Finding an issue's range again in a newer manuscript (seed 003 §3.3).

Strategies run in the seed's order and every try is recorded as ``{strategy, result,
confidence}``:

- ``exact_match``: the old range's text (its SHA-256 must be the issue's ``range_checksum``)
  found verbatim in the new text (the occurrence nearest where the diff moved the old place
  to); confidence 1.0. When the diff carries the range onto text edited in place, a copy
  elsewhere is another occurrence, or, standing among the range's old neighbours, a rival
  place that a person must choose between (QC-013).
- ``diff3``: the old offsets carried through a diff-match-patch diff of old and new text
  (the seed's "diff-match-patch compatible" correction); confidence 0.7-0.9 by how much of the
  10 characters right before and right after the range survived unchanged. Below half (the
  passage moved), the range is carried between its nearest neighbours that occur once in
  each text, by a diff of what lies between them. A range inside a larger edit takes that
  edit's new text (confidence 0.7) when long unchanged runs bound it and it is at most about
  twice the range's length; otherwise ``diff3`` fails.
- ``semantic_search``: spans of the new text scored by their similarity with the range's own
  text; the best place is refined and the longest candidate there at similarity >= 0.8 wins,
  its similarity the confidence. The range returned is exactly a scored candidate (never an
  empty or shifted range). Below 0.8 (or the embedder's own ``similarity_threshold``, for a
  model whose cosines run high), or when passages at different places are about as similar
  (``AMBIGUITY_MARGIN``), ``ManualAlignmentRequired`` (QC-013). The seed's 100
  characters of context either side are not compared: a moved passage leaves them behind, and
  comparing them placed a moved paragraph at its old neighbours. The work is bounded whatever
  the manuscript's size: past ``MAX_EMBEDDED_WINDOWS`` windows, only those sharing the most
  character trigrams with the range are embedded. A range ``diff3`` finds deleted, or places
  only as the whole edit around it, is looked for this way first, so text that moved is never
  reported gone or rewritten.
- ``manual_confirmation``: when all fail, recorded as ``required``; a person places the range
  (the flow's ``manual_alignment`` gate) and their confidence is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from diff_match_patch import diff_match_patch  # type: ignore[import-untyped]

from ._candidates import (
    MAX_EMBEDDED_WINDOWS,
    Candidate,
    Scorer,
    clamp,
    distinct,
    likeliest,
    overlap,
    refine,
)
from ._diffmap import ANCHOR as _ANCHOR
from ._diffmap import anchored, edit_block, map_range
from .embed import Embedder, NGramEmbedder
from .errors import ManualAlignmentRequired, QualityInputError
from .models import AdjustmentAttempt, AdjustmentStrategy, TextRange, sha256_text

__all__ = [
    "AMBIGUITY_MARGIN",
    "MAX_EMBEDDED_WINDOWS",
    "SIMILARITY_THRESHOLD",
    "Placement",
    "Remapper",
    "map_range",
    "similarity_threshold",
]

#: Lowest similarity ``semantic_search`` accepts, unless the embedder has its own
#: ``similarity_threshold`` (a neural model's cosines run high: unrelated sentences of one
#: story score 0.8-0.9 with multilingual-e5-small).
SIMILARITY_THRESHOLD: Final = 0.8
#: Passages at different places whose similarities are within this of each other are too
#: close to choose between: a person confirms which one is the range (QC-013).
AMBIGUITY_MARGIN: Final = 0.05
#: At the chosen place, the refined span and the character-aligned one within this of each
#: other count as equally good and the longer wins (the seed's "longest candidate").
_LONGEST_MARGIN: Final = 0.02
#: A first-pass window this far below the best refined place cannot come close after refining.
_COARSE_SLACK: Final = 0.05
#: Distinct places refined at most (the best and its rivals).
_MAX_PLACES: Final = 3
#: How far before and after a range ``diff3`` looks for unchanged neighbours that occur once
#: (to follow a passage that moved).
_NEIGHBOURHOOD: Final = 40


def similarity_threshold(embedder: Embedder) -> float:
    """The lowest similarity that places a range with ``embedder``: its own
    ``similarity_threshold`` when it has one in (0, 1], else ``SIMILARITY_THRESHOLD``."""
    value = getattr(embedder, "similarity_threshold", None)
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return SIMILARITY_THRESHOLD


@dataclass(frozen=True)
class Placement:
    """Where a range is in the new text (``range`` is ``None`` when no strategy placed it)."""

    range: TextRange | None
    method: AdjustmentStrategy | None
    confidence: float
    attempts: tuple[AdjustmentAttempt, ...]

    @property
    def placed(self) -> bool:
        return self.range is not None

    @property
    def verified(self) -> bool:
        """Whether the strategy that placed the range checked it (its attempt succeeded): the
        text there is the text it matched, or a person placed it. Only a verified range can
        lead to ``Resolved``."""
        return self.range is not None and any(
            a.strategy == self.method and a.result == "success" for a in self.attempts
        )


class Remapper:
    """Places ranges of ``old`` in ``new``; the diff is computed once for all of them."""

    def __init__(self, old: str, new: str, *, embedder: Embedder | None = None) -> None:
        if not isinstance(old, str) or not isinstance(new, str):
            raise QualityInputError("Remapper takes the old and the new manuscript text.")
        self.old, self.new = old, new
        self.embedder = embedder or NGramEmbedder()
        self.threshold = similarity_threshold(self.embedder)
        self._dmp: Any = diff_match_patch()
        self._dmp.Diff_Timeout = 2.0
        self._diffs: list[tuple[int, str]] | None = None

    @property
    def diffs(self) -> list[tuple[int, str]]:
        if self._diffs is None:
            diffs = self._dmp.diff_main(self.old, self.new)
            self._dmp.diff_cleanupSemantic(diffs)
            self._diffs = diffs
        return self._diffs

    def place(self, text_range: TextRange, range_checksum: str) -> Placement:
        """Try every strategy in order; the first that succeeds places the range.

        A range ``diff3`` finds deleted is looked for elsewhere first: text that moved is
        placed where it went (or left to a person when it is at several places), never
        reported gone. So is a range ``diff3`` can only place as the whole edit around it.
        A range edited where it was, whose old text is also found elsewhere with its old
        neighbours, is left to a person: either place may be the issue's passage now.
        """
        start, end = self._checked(text_range)
        attempts: list[AdjustmentAttempt] = []
        found, attempt, ambiguous = self._exact(start, end, range_checksum)
        attempts.append(attempt)
        if found is not None:
            return Placement(found, "exact_match", attempt.confidence, tuple(attempts))
        if ambiguous:
            attempts.append(_failed("diff3", round(0.7 + 0.2 * self._anchor_kept(start, end), 3)))
            return _manual(attempts)
        mapped = self._mapped(start, end)
        found, attempt = self._diff3_attempt(start, end, mapped)
        if found is not None and found.start_char == found.end_char and start < end:
            return self._deleted_or_moved(start, end, found, attempt, attempts)
        if mapped is not None and not mapped.exact and found is not None:
            return self._rewritten_or_moved(start, end, found, attempt, attempts)
        attempts.append(attempt)
        if found is not None:
            return Placement(found, "diff3", attempt.confidence, tuple(attempts))
        try:
            found, attempt = self.semantic_search(start, end)
            attempts.append(attempt)
            return Placement(found, "semantic_search", attempt.confidence, tuple(attempts))
        except ManualAlignmentRequired as exc:
            attempts.append(_failed("semantic_search", exc.best_confidence))
        return _manual(attempts)

    def _rewritten_or_moved(
        self,
        start: int,
        end: int,
        edit: TextRange,
        rewritten: AdjustmentAttempt,
        attempts: list[AdjustmentAttempt],
    ) -> Placement:
        """The range is inside an edit that ``diff3`` can only place as a whole: its text may
        have moved (placed where it went), else the edit that replaced it is its place."""
        try:
            moved, attempt = self.semantic_search(start, end)
        except ManualAlignmentRequired as exc:
            # Nothing like it anywhere, even loosely (as for a deletion): the edit is its place.
            if exc.best_confidence < min(self.threshold, SIMILARITY_THRESHOLD):
                attempts += [_failed("semantic_search", exc.best_confidence), rewritten]
                return Placement(edit, "diff3", rewritten.confidence, tuple(attempts))
            attempts += [
                _failed("diff3", rewritten.confidence),
                _failed("semantic_search", exc.best_confidence),
            ]
            return _manual(attempts)
        attempts += [_failed("diff3", rewritten.confidence), attempt]
        return Placement(moved, "semantic_search", attempt.confidence, tuple(attempts))

    def _deleted_or_moved(
        self,
        start: int,
        end: int,
        gap: TextRange,
        deleted: AdjustmentAttempt,
        attempts: list[AdjustmentAttempt],
    ) -> Placement:
        try:
            moved, attempt = self.semantic_search(start, end)
        except ManualAlignmentRequired as exc:
            # Nowhere else, even loosely (below the seed's 0.8 whatever the embedder's own
            # threshold): it was deleted. Between the two, it may have moved: a person decides.
            if exc.best_confidence < min(self.threshold, SIMILARITY_THRESHOLD):
                attempts.append(deleted)
                return Placement(gap, "diff3", deleted.confidence, tuple(attempts))
            # Found at several places: gone from here, but where it went needs a person.
            attempts += [
                _failed("diff3", deleted.confidence),
                _failed("semantic_search", exc.best_confidence),
            ]
            return _manual(attempts)
        attempts += [_failed("diff3", deleted.confidence), attempt]
        return Placement(moved, "semantic_search", attempt.confidence, tuple(attempts))

    # -- strategies ----------------------------------------------------------------------------

    def exact_match(
        self, start: int, end: int, range_checksum: str
    ) -> tuple[TextRange | None, AdjustmentAttempt]:
        found, attempt, _ = self._exact(start, end, range_checksum)
        return found, attempt

    def _exact(
        self, start: int, end: int, range_checksum: str
    ) -> tuple[TextRange | None, AdjustmentAttempt, bool]:
        """``exact_match``, and whether the old text found elsewhere makes the range's place
        ambiguous (then nothing is found and the flag is set).

        When the diff carries the range, neighbours and all, onto text that is no longer the
        range's (it was edited where it was), a verbatim copy of the old text elsewhere is
        not the range: it is another occurrence, unless it stands among the range's old
        neighbours too, and then either place may be the issue's passage (a person decides).
        """
        piece = self.old[start:end]
        if not piece or sha256_text(piece) != range_checksum:
            return None, _failed("exact_match"), False
        hits: list[int] = []
        at = self.new.find(piece)
        while at != -1:
            hits.append(at)
            at = self.new.find(piece, at + 1)
        if not hits:
            return None, _failed("exact_match"), False
        here = self._in_place(start, end)
        if here is not None and self.old.count(piece) == 1 and self.new[here[0] : here[1]] != piece:
            kept = max(self._context_kept(start, end, hit) for hit in hits)
            return None, _failed("exact_match", kept), kept >= 0.5
        # Repeated text (a refrain, a name) is found where the edits moved the range to.
        expected = self._dmp.diff_xIndex(self.diffs, start) if len(hits) > 1 else start
        best = min(hits, key=lambda h: abs(h - expected))
        return (
            TextRange.of(self.new, best, best + len(piece)),
            AdjustmentAttempt(
                strategy="exact_match",
                result="success",
                confidence=1.0,
                adjustment_delta=best - start,
            ),
            False,
        )

    def diff3(
        self, start: int, end: int, range_checksum: str = ""
    ) -> tuple[TextRange | None, AdjustmentAttempt]:
        return self._diff3_attempt(start, end, self._mapped(start, end))

    def _diff3_attempt(
        self, start: int, end: int, mapped: _Mapped | None
    ) -> tuple[TextRange | None, AdjustmentAttempt]:
        if mapped is None:
            return None, _failed("diff3", round(0.7 + 0.2 * self._anchor_kept(start, end), 3))
        return TextRange.of(self.new, mapped.start, mapped.end), AdjustmentAttempt(
            strategy="diff3",
            result="success",
            confidence=mapped.confidence,
            adjustment_delta=mapped.start - start,
        )

    def _mapped(self, start: int, end: int) -> _Mapped | None:
        """Where the diff carries the range: through unchanged text in place; else by its
        unchanged neighbours found again elsewhere (a moved passage); else the whole edit it
        is part of, between unchanged text (``exact`` false)."""
        here = self._in_place(start, end)
        if here is not None:
            kept = self._anchor_kept(start, end)
            return _Mapped(here[0], here[1], True, round(0.7 + 0.2 * kept, 3))
        if start < end:
            moved = self._relocated(start, end)
            if moved is not None:
                return moved
            edit = edit_block(self.diffs, start, end)
            if edit is not None:
                return _Mapped(edit[0], edit[1], False, 0.7)
        return None

    def _in_place(self, start: int, end: int) -> tuple[int, int] | None:
        """The range carried through the diff, when its edges are on unchanged text (or the
        edges of an edit of its own) and at least half its immediate neighbours survived."""
        if self._anchor_kept(start, end) < 0.5:
            return None
        new_start, new_end, aligned = map_range(self.diffs, start, end)
        return (new_start, new_end) if aligned else None

    def _relocated(self, start: int, end: int) -> _Mapped | None:
        """The range placed by its neighbours: the nearest runs of ``_ANCHOR`` characters
        before and after it (within ``_NEIGHBOURHOOD``) that occur once in each text, in
        order and not far apart in the new text; what lies between is diffed on its own and
        the range carried through that diff. ``None`` when no such pair exists."""
        old, new = self.old, self.new
        left = next(
            (
                (p, at + _ANCHOR)
                for p in range(start, max(_ANCHOR, start - _NEIGHBOURHOOD) - 1, -1)
                if (at := self._once(old[p - _ANCHOR : p])) is not None
            ),
            None,
        )
        if left is None:
            return None
        right = next(
            (
                (q, at)
                for q in range(end, min(len(old) - _ANCHOR, end + _NEIGHBOURHOOD) + 1)
                if (at := self._once(old[q : q + _ANCHOR])) is not None
            ),
            None,
        )
        if right is None:
            return None
        (p, new_p), (q, new_q) = left, right
        if not 0 <= new_q - new_p <= 2 * (q - p) + 2 * _ANCHOR:
            return None
        # The local texts keep the anchors, so the range's neighbours are measured in them.
        lo, new_lo = p - _ANCHOR, new_p - _ANCHOR
        local: list[tuple[int, str]] = self._dmp.diff_main(
            old[lo : q + _ANCHOR], new[new_lo : new_q + _ANCHOR]
        )
        self._dmp.diff_cleanupSemantic(local)
        a, b = start - lo, end - lo
        kept = anchored(local, q + _ANCHOR - lo, a, b)
        new_a, new_b, aligned = map_range(local, a, b)
        if kept < 0.5 or not aligned:  # anchors that merely happen to occur once each
            return None
        return _Mapped(new_lo + new_a, new_lo + new_b, True, round(0.7 + 0.2 * kept, 3))

    def _once(self, text: str) -> int | None:
        """Where ``text`` is in the new text, when it occurs exactly once in each text."""
        if len(text) < _ANCHOR or text.isspace():
            return None
        at = self.new.find(text)
        if at == -1 or self.new.find(text, at + 1) != -1:
            return None
        first = self.old.find(text)
        return at if self.old.find(text, first + 1) == -1 else None

    def _context_kept(self, start: int, end: int, at: int) -> float:
        """How much of the range's old neighbours (``_ANCHOR`` characters either side) stand
        around the copy of its text at ``at`` of the new text."""
        before = self.old[max(0, start - _ANCHOR) : start]
        after = self.old[end : end + _ANCHOR]
        if not before and not after:
            return 1.0
        new_end = at + (end - start)
        there_before = self.new[max(0, at - _ANCHOR) : at]
        there_after = self.new[new_end : new_end + _ANCHOR]
        same_before = next(
            (
                i
                for i in range(len(before))
                if i >= len(there_before) or before[-1 - i] != there_before[-1 - i]
            ),
            len(before),
        )
        same_after = next(
            (i for i in range(len(after)) if i >= len(there_after) or after[i] != there_after[i]),
            len(after),
        )
        return (same_before + same_after) / (len(before) + len(after))

    def semantic_search(self, start: int, end: int) -> tuple[TextRange, AdjustmentAttempt]:
        """The passage of the new text most like the range's text, at similarity >= 0.8.

        Candidates are spans of the new text (never starting or ending in whitespace) scored
        by the similarity of their own text with the range's; the returned range is exactly
        a scored candidate, so its text is the text that got the confidence. The best place
        is refined span by span; there, the longest candidate within ``_LONGEST_MARGIN`` of the
        best wins (the seed's "longest candidate at >= 0.8").

        Raises:
            ManualAlignmentRequired: nothing is similar enough, or passages at different
                places are about as similar (QC-013); ``best_confidence`` is the best found.
        """
        piece = self.old[start:end]
        if not piece.strip() or not self.new.strip():
            raise ManualAlignmentRequired("The range has no text to look for; place it by hand.")
        scorer = Scorer(self.embedder, piece, self.new)
        length = len(piece)
        step = max(1, length // 10)
        starts = likeliest(self.new, piece, range(0, max(1, len(self.new) - length + 1), step))
        coarse = scorer.score([(s, s + length) for s in starts])
        places: list[Candidate] = []
        for seed in distinct(coarse):
            if places and seed.score < places[0].score - AMBIGUITY_MARGIN - _COARSE_SLACK:
                break
            refined = refine(scorer, seed, step)
            if not any(overlap(refined, p) for p in places):
                places.append(refined)
                places.sort(key=lambda c: -c.score)
            if len(places) >= _MAX_PLACES:
                break
        best = places[0] if places else None
        if best is None or best.score < self.threshold:
            found = best.score if best else 0.0
            raise ManualAlignmentRequired(
                f"The most similar passage is only {found:.2f} alike (needs "
                f"{self.threshold}); confirm the range by hand.",
                best_confidence=clamp(found),
            )
        rivals = [p for p in places[1:] if p.score >= best.score - AMBIGUITY_MARGIN]
        if rivals:
            where = ", ".join(str(p.start) for p in (best, *rivals))
            raise ManualAlignmentRequired(
                f"Passages at characters {where} are about as similar ({best.score:.2f}); "
                "confirm which one is the range by hand.",
                best_confidence=clamp(best.score),
            )
        # The refined span, and the span a character alignment with the range gives there
        # (exact edges when most of the text survived); the longest of those that score within
        # ``_LONGEST_MARGIN`` of the better one wins.
        pool = [best, *self._aligned(scorer, piece, best)]
        floor = max(self.threshold, max(c.score for c in pool) - _LONGEST_MARGIN)
        chosen = max(
            (c for c in pool if c.score >= floor), key=lambda c: (c.end - c.start, c.score)
        )
        # The range handed back is the scored text itself: never an empty or shifted range.
        if self.new[chosen.start : chosen.end] != chosen.text or not chosen.text.strip():
            raise ManualAlignmentRequired(  # pragma: no cover - a bug guard, not a branch
                "The matched passage could not be verified; confirm the range by hand.",
                best_confidence=clamp(chosen.score),
            )
        confidence = clamp(chosen.score)
        return TextRange.of(self.new, chosen.start, chosen.end), AdjustmentAttempt(
            strategy="semantic_search",
            result="success",
            confidence=confidence,
            adjustment_delta=chosen.start - start,
        )

    def _aligned(self, scorer: Scorer, piece: str, best: Candidate) -> list[Candidate]:
        """The span of the text around ``best`` that a character diff aligns with ``piece``."""
        pad = max(_ANCHOR, len(piece) // 4)
        lo, hi = max(0, best.start - pad), min(len(self.new), best.end + pad)
        inner = self._dmp.diff_main(piece, self.new[lo:hi])
        a, b, _ = map_range(inner, 0, len(piece))
        return scorer.score([(lo + a, lo + b)])

    # -- helpers -------------------------------------------------------------------------------

    def _anchor_kept(self, start: int, end: int) -> float:
        """How firmly the range is anchored in the diff of the whole texts (``anchored``)."""
        if start == 0 and end == len(self.old):
            return 1.0 if self.old == self.new else 0.0
        return anchored(self.diffs, len(self.old), start, end)

    def _checked(self, text_range: Any) -> tuple[int, int]:
        if not isinstance(text_range, TextRange) or text_range.end_char > len(self.old):
            raise QualityInputError("The range is not a TextRange inside the old manuscript.")
        return text_range.start_char, text_range.end_char


def _failed(strategy: AdjustmentStrategy, confidence: float = 0.0) -> AdjustmentAttempt:
    return AdjustmentAttempt(strategy=strategy, result="failure", confidence=min(confidence, 1.0))


def _manual(attempts: list[AdjustmentAttempt]) -> Placement:
    attempts.append(
        AdjustmentAttempt(strategy="manual_confirmation", result="required", confidence=0.0)
    )
    return Placement(None, None, 0.0, tuple(attempts))


@dataclass(frozen=True)
class _Mapped:
    """Where ``diff3`` carries a range: ``[start, end)`` of the new text; ``exact`` when its
    edges were carried through unchanged text, else the span is the whole edit around it."""

    start: int
    end: int
    exact: bool
    confidence: float
