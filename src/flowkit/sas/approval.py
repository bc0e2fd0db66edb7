"""Recognising approval at a review gate: a whole message that is an approval word.

A message approves only if, after normalisation (Unicode NFKC so full-width letters become
ASCII, case folding, surrounding whitespace and end punctuation removed), it *equals* one of
the approval words in English, Japanese or Chinese. Nothing is ever matched as a substring:
"not ok", "token" and "OKです、でも速度を下げて" are feedback, not approval (SAS_FACTS §11.12).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["APPROVAL_WORDS", "is_approval", "normalise"]

APPROVAL_WORDS: Final = frozenset(
    {
        # English
        "approve",
        "approved",
        "i approve",
        "accept",
        "accepted",
        "yes",
        "y",
        "ok",
        "okay",
        "lgtm",
        "looks good",
        "looks good to me",
        "agree",
        "agreed",
        "proceed",
        "go ahead",
        "confirm",
        "confirmed",
        "fine",
        "sounds good",
        # Japanese
        "はい",
        "承認",
        "承認します",
        "承認する",
        "了解",
        "了解です",
        "了解しました",
        "ok です",
        "okです",
        "大丈夫",
        "大丈夫です",
        "問題ありません",
        "問題なし",
        "いいです",
        "良いです",
        "これでいい",
        "これでいいです",
        "これで良い",
        "これで良いです",
        "進めて",
        "進めてください",
        "お願いします",
        "同意します",
        "確認しました",
        # Chinese
        "同意",
        "接受",
        "可以",
        "好的",
        "好",
        "没问题",
        "沒問題",
        "行",
        "批准",
        "确认",
        "確認",
        "通过",
        "通過",
        "就这样",
        "继续",
    }
)

# End punctuation people add to a one-word answer, in ASCII and CJK forms (after NFKC).
_TRIM = re.compile(r"^[\s\"'「『(（]+|[\s.!?。！？、,，~〜ー\"'」』)）]+$")
_SPACES = re.compile(r"\s+")


def normalise(message: str) -> str:
    """The comparable form of a message: NFKC, case-folded, trimmed, inner spaces collapsed."""
    text = unicodedata.normalize("NFKC", message).casefold()
    text = _TRIM.sub("", text)
    return _SPACES.sub(" ", text)


def is_approval(message: str) -> bool:
    """Whether the whole message is an approval word (never a substring match)."""
    return normalise(message) in APPROVAL_WORDS
