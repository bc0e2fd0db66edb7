"""Spans of a new text scored against a range's text, for ``remap``'s ``semantic_search``."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from .embed import Embedder, cosine

__all__ = [
    "MAX_EMBEDDED_WINDOWS",
    "Candidate",
    "Scorer",
    "clamp",
    "distinct",
    "likeliest",
    "overlap",
    "refine",
]

#: Windows of the new text ``semantic_search`` embeds in its first pass at most; past that, a
#: cheap trigram count picks which (one every tenth of the range over a 1.9 MB manuscript was
#: ~90,000 windows, over a minute per range).
MAX_EMBEDDED_WINDOWS: Final = 256
#: Strides a refining step moves a start or an end by, and rounds per stride at most.
MOVES: Final = (-2, -1, 1, 2)
REFINE_ROUNDS: Final = 3


def clamp(score: float) -> float:
    return round(max(0.0, min(1.0, score)), 3)


@dataclass(frozen=True)
class Candidate:
    """A span ``[start, end)`` of the new text, its text and its similarity to the range."""

    start: int
    end: int
    text: str
    score: float


def overlap(a: Candidate, b: Candidate) -> bool:
    return min(a.end, b.end) > max(a.start, b.start)


def distinct(candidates: Sequence[Candidate]) -> Iterator[Candidate]:
    """The best candidate of each place, best first (a place: candidates that overlap)."""
    taken: list[Candidate] = []
    for candidate in sorted(candidates, key=lambda c: (-c.score, c.start)):
        if not any(overlap(candidate, t) for t in taken):
            taken.append(candidate)
            yield candidate


class Scorer:
    """Similarity of spans of ``new`` to ``piece``; each span is trimmed of surrounding
    whitespace and embedded once, so what is scored is exactly the text a range would hold."""

    def __init__(self, embedder: Embedder, piece: str, new: str) -> None:
        self.embedder, self.piece, self.new = embedder, piece, new
        self.target = embedder.embed([piece])[0]
        self.seen: dict[tuple[int, int], Candidate] = {}

    def score(self, spans: Sequence[tuple[int, int]]) -> list[Candidate]:
        wanted = dict.fromkeys(t for t in (self._trimmed(s, e) for s, e in spans) if t)
        fresh = [span for span in wanted if span not in self.seen]
        if fresh:
            texts = [self.new[s:e] for s, e in fresh]
            vectors = self.embedder.embed(texts)
            for (s, e), text, vector in zip(fresh, texts, vectors, strict=True):
                self.seen[(s, e)] = Candidate(s, e, text, cosine(self.target, vector))
        return [self.seen[span] for span in wanted]

    def _trimmed(self, start: int, end: int) -> tuple[int, int] | None:
        new = self.new
        start, end = max(0, start), min(len(new), end)
        while start < end and new[start].isspace():
            start += 1
        while end > start and new[end - 1].isspace():
            end -= 1
        return (start, end) if start < end else None


def refine(scorer: Scorer, seed: Candidate, step: int) -> Candidate:
    """Move the candidate's start and end while that raises its similarity, by strides
    shrinking from ``step`` to one character (a bounded number of embeddings); its length
    stays between half and twice the range's."""
    best = seed
    stride = step
    # A passage rewritten to under half or over twice its length is not this range.
    shortest, longest = max(1, len(scorer.piece) // 2), 2 * len(scorer.piece)
    while True:
        for _ in range(REFINE_ROUNDS):
            moves = [(best.start + k * stride, best.end) for k in MOVES]
            moves += [(best.start, best.end + k * stride) for k in MOVES]
            tried = scorer.score([(a, b) for a, b in moves if shortest <= b - a <= longest])
            top = max(tried, key=lambda c: c.score, default=best)
            if top.score <= best.score:
                break
            best = top
        if stride == 1:
            return best
        stride = max(1, stride // 4)


def likeliest(new: str, window: str, starts: range) -> list[int]:
    """The window starts of ``new`` worth embedding: all of them up to
    ``MAX_EMBEDDED_WINDOWS``, else those whose text shares the most character trigrams with
    ``window`` (the range's text; in text order).

    Counting is one pass over the new text (prefix sums of trigram hits), so it costs the
    same whatever the range's length, unlike embedding every window.
    """
    if len(starts) <= MAX_EMBEDDED_WINDOWS:
        return list(starts)
    n = min(3, len(window))
    grams = {window[i : i + n] for i in range(len(window) - n + 1)}
    hits = list(accumulate((new[i : i + n] in grams for i in range(len(new) - n + 1)), initial=0))
    last = len(hits) - 1
    span = len(window) - n + 1

    def shared(start: int) -> int:
        return hits[min(start + span, last)] - hits[start]

    return sorted(heapq.nlargest(MAX_EMBEDDED_WINDOWS, starts, key=shared))
