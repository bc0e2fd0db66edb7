"""Post-processing of a character's reply (seed 004, as the origin does it).

``postprocess`` drops ``<think>`` sections (and all before a stray ``</think>``), the
``[Next: …]`` / ``{"next": …}`` directives and greeting preambles, keeps the first two
sentences within 160 characters and makes sure the text ends like a sentence; an empty
result becomes 「（応答なし）」. Pure functions, so every rule is tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .speaker import strip_think

__all__ = [
    "EMPTY_TEXT",
    "PostprocessSettings",
    "display_text",
    "ensure_final_punctuation",
    "postprocess",
    "remove_directives",
    "remove_greeting",
    "shorten",
    "split_sentences",
]

#: What is shown when nothing is left of a reply (the origin's text).
EMPTY_TEXT = "（応答なし）"

# The object's key is found in an atomic group, so an unclosed object is not searched again
# from every "next" in it (quadratic in a long reply); its close is the same for any of them.
# A tag's name stops at the next opening bracket, so unclosed tags are not each read to the
# end of the reply (quadratic too).
_DIRECTIVES = (
    re.compile(r"[\[［]\s*next\s*[:：][^\[［\]］\n]*[\]］]", re.IGNORECASE),
    re.compile(r'[\{｛](?>[^{}｛｝]*?["“”]next["“”]\s*[:：])[^{}｛｝]*+[\}｝]', re.IGNORECASE),
)
_GREETINGS = (
    "こんにちは",
    "こんばんは",
    "おはようございます",
    "おはよう",
    "はじめまして",
    "初めまして",
    "どうも",
    "やあ",
    "もしもし",
    "hello",
    "hi",
    "hey",
    "greetings",
    "good morning",
    "good afternoon",
    "good evening",
)
_AUDIENCE = (
    "皆さん",
    "みなさん",
    "皆様",
    "みなさま",
    "みんな",
    "everyone",
    "everybody",
    "all",
    "there",
    "folks",
    "friends",
)
#: Characters that may end a sentence (closing quotes and brackets after a full stop count).
_FINAL = "。．.！!？?…‥」』）)\"'”’〉》"
_TERMINATORS = "。！？!?…"
_OPENERS = "「『（(“〈《"
_CLOSERS = "」』）)”〉》"
#: What may follow a sentence end and still belong to the sentence.
_TRAILERS = "\"'’"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")


@dataclass(frozen=True, slots=True)
class PostprocessSettings:
    """Limits of a displayed reply: sentences kept, characters kept, the text for nothing."""

    max_sentences: int = 2
    max_chars: int = 160
    empty_text: str = EMPTY_TEXT


def remove_directives(text: str) -> str:
    """``text`` without ``[Next: …]`` tags and ``{"next": …}`` objects."""
    for pattern in _DIRECTIVES:
        text = pattern.sub("", text)
    return text.strip()


def remove_greeting(text: str, names: Iterable[str] = ()) -> str:
    """``text`` without its opening greetings ("Hello everyone! ", 「こんにちは、ノクスさん。」).

    A greeting is removed with the audience or name it addresses (``names``: the characters'
    names, optionally with an honorific) and the punctuation after it. A reply that is only
    a greeting is kept as it is.
    """
    vocatives = [*_AUDIENCE, *(n for n in names if n)]
    audience = "|".join(re.escape(v) for v in sorted(vocatives, key=len, reverse=True))
    honorific = r"(?:さん|様|さま|ちゃん|くん|君)?"
    greeting = "|".join(re.escape(g) for g in sorted(_GREETINGS, key=len, reverse=True))
    pattern = re.compile(
        rf"^\s*(?:{greeting})(?![A-Za-z])"
        rf"(?:[\s,、，]*(?:{audience}){honorific})?"
        r"\s*[!！。.,、，~〜ー♪]+\s*",
        re.IGNORECASE,
    )
    stripped = text
    while True:
        shorter = pattern.sub("", stripped, count=1)
        if shorter == stripped:
            break
        stripped = shorter
    if not stripped.strip():
        return text
    if stripped != text and stripped[:1].isascii() and stripped[:1].islower():
        stripped = stripped[0].upper() + stripped[1:]  # "Hi, the answer..." -> "The answer..."
    return stripped


def split_sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end (。！？!?… and a full stop before a space), never
    inside 「quotes」 or (brackets): 「はい。」と言った。 is one sentence."""
    sentences: list[str] = []
    depth = 0
    start = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth = max(depth - 1, 0)
        elif depth == 0 and _ends_sentence(text, index):
            end = index + 1
            while end < len(text) and (text[end] in _TERMINATORS or text[end] in _TRAILERS):
                end += 1
            piece = text[start:end].strip()
            if piece:
                sentences.append(piece)
            start = index = end
            continue
        index += 1
    rest = text[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def _ends_sentence(text: str, index: int) -> bool:
    char = text[index]
    if char == ".":  # not in 3.14 or e.g.x: only before a space or at the end
        return index + 1 == len(text) or text[index + 1].isspace()
    return char in _TERMINATORS


def shorten(text: str, max_sentences: int = 2, max_chars: int = 160) -> str:
    """The first ``max_sentences`` sentences of ``text``, at most ``max_chars`` characters
    (cut at the limit, leaving room for the final punctuation)."""
    sentences = split_sentences(" ".join(text.split()))
    joiner = "" if _JAPANESE.search(text) else " "
    kept = joiner.join(sentences[:max_sentences])
    if len(kept) > max_chars:
        kept = kept[: max(max_chars - 1, 1)].rstrip(" 、,，:;：；")
    return kept


def ensure_final_punctuation(text: str) -> str:
    """``text`` ending like a sentence: 。 for Japanese, . otherwise, unless it already does."""
    text = text.rstrip().rstrip("、,，:;：；").rstrip()
    if not text or text[-1] in _FINAL:
        return text
    return text + ("。" if _JAPANESE.search(text) else ".")


def postprocess(
    raw: str, settings: PostprocessSettings | None = None, *, names: Iterable[str] = ()
) -> str:
    """The text of a reply as it is shown and logged (see the module docstring); ``""``
    when nothing is left (``display_text`` shows the empty text then)."""
    settings = settings or PostprocessSettings()
    text = remove_directives(strip_think(raw))
    text = remove_greeting(text, names)
    text = ensure_final_punctuation(shorten(text, settings.max_sentences, settings.max_chars))
    if len(text) > settings.max_chars:  # the added punctuation went past the limit
        text = ensure_final_punctuation(text[: max(settings.max_chars - 1, 1)])
    return text


def display_text(processed: str, settings: PostprocessSettings | None = None) -> str:
    """What the person sees: the processed text, or the empty text (「（応答なし）」)."""
    settings = settings or PostprocessSettings()
    return processed if processed.strip() else settings.empty_text
