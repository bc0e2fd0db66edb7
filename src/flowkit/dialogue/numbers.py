"""Numbers and amounts in text, English and Japanese, in words and digits: "three",
"twenty-one", "one hundred and five", "1,200", 三つ, 二十一, 千五百, ２１人 (full-width digits are
NFKC-normalised by the caller), and amounts: "fifty dollars", "$1,200", 五十ドル, ３０００円.

``find_numbers`` and ``find_amounts`` return ``(start, end, value)`` spans of an NFKC text;
an amount's span takes its currency word or sign, its value is the number alone.
"""

from __future__ import annotations

import re

__all__ = ["NumberSpan", "find_amounts", "find_numbers", "kanji_number", "word_number"]

NumberSpan = tuple[int, int, int | float]

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORDS: dict[str, int] = {w: i for i, w in enumerate(_UNITS)}
_WORDS.update({w: 20 + 10 * i for i, w in enumerate(_TENS)})
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD = "|".join(sorted([*_WORDS, *_SCALES], key=len, reverse=True))
_EN_WORDS = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\b(?!-)", re.IGNORECASE)
_DIGITS = re.compile(
    r"(?<![A-Za-z0-9_.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![A-Za-z0-9_]|[.,]\d)"
)
_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_KANJI_SCALES = {"十": 10, "百": 100, "千": 1000}
_KANJI = re.compile(r"[〇一二三四五六七八九十百千万]+")
#: 一つ..九つ and ひとつ..ここのつ: things counted (三つ = 3).
_KANA_COUNTS = {
    w: i + 1
    for i, w in enumerate(
        ["ひとつ", "ふたつ", "みっつ", "よっつ", "いつつ", "むっつ", "ななつ", "やっつ", "ここのつ"]
    )
}
_KANA = re.compile("|".join(_KANA_COUNTS))

_CURRENCY_AFTER = re.compile(
    r"\s*(?:(?:dollars?|bucks|euros?|pounds?|yen|usd|eur|jpy|gbp)(?![A-Za-z])|ドル|円|ユーロ|ポンド)",
    re.IGNORECASE,
)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£¥]|usd|eur|jpy|gbp)\s*$", re.IGNORECASE)


def word_number(text: str) -> int | None:
    """``twenty-one`` -> 21, ``one hundred and five`` -> 105; ``None`` if not number words."""
    words = [w for w in re.split(r"[\s-]+", text.casefold()) if w and w != "and"]
    if not words or any(w not in _WORDS and w not in _SCALES for w in words):
        return None
    total, current = 0, 0
    for word in words:
        if word in _WORDS:
            current += _WORDS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        else:
            total += (current or 1) * _SCALES[word]
            current = 0
    return total + current


def kanji_number(text: str) -> int | None:
    """``三`` -> 3, ``二十一`` -> 21, ``千五百`` -> 1500, ``三万`` -> 30000, ``二〇二五`` -> 2025;
    ``None`` if not a kanji number."""
    if not text or any(c not in _KANJI_DIGITS and c not in "十百千万" for c in text):
        return None
    if not any(c in "十百千万" for c in text):
        return int("".join(str(_KANJI_DIGITS[c]) for c in text))
    high, _, low = text.rpartition("万") if "万" in text else ("", "", text)
    if "万" in high:
        return None
    below = _below_10000(low)
    if below is None:
        return None
    if "万" in text:
        upper = _below_10000(high) if high else 1
        return None if upper is None else upper * 10_000 + below
    return below


def _below_10000(text: str) -> int | None:
    total, digit = 0, None
    for char in text:
        if char in _KANJI_DIGITS:
            if digit is not None:
                return None  # 二三十: two digits in a row with scales is not a number
            digit = _KANJI_DIGITS[char]
        else:
            total += (1 if digit is None else digit) * _KANJI_SCALES[char]
            digit = None
    return total + (digit or 0)


def find_numbers(text: str) -> list[NumberSpan]:
    """Every number in ``text``: digits, English number words, kanji, counted kana."""
    found: list[NumberSpan] = []
    for m in _DIGITS.finditer(text):
        raw = m.group(0).replace(",", "")
        found.append((m.start(), m.end(), float(raw) if "." in raw else int(raw)))
    for m in _EN_WORDS.finditer(text):
        value = word_number(m.group(0))
        if value is not None and not _pronoun(text, m):
            found.append((m.start(), m.end(), value))
    for m in _KANJI.finditer(text):
        value = kanji_number(m.group(0))
        if value is not None:
            end = m.end() + (text[m.end() : m.end() + 1] == "つ" and value < 10)
            found.append((m.start(), end, value))
    for m in _KANA.finditer(text):
        found.append((m.start(), m.end(), _KANA_COUNTS[m.group(0)]))
    return found


def _pronoun(text: str, match: re.Match[str]) -> bool:
    """Whether a lone "one" is a pronoun after a determiner ("no one", "that one"); a number
    phrase never is."""
    if match.group(0).casefold() != "one":
        return False
    before = text[: match.start()].split()
    return bool(before) and before[-1].casefold() in _DETERMINERS


_DETERMINERS = frozenset(
    ["no", "any", "some", "every", "each", "that", "this", "which", "the", "other", "another"]
)


def find_amounts(text: str) -> list[NumberSpan]:
    """Every number in ``text`` with its currency word or sign, if any, in its span."""
    found: list[NumberSpan] = []
    for start, end, value in find_numbers(text):
        after = _CURRENCY_AFTER.match(text, end)
        before = _CURRENCY_BEFORE.search(text[:start])
        found.append(
            (
                before.start() if before else start,
                after.end() if after and after.group(0).strip() else end,
                value,
            )
        )
    return found
