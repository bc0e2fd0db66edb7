"""Forms that bend: the offline rules that let a user interrupt a form, come back to it, and
say something else while a question waits, in English and Japanese.

- ``stop``: a bare "stop" (「ストップ」, "hold on") during a form pauses it; the assistant asks
  "Do you want to continue?" (``CONTINUE`` is what that question asks for) and a yes resumes
  the form where it was, a no drops it.
- ``looks_like_question``: "hmm what contacts do I have again?" is a question, never the
  free-text value of the slot being asked (it is answered, and the slot asked again).
- ``free_text_change``: after a confirmation question, "Wait, it's Jane Foo" changes the
  free-text slot (the name) instead of being read as a no.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = [
    "CONTINUE",
    "CONTINUE_RESPONSES",
    "STOP",
    "STOP_PHRASES",
    "is_stop",
    "looks_like_question",
    "opens_with_correction",
]

#: The intent IR reports for a bare stop during a form (GST pauses the goal).
STOP: Final = "stop"
#: What "Do you want to continue?" asks for (``ResponsePlan.slot`` / ``ChatMessage.expects``).
CONTINUE: Final = "@continue"
#: Responses that ask whether to continue a paused goal: the next message is read as yes or no.
CONTINUE_RESPONSES: Final = ("continue_goal", "continue_repeat")

STOP_PHRASES: Final = (
    "stop", "stop it", "stop that", "stop for now", "stop here", "hold on", "hang on",
    "pause", "wait a moment", "wait a minute", "just a moment", "just a minute", "one moment",
    "ストップ", "中断", "中断して", "中断します", "一旦止めて", "いったん止めて", "止めて",
    "ちょっと待って", "ちょっとまって", "一時停止",
)  # fmt: skip

_TRAILING = " \t.,!?。、！？…~〜"
_FILLERS = re.compile(r"(?:[\s,、。!.]*(?:please|for now|a second|ください|下さい))*[\s,、。!.]*")


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().strip()
    return text.replace("’", "'").strip(_TRAILING)


def is_stop(text: str) -> bool:
    """Whether ``text`` is only a stop ("stop", "hold on please", 「ストップ」), so "stop the
    conveyor at 3 pm" is not one."""
    said = _normalize(text)
    return any(
        said.startswith(phrase) and _FILLERS.fullmatch(said[len(phrase) :])
        for phrase in sorted(STOP_PHRASES, key=len, reverse=True)
    )


_WH = re.compile(
    r"^(?:(?:hmm+|um+|uh+|er+|so|well|wait|oh|and|but|ok|okay)[\s,.!]+)*"
    r"(?:what|who|whom|whose|where|when|why|how|which|can you|could you|would you|will you|"
    r"do you|do i|did i|does|is there|are there|is it|am i|have i|should i)\b",
    re.IGNORECASE,
)
_JA_QUESTION = re.compile(r"(?:ですか|ますか|でしょうか)$|何|どこ|誰")


def looks_like_question(text: str) -> bool:
    """Whether ``text`` asks something ("what contacts do I have again?", 「何件ありますか」)
    rather than answers: it ends with a question mark or opens with a question word."""
    said = unicodedata.normalize("NFKC", text).strip()
    if said.endswith("?"):
        return True
    return bool(_WH.match(said)) or bool(_JA_QUESTION.search(said))


_CORRECTION_OPENERS = re.compile(
    r"^(?:(?:no wait|wait|actually|sorry|oops|i mean|correction)\b|やっぱり|やっぱ|いや|失礼)"
    r"[\s,.!、。]*",
    re.IGNORECASE,
)


def opens_with_correction(text: str) -> str | None:
    """The rest of ``text`` after an opener that corrects ("Wait, it's Jane Foo" -> "it's Jane
    Foo"), or ``None`` when it opens with none."""
    said = unicodedata.normalize("NFKC", text).strip()
    match = _CORRECTION_OPENERS.match(said)
    if match is None:
        return None
    return said[match.end() :].strip() or None
