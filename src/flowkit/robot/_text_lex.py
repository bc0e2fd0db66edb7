"""Tokens of the text form: how a line splits into words, quoted texts and punctuation, and
how a value is written so that it reads back unchanged."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = [
    "BARE",
    "COMPARE",
    "COMPARE_BACK",
    "FLAG",
    "NUMBER",
    "RESERVED",
    "VARIABLE",
    "TextSyntaxError",
    "Token",
    "json_string",
    "lex",
    "quote",
]

#: Characters a value may have without quotes; anything else is written as a JSON string.
BARE = re.compile(r"[^\s\"=()\[\]{},;:<>!—]+")
#: Words with a meaning in the text form; values equal to them are quoted.
RESERVED = frozenset({"or", "and", "not", "if", "elif", "else", "until", "when", "--"})
COMPARE = {"EQ": "==", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
COMPARE_BACK = {v: k for k, v in COMPARE.items()}
NUMBER = re.compile(r"-?\d+(\.\d+)?")
VARIABLE = re.compile(r"N\d+")
FLAG = re.compile(r"F\d+")
_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")|(?P<mark>—|--(?=\s|$))|(?P<op>==|!=|<=|>=|<|>)'
    r"|(?P<punct>[=()\[\]{},;:])|(?P<word>[^\s\"=()\[\]{},;:<>!—]+)|(?P<bad>\S)"
)


_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


class TextSyntaxError(Exception):
    """A problem in one line; ``text.py`` adds the line number."""


@dataclass(frozen=True)
class Token:
    kind: str  # string, mark, op, punct, word
    text: str
    spaced: bool  # whitespace before it

    @property
    def value(self) -> str:
        return str(json.loads(self.text)) if self.kind == "string" else self.text


def lex(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "bad"
        if kind == "bad" and match.group() == '"':
            raise TextSyntaxError('a quoted text is not closed; add the closing "')
        if kind == "bad":
            raise TextSyntaxError(f"unexpected character {match.group()!r}; quote the value")
        if kind == "string":
            try:
                json.loads(match.group())
            except json.JSONDecodeError as exc:
                raise TextSyntaxError(f"bad quoted text {match.group()}: {exc.msg}") from None
        spaced = match.start() > position and text[position : match.start()].isspace()
        tokens.append(Token(kind, match.group(), spaced or match.start() == 0))
        position = match.end()
    return tokens


def quote(value: str, reserved: frozenset[str] = RESERVED) -> str:
    """``value`` as a token: bare when unambiguous, else a JSON string."""
    if BARE.fullmatch(value) and value not in reserved and not value.startswith("@"):
        return value
    return json_string(value)


def json_string(value: str) -> str:
    """A JSON string on one line: also escapes the characters some tools treat as line ends."""
    text = json.dumps(value, ensure_ascii=False)
    return _LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
