"""Text helpers for the offline recogniser: normalisation, language detection and fuzzy
similarity that works for space-separated languages and for Japanese alike (stdlib only).

Similarity compares content words (each matching its closest spelling) for space-separated
languages and character bigrams for Japanese, so both "bok maintenence" and
「メンテの予約をしたい」 land near their examples. Typo tolerance never merges a word with
its negation ("happy" / "unhappy") nor two words the domain itself uses; intensifiers
("very", "really") do not count; and a sentence that is an example with one unknown word
swapped ("are you a AI" for "are you a bot") is near it.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "FRAME_SCORE",
    "bears_language",
    "best_similarity",
    "detect_language",
    "has_cjk",
    "keyword_hits",
    "normalize",
    "similarity",
    "vocabulary",
]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


#: Latin-script words that belong to no language in particular ("3 pm", "OK").
_NEUTRAL_WORDS = frozenset({"am", "pm", "ok", "okay", "h", "min", "kg", "km"})
_HANDLE = re.compile(r"[\d@#_/:.]")


def bears_language(text: str, *, name_asked: bool = False) -> bool:
    """Whether ``text`` says which language it is in: kana or kanji, or a Latin word. A date,
    a time, a number, an amount, a handle (@jdoe, sato_k) or an e-mail address does not; nor,
    with ``name_asked`` (the question asked for free text), a single Latin word ("Sato")."""
    text = unicodedata.normalize("NFKC", text)
    if has_cjk(text):
        return True
    tokens = text.split()
    if name_asked and len(tokens) == 1:
        return False
    for token in tokens:
        if _HANDLE.search(token.strip(".,!?;:()[]\"'")):
            continue
        word = re.sub(r"[^\w']", "", token).casefold()
        if len(word) >= 2 and word.isalpha() and word not in _NEUTRAL_WORDS:
            return True
    return False


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
#: Words that only make another word stronger: "very terrible" means "terrible".
_INTENSIFIERS = frozenset(
    [
        "very",
        "really",
        "so",
        "too",
        "quite",
        "super",
        "extremely",
        "totally",
        "absolutely",
        "truly",
        "incredibly",
        "pretty",
    ]
)
#: Prefixes that negate a word: "unhappy" is not a typo of "happy".
_NEGATIONS = ("un", "in", "im", "ir", "il", "dis", "non", "non ")
_ARTICLES = {"an": "a", "the": "a"}
#: The score of an example with one unknown word swapped (over the default threshold 0.6,
#: under the 0.8 that interrupts a question for a slot).
FRAME_SCORE = 0.7
_TYPO = 0.8  # the least difflib ratio two spellings of one word have


@lru_cache(maxsize=8192)
def _content(text: str) -> tuple[str, ...]:
    words = text.split()
    content = tuple(w for w in words if w not in _STOPWORDS and w not in _INTENSIFIERS)
    return content or tuple(w for w in words if w not in _STOPWORDS) or tuple(words)


def vocabulary(phrases: Iterable[str]) -> frozenset[str]:
    """Every word of ``phrases`` (normalised): the words a domain knows."""
    return frozenset(w for p in phrases for w in normalize(p).split())


def _negation(x: str, y: str) -> bool:
    return any(x == p + y or y == p + x for p in _NEGATIONS)


def _word_likeness(x: str, y: str, known: frozenset[str]) -> float:
    """1.0 for the same word, the spelling ratio for a likely typo, else 0.0. A word and its
    negation are never a typo of each other, nor are two words the domain uses."""
    if x == y:
        return 1.0
    if _negation(x, y) or (x in known and y in known):
        return 0.0
    ratio = difflib.SequenceMatcher(None, x, y).ratio()
    return ratio if ratio >= _TYPO else 0.0


@lru_cache(maxsize=8192)
def _bigrams(text: str) -> frozenset[str]:
    compact = text.replace(" ", "")
    grams = {compact[i : i + 2] for i in range(len(compact) - 1)}
    return frozenset(grams | {c for c in compact if _CJK.match(c)})


def _soft_overlap(a: tuple[str, ...], b: tuple[str, ...], known: frozenset[str]) -> float:
    """Dice overlap of two word lists where a word matches its closest spelling (typos)."""

    def matched(xs: tuple[str, ...], ys: tuple[str, ...]) -> float:
        return sum(max((_word_likeness(x, y, known) for y in ys), default=0.0) for x in xs)

    if not a or not b:
        return 0.0
    return (matched(a, b) + matched(b, a)) / (len(a) + len(b))


def _frame(a: str, b: str, known: frozenset[str]) -> float:
    """``FRAME_SCORE`` when ``a`` is the example ``b`` (four words or more, articles alike)
    with one content word swapped for a word the domain does not know, else 0.0."""
    xs = [_ARTICLES.get(w, w) for w in a.split()]
    ys = [_ARTICLES.get(w, w) for w in b.split()]
    if len(xs) != len(ys) or len(xs) < 4:
        return 0.0
    swapped = [(x, y) for x, y in zip(xs, ys, strict=True) if x != y]
    if len(swapped) != 1:
        return 0.0
    x, y = swapped[0]
    content = x not in _STOPWORDS and y not in _STOPWORDS
    return FRAME_SCORE if content and x not in known and not _negation(x, y) else 0.0


def similarity(a: str, b: str, known: frozenset[str] = frozenset()) -> float:
    """0..1 likeness of two normalised texts.

    Japanese: the better of ``difflib``'s ratio and character-bigram overlap. Other languages:
    overlap of content words, each matching its closest spelling, so "bok maintenence" is
    near "book a maintenance slot" while "what's the weather" is not near "what is the
    maintenance interval". ``known`` is the domain's vocabulary (see ``_word_likeness``).
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
    overlap = _soft_overlap(_content(a), _content(b), known)
    return max(overlap, _frame(a, b, known)) if overlap < FRAME_SCORE else overlap


def best_similarity(
    text: str, candidates: Iterable[str], known: frozenset[str] = frozenset()
) -> float:
    return max((similarity(text, normalize(c), known) for c in candidates), default=0.0)


def keyword_hits(text: str, keywords: Iterable[str], known: frozenset[str] = frozenset()) -> int:
    """How many keywords occur in ``text`` (normalised): as substrings for Japanese, as whole
    words for other languages, tolerating small typos in words of five letters or more (never
    a negation: "happy" does not hit "unhappy", nor a word of ``known``)."""
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
        elif key in words or (len(key) >= 5 and any(_word_likeness(key, w, known) for w in words)):
            hits += 1
    return hits
