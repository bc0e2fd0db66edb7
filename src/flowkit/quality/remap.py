"""Finding an issue's range again in a newer manuscript (seed 003 §3.3).

Strategies run in the seed's order and every try is recorded as ``{strategy, result,
confidence}``:

- ``exact_match``: the old range's text (its SHA-256 must be the issue's ``range_checksum``)
  found verbatim in the new text (the occurrence nearest where the diff moved the old place
  to); confidence 1.0.
- ``diff3``: the old offsets carried through a diff-match-patch diff of old and new text
  (the seed's "diff-match-patch compatible" correction); confidence 0.7-0.9 by how much of the
  10 characters right before and right after the range survived unchanged; fails below half,
  and when the range is only part of a larger rewrite (no reliable place for it inside).
- ``semantic_search``: the range with 100 characters either side embedded and compared with
  windows of the new text; the most similar window at similarity >= 0.8 wins and its
  similarity is the confidence; below that, ``ManualAlignmentRequired`` (QC-013). The work is
  bounded whatever the manuscript's size: past ``MAX_EMBEDDED_WINDOWS`` windows, only those
  sharing the most character trigrams with the range are embedded.
- ``manual_confirmation``: when all fail, recorded as ``required``; a person places the range
  (the flow's ``manual_alignment`` gate) and their confidence is kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final

from diff_match_patch import diff_match_patch  # type: ignore[import-untyped]

from .embed import Embedder, NGramEmbedder, cosine
from .errors import ManualAlignmentRequired, QualityInputError
from .models import AdjustmentAttempt, AdjustmentStrategy, TextRange, sha256_text

__all__ = [
    "CONTEXT_CHARS",
    "MAX_EMBEDDED_WINDOWS",
    "SIMILARITY_THRESHOLD",
    "Placement",
    "Remapper",
    "map_range",
]

#: Characters either side of a range compared by ``semantic_search`` (the seed's ±100).
CONTEXT_CHARS: Final = 100
#: Windows of the new text ``semantic_search`` embeds in its first pass at most; past that, a
#: cheap trigram count picks which (one every tenth of the range over a 1.9 MB manuscript was
#: ~90,000 windows, over a minute per range).
MAX_EMBEDDED_WINDOWS: Final = 256
#: Windows the search embeds at most when it closes in around the best of the first pass.
_MAX_REFINE_WINDOWS: Final = 64
#: Lowest similarity ``semantic_search`` accepts.
SIMILARITY_THRESHOLD: Final = 0.8
#: Characters either side of a range whose survival sets ``diff3``'s confidence.
_ANCHOR: Final = 10
_DIFF_EQUAL: Final = 0
_DIFF_INSERT: Final = 1


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


class Remapper:
    """Places ranges of ``old`` in ``new``; the diff is computed once for all of them."""

    def __init__(self, old: str, new: str, *, embedder: Embedder | None = None) -> None:
        if not isinstance(old, str) or not isinstance(new, str):
            raise QualityInputError("Remapper takes the old and the new manuscript text.")
        self.old, self.new = old, new
        self.embedder = embedder or NGramEmbedder()
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
        """Try every strategy in order; the first that succeeds places the range."""
        start, end = self._checked(text_range)
        attempts: list[AdjustmentAttempt] = []
        for strategy in (self.exact_match, self.diff3):
            found, attempt = strategy(start, end, range_checksum)
            attempts.append(attempt)
            if found is not None:
                return Placement(found, attempt.strategy, attempt.confidence, tuple(attempts))
        try:
            found, attempt = self.semantic_search(start, end)
            attempts.append(attempt)
            return Placement(found, "semantic_search", attempt.confidence, tuple(attempts))
        except ManualAlignmentRequired as exc:
            attempts.append(
                AdjustmentAttempt(
                    strategy="semantic_search", result="failure", confidence=exc.best_confidence
                )
            )
        attempts.append(
            AdjustmentAttempt(strategy="manual_confirmation", result="required", confidence=0.0)
        )
        return Placement(None, None, 0.0, tuple(attempts))

    # -- strategies ----------------------------------------------------------------------------

    def exact_match(
        self, start: int, end: int, range_checksum: str
    ) -> tuple[TextRange | None, AdjustmentAttempt]:
        piece = self.old[start:end]
        if not piece or sha256_text(piece) != range_checksum:
            return None, _failed("exact_match")
        hits: list[int] = []
        at = self.new.find(piece)
        while at != -1:
            hits.append(at)
            at = self.new.find(piece, at + 1)
        if not hits:
            return None, _failed("exact_match")
        # Repeated text (a refrain, a name) is found where the edits moved the range to.
        expected = self._dmp.diff_xIndex(self.diffs, start) if len(hits) > 1 else start
        best = min(hits, key=lambda h: abs(h - expected))
        return TextRange.of(self.new, best, best + len(piece)), AdjustmentAttempt(
            strategy="exact_match", result="success", confidence=1.0, adjustment_delta=best - start
        )

    def diff3(
        self, start: int, end: int, range_checksum: str = ""
    ) -> tuple[TextRange | None, AdjustmentAttempt]:
        kept = self._anchor_kept(start, end)
        if kept < 0.5:
            return None, _failed("diff3", round(0.7 + 0.2 * kept, 3))
        new_start, new_end, aligned = map_range(self.diffs, start, end)
        if not aligned:  # the range is part of a larger rewrite: no place for it in there
            return None, _failed("diff3", round(0.7 + 0.2 * kept, 3))
        confidence = round(0.7 + 0.2 * kept, 3)
        return TextRange.of(self.new, new_start, new_end), AdjustmentAttempt(
            strategy="diff3",
            result="success",
            confidence=confidence,
            adjustment_delta=new_start - start,
        )

    def semantic_search(self, start: int, end: int) -> tuple[TextRange, AdjustmentAttempt]:
        """The window of the new text most like the range with its context, at >= 0.8.

        Raises:
            ManualAlignmentRequired: no window is similar enough (QC-013).
        """
        w_start = max(0, start - CONTEXT_CHARS)
        w_end = min(len(self.old), end + CONTEXT_CHARS)
        window = self.old[w_start:w_end]
        length = len(window)
        if not window.strip() or not self.new:
            raise ManualAlignmentRequired("Nothing to compare the range with.")
        step = max(1, length // 10)
        starts = self._likeliest(window, range(0, max(1, len(self.new) - length + 1), step))
        best_at, best = self._best(window, starts, length)
        # Every character around the best window while that is few; a stride past that.
        near_step = max(1, (2 * step + 1) // _MAX_REFINE_WINDOWS)
        near = range(max(0, best_at - step), min(len(self.new), best_at + step + 1), near_step)
        best_at, best = max(
            (self._best(window, list(near), length), (best_at, best)), key=lambda x: x[1]
        )
        if best < SIMILARITY_THRESHOLD:
            raise ManualAlignmentRequired(
                f"The most similar passage is only {best:.2f} alike (needs "
                f"{SIMILARITY_THRESHOLD}); confirm the range by hand.",
                best_confidence=round(max(0.0, min(1.0, best)), 3),
            )
        candidate = self.new[best_at : best_at + length]
        # Character-level alignment inside the window: its small equalities are the anchors.
        inner = self._dmp.diff_main(window, candidate)
        in_start, in_end, _ = map_range(inner, start - w_start, end - w_start)
        new_start, new_end = best_at + in_start, min(best_at + in_end, len(self.new))
        confidence = round(min(1.0, best), 3)
        return TextRange.of(self.new, new_start, new_end), AdjustmentAttempt(
            strategy="semantic_search",
            result="success",
            confidence=confidence,
            adjustment_delta=new_start - start,
        )

    # -- helpers -------------------------------------------------------------------------------

    def _likeliest(self, window: str, starts: range) -> list[int]:
        """The window starts worth embedding: all of them up to ``MAX_EMBEDDED_WINDOWS``, else
        those whose text shares the most character trigrams with ``window`` (in text order).

        Counting is one pass over the new text (prefix sums of trigram hits), so it costs the
        same whatever the range's length, unlike embedding every window.
        """
        if len(starts) <= MAX_EMBEDDED_WINDOWS:
            return list(starts)
        n = min(3, len(window))
        grams = {window[i : i + n] for i in range(len(window) - n + 1)}
        new = self.new
        hits = list(
            accumulate((new[i : i + n] in grams for i in range(len(new) - n + 1)), initial=0)
        )
        last = len(hits) - 1
        span = len(window) - n + 1

        def shared(start: int) -> int:
            return hits[min(start + span, last)] - hits[start]

        return sorted(heapq.nlargest(MAX_EMBEDDED_WINDOWS, starts, key=shared))

    def _best(self, window: str, starts: Sequence[int], length: int) -> tuple[int, float]:
        if not starts:
            return 0, 0.0
        vectors = self.embedder.embed([window, *(self.new[s : s + length] for s in starts)])
        target = vectors[0]
        scored = [(cosine(target, v), -abs(s), s) for s, v in zip(starts, vectors[1:], strict=True)]
        score, _, at = max(scored)
        return at, score

    def _anchor_kept(self, start: int, end: int) -> float:
        """How firmly the range is anchored: the unchanged run of text the diff leaves right
        before ``start`` and right after ``end``, each up to ``_ANCHOR`` characters, as a share
        of what the text has there. The range's own rewrite does not count against it."""
        want_before = min(_ANCHOR, start)
        want_after = min(_ANCHOR, len(self.old) - end)
        if want_before + want_after == 0:
            return 1.0 if self.old == self.new else 0.0
        before = after = 0
        position = 0
        for op, text in self.diffs:
            if op == _DIFF_INSERT:
                continue
            span = (position, position + len(text))
            if op == _DIFF_EQUAL:
                if span[0] < start <= span[1]:
                    before = min(want_before, start - span[0])
                if span[0] <= end < span[1]:
                    after = min(want_after, span[1] - end)
            position = span[1]
        return (before + after) / (want_before + want_after)

    def _checked(self, text_range: Any) -> tuple[int, int]:
        if not isinstance(text_range, TextRange) or text_range.end_char > len(self.old):
            raise QualityInputError("The range is not a TextRange inside the old manuscript.")
        return text_range.start_char, text_range.end_char


