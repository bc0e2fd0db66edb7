"""``semantic_search`` does bounded work on a manuscript near the 2 MB limit: it embeds at most
a few hundred windows whatever the manuscript's length (it embedded one window every tenth of
the range's length, ~90,000 on 1.9 MB), and still finds the passage."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from flowkit.quality.embed import NGramEmbedder
from flowkit.quality.remap import Remapper

#: Texts embedded by one search, whatever the manuscript's size.
BOUND = 400
SIZE = 1_900_000


class CountingEmbedder:
    """The default embedder, counting the texts it is given."""

    def __init__(self) -> None:
        self.inner = NGramEmbedder()
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return self.inner.embed(texts)


def prose(size: int, seed: int) -> str:
    """Text of kana and common kanji with punctuation and line breaks, never repeating."""
    rng = random.Random(seed)
    alphabet = [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x4E00, 0x4F00)]
    text = "".join("。\n" if rng.random() < 0.03 else rng.choice(alphabet) for _ in range(size))
    return text[:size]


@pytest.mark.parametrize("range_chars", [40, 5_000], ids=["a_phrase", "a_long_passage"])
def test_semantic_search_on_a_1_9_mb_manuscript_embeds_a_bounded_number_of_windows(
    range_chars: int,
) -> None:
    before, passage, after = prose(100, seed=1), prose(range_chars, seed=2), prose(100, seed=3)
    old = prose(1_000, seed=4) + before + passage + after + prose(1_000, seed=5)
    middle = range_chars // 2  # a word changed in the middle of the range
    reworded = passage[:middle] + "見当がつかない" + passage[middle + 3 :]
    at = 1_234_567
    new = prose(at - len(before), seed=6) + before + reworded + after
    new += prose(SIZE - len(new), seed=7)
    assert len(new) == SIZE
    start = old.index(passage)
    embedder = CountingEmbedder()

    found, attempt = Remapper(old, new, embedder=embedder).semantic_search(
        start, start + len(passage)
    )

    assert embedder.texts <= BOUND
    assert attempt.result == "success" and attempt.confidence >= 0.8
    assert (found.start_char, found.end_char) == (at, at + len(reworded))
