"""Yes or no: the offline recogniser for a goal's confirmation question (``confirm: true``).

No model is needed: an answer starts with (or is) a yes or a no phrase, in English or
Japanese ("yes please", "no, 3 pm", 「はい、お願いします」, 「いいえ」). The longest phrase
that matches wins, so "no problem" is a yes and "not yet" a no.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, Literal

__all__ = [
    "CHANGE",
    "CHANGE_RESPONSES",
    "CONFIRM",
    "CONFIRM_RESPONSES",
    "NO",
    "YES",
    "bare_yes_no",
    "yes_no",
]

#: What a confirmation question "asks for" (``ResponsePlan.slot`` / ``ChatMessage.expects``,
#: never a slot name: those are identifiers). A question or small talk in between carries it
#: forward like a pending slot question, so the reply after the digression is still a yes/no.
CONFIRM: Final = "@confirm"
#: What "What would you like to change?" after a no at a confirmation asks for: carried over
#: a question or small talk in between like ``CONFIRM``, so the reply after it is still a
#: change, a yes or a no.
CHANGE: Final = "@change"

#: Responses that ask the user to confirm a goal: the next message is read as yes or no.
CONFIRM_RESPONSES: Final = ("confirm_goal", "confirm_repeat")
#: Responses after which bare values are a change of the goal's slots (not out of scope):
#: the confirmation questions and the question what to change after a no.
CHANGE_RESPONSES: Final = (*CONFIRM_RESPONSES, "confirm_declined")

YES: Final = (
    "yes", "y", "yeah", "yep", "yup", "ok", "okay", "sure", "of course", "correct", "right",
    "that's right", "that is right", "confirm", "confirmed", "go ahead", "do it", "please do",
    "sounds good", "looks good", "fine", "no problem", "absolutely", "affirmative",
    "indeed", "that sounds good", "sounds great", "great", "perfect", "alright", "all right",
    "definitely", "certainly",
    "はい", "うん", "ええ", "お願いします", "おねがいします", "お願い", "大丈夫", "だいじょうぶ",
    "それで", "それでお願いします", "オッケー", "オーケー", "了解", "りょうかい", "確定",
    "進めて", "いいです", "いいよ", "結構です", "そうです", "問題ありません",
)  # fmt: skip
NO: Final = (
    "no", "n", "nope", "nah", "not yet", "not now", "don't", "do not", "dont", "wait",
    "stop", "negative", "wrong", "incorrect", "not right", "that's wrong",
    "i don't think so", "i do not think so", "not really", "not at all", "no way",
    "i don't like that", "don't like that",
    "いいえ", "いや", "いえ", "やめて", "やめる", "やめます", "やめとく", "違う", "違います",
    "ちがう", "ちがいます", "だめ", "ダメ", "待って", "まって", "ストップ", "しないで",
)  # fmt: skip

Answer = Literal["yes", "no"]
_PHRASES: Final[list[tuple[str, Answer]]] = sorted(
    [*((p, "yes") for p in YES), *((p, "no") for p in NO)], key=lambda item: -len(item[0])
)
_ASCII_WORD = re.compile(r"[a-z0-9']")
_TRAILING = " \t.,!?。、！？…~〜"


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().strip()
    return text.replace("’", "'").strip(_TRAILING)


def yes_no(text: str) -> Answer | None:
    """``yes`` or ``no`` when ``text`` answers a yes/no question, else ``None``.

    An English phrase must end at a word boundary ("nothing" is not "no"); a Japanese one
    may run on ("はいお願いします"). What follows the phrase (a new value) is left to the
    entity extractor.
    """
    said = _normalize(text)
    if not said:
        return None
    for phrase, answer in _PHRASES:
        if not said.startswith(phrase):
            continue
        rest = said[len(phrase) :]
        if not rest or not (_ASCII_WORD.match(phrase[-1]) and _ASCII_WORD.match(rest[0])):
            return answer
    return None


#: Words that may follow a bare yes or no ("yes please", "no thanks", 「はい、お願いします」).
_FILLERS = re.compile(
    r"(?:[\s,、。!.]*(?:please|thanks|thank you|お願いします|おねがいします|ありがとう))*"
    r"[\s,、。!.]*"
)


def bare_yes_no(text: str) -> Answer | None:
    """``yes`` or ``no`` when ``text`` is only that ("yes please", "no thanks", 「いいえ」), so
    "no meat please" is not a no."""
    said = _normalize(text)
    for phrase, answer in _PHRASES:
        if said.startswith(phrase) and _FILLERS.fullmatch(said[len(phrase) :]):
            return answer
    return None
