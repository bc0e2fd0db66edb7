"""Text helpers for the offline recogniser: normalisation, language detection and fuzzy
similarity that works for space-separated languages and for Japanese alike (stdlib only).

Similarity compares content words (each matching its closest spelling) for space-separated
languages and character bigrams for Japanese, so both "bok maintenence" and
「メンテの予約をしたい」 land near their examples.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "best_similarity",
    "detect_language",
    "has_cjk",
    "keyword_hits",
    "normalize",
    "similarity",
]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def detect_language(text: str, languages: Iterable[str], default: str) -> str:
    """``ja`` when the text has kana or kanji and the domain speaks Japanese, else ``default``
    (or ``en`` when the domain speaks it and the default is Japanese)."""
    langs = list(languages)
    if has_cjk(text):
        return "ja" if "ja" in langs else default
    if default == "ja" and "en" in langs and re.search(r"[A-Za-z]", text):
        return "en"
    return default


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """NFKC, case-folded, punctuation to spaces, single spaces (full-width digits -> ASCII)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _PUNCT.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


#: Words that say little about intent; ignored unless a text has nothing else.
_STOPWORD_TEXT = (
    "a an the is are am was were be been to of in on at by for with and or but my me i "
    "you your it its this that these what how do does did can could would will should "
    "please s m re ll d t there here some any"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=8192)
def _content(text: str) -> tuple[str, ...]:
    words = text.split()
    content = tuple(w for w in words if w not in _STOPWORDS)
    return content or tuple(words)


@lru_cache(maxsize=8192)
def _bigrams(text: str) -> frozenset[str]:
    compact = text.replace(" ", "")
    grams = {compact[i : i + 2] for i in range(len(compact) - 1)}
    return frozenset(grams | {c for c in compact if _CJK.match(c)})


def _soft_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """Dice overlap of two word lists where a word matches its closest spelling (typos)."""

    def matched(xs: tuple[str, ...], ys: tuple[str, ...]) -> float:
        total = 0.0
        for x in xs:
            best = max(
                (1.0 if x == y else difflib.SequenceMatcher(None, x, y).ratio() for y in ys),
                default=0.0,
            )
            total += best if best >= 0.8 else 0.0
        return total

    if not a or not b:
        return 0.0
    return (matched(a, b) + matched(b, a)) / (len(a) + len(b))


def similarity(a: str, b: str) -> float:
    """0..1 likeness of two normalised texts.

    Japanese: the better of ``difflib``'s ratio and character-bigram overlap. Other languages:
    overlap of content words, each matching its closest spelling, so "bok maintenence" is
    near "book a maintenance slot" while "what's the weather" is not near "what is the
    maintenance interval".
    """
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if has_cjk(a) or has_cjk(b):
        ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
        ua, ub = _bigrams(a), _bigrams(b)
        overlap = 2 * len(ua & ub) / (len(ua) + len(ub)) if ua and ub else 0.0
        return max(ratio, overlap)
    return _soft_overlap(_content(a), _content(b))


def best_similarity(text: str, candidates: Iterable[str]) -> float:
    return max((similarity(text, normalize(c)) for c in candidates), default=0.0)


def keyword_hits(text: str, keywords: Iterable[str]) -> int:
    """How many keywords occur in ``text`` (normalised): as substrings for Japanese, as whole
    words for other languages, tolerating small typos in words of five letters or more."""
    words = text.split()
    hits = 0
    for keyword in keywords:
        key = normalize(keyword)
        if not key:
            continue
        if has_cjk(key):
            hits += key in text.replace(" ", "")
        elif " " in key:
            hits += f" {key} " in f" {text} "
        elif key in words or (
            len(key) >= 5 and difflib.get_close_matches(key, words, n=1, cutoff=0.8)
        ):
            hits += 1
    return hits
