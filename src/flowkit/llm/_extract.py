"""Find the JSON value in a model's answer: plain JSON, fenced blocks, prose around it.

Pure functions, no I/O. Reasoning sections (``<think>…</think>``) are removed first, so JSON
a model drafts while thinking is never mistaken for its answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from flowkit.errors import LLMResponseError, UntrustedInputError
from flowkit.foundation._untrusted import MAX_BYTES, MAX_DEPTH, check_json_depth

__all__ = ["MAX_ANSWER_CHARS", "extract_json", "guard_answer", "json_candidates", "strip_reasoning"]

#: An answer longer than this is refused before any JSON in it is looked for.
MAX_ANSWER_CHARS = MAX_BYTES

# An unclosed block runs to the end: the model was cut off while still thinking.
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I)
# Some chat templates open the block themselves, so only the closing tag reaches us.
_ORPHAN_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\r?\n(.*?)```", re.S)
_OPENER = re.compile(r"[{\[]")
# Bounds the scan of long prose full of brackets; a real answer's JSON comes early.
_MAX_OPENERS = 200

_decoder = json.JSONDecoder()


def strip_reasoning(text: str) -> str:
    """Return ``text`` without ``<think>`` sections (closed, unclosed or orphan-closed)."""
    text = _REASONING.sub("", text)
    closes = list(_ORPHAN_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return text.strip()


def json_candidates(text: str) -> Iterator[Any]:
    """Yield the JSON values in ``text``, most likely answer first, each value once.

    The whole text if it is JSON (then nothing else); else every fenced block that is
    JSON, then every object or array embedded in prose, left to right, outermost only.
    """
    guard_answer(text)
    body = strip_reasoning(text)
    # Whole-text JSON first, as is: a tag inside one of its strings is content, not reasoning.
    for whole in (text, body):
        try:
            value = json.loads(whole)
        except ValueError:
            continue
        yield value
        return
    seen: list[Any] = []
    for match in _FENCE.finditer(body):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        seen.append(value)
        yield value
    for value in _embedded(body):
        if value not in seen:
            seen.append(value)
            yield value


def extract_json(text: str) -> Any:
    """Return the first JSON value in ``text``.

    Raises:
        LLMResponseError: ``text`` holds no JSON value (``raw_text`` keeps it).
    """
    for value in json_candidates(text):
        return value
    raise LLMResponseError(
        "The answer holds no JSON value (checked the whole text, ```json blocks and objects "
        "in prose); ask the model to answer with JSON only.",
        raw_text=text,
    )


def guard_answer(text: str, *, model: str | None = None) -> None:
    """Refuse an answer too long or too deeply nested to parse safely.

    Every bracket counts, inside strings or not (prose around JSON may hold a stray quote),
    so the depth is an over-estimate: no parser below can recurse past ``MAX_DEPTH``.

    Raises:
        LLMResponseError: raised from the ``InputTooLargeError`` / ``InputTooDeepError``
            that says which limit the answer broke, so callers treat it as any unusable
            answer (the dialogue falls back to its offline recogniser).
    """
    try:
        if len(text) > MAX_ANSWER_CHARS:
            from flowkit.foundation._untrusted import parse_json

            parse_json(text, what="LLM answer", max_bytes=MAX_ANSWER_CHARS)
        check_json_depth(text, what="LLM answer", max_depth=MAX_DEPTH, strings=False)
    except UntrustedInputError as exc:
        raise LLMResponseError(
            f"The model's answer is unusable: {exc}.", model=model, raw_text=text[:2000]
        ) from exc


def _embedded(body: str) -> Iterator[Any]:
    pos = 0
    for _ in range(_MAX_OPENERS):
        match = _OPENER.search(body, pos)
        if match is None:
            return
        try:
            value, end = _decoder.raw_decode(body, match.start())
        except ValueError:
            pos = match.start() + 1
            continue
        yield value
        # Skip past the value so its nested objects are not offered as answers.
        pos = end