def map_range(diffs: Sequence[tuple[int, str]], start: int, end: int) -> tuple[int, int, bool]:
    """Carry ``[start, end)`` of the old text through ``diffs`` to the new text.

    A boundary in unchanged text moves with it. A range that begins in rewritten text begins
    where the rewrite begins; one that ends in rewritten text takes the whole rewrite (what
    was inserted in place of the deleted part), so a reworded range maps to its new wording.
    The flag says whether both boundaries fell on unchanged text or on the edge of a rewrite:
    a boundary inside a rewrite that reaches past it cannot be placed with confidence.
    """
    old_pos = new_pos = 0
    new_start = new_end = None
    aligned = True
    ops = list(diffs)
    for index, (op, text) in enumerate(ops):
        size = len(text)
        if op == _DIFF_INSERT:
            new_pos += size
            continue
        if new_start is None and start < old_pos + size:
            new_start = new_pos + (start - old_pos if op == _DIFF_EQUAL else 0)
            aligned = op == _DIFF_EQUAL or start == old_pos
        if new_start is not None and end <= old_pos + size:
            if end == start:
                new_end = new_start
            elif op == _DIFF_EQUAL:
                new_end = new_pos + (end - old_pos)
            else:  # in a deletion: take the insertions that replace this block
                aligned = aligned and end == old_pos + size
                after = new_pos
                for later_op, later_text in ops[index + 1 :]:
                    if later_op == _DIFF_EQUAL:
                        break
                    if later_op == _DIFF_INSERT:
                        after += len(later_text)
                new_end = after
            break
        old_pos += size
        if op == _DIFF_EQUAL:
            new_pos += size
    if new_start is None:  # at the very end of the old text
        new_start = new_pos
    if new_end is None:
        new_end = new_pos
    return new_start, max(new_start, new_end), aligned


def _failed(strategy: AdjustmentStrategy, confidence: float = 0.0) -> AdjustmentAttempt:
    return AdjustmentAttempt(strategy=strategy, result="failure", confidence=min(confidence, 1.0))
