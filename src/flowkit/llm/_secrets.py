"""API keys: checked once when a client is configured, and kept out of every text we hand on.

A key pasted from a file usually ends with a newline; sent as is, it is an illegal header
that the HTTP library reports by quoting the header, key and all. So keys are stripped of
surrounding whitespace, refused (without being shown) when an HTTP header cannot carry
them, and error text (messages, ``raw_text``) has the key and any ``Bearer`` credential
replaced by ``***``. What the model said (answers, chunks, tool-call arguments) is handed
over as it was: a key such as ``"ollama"``, ``"EMPTY"`` or ``"k"`` is also ordinary text.
"""

from __future__ import annotations

import re

from flowkit.errors import FlowkitError, LLMConfigError, LLMResponseError
from flowkit.foundation._credentials import mask_url_passwords

__all__ = ["REDACTED", "check_api_key", "redact", "scrub_error"]

REDACTED = "***"

# A credential in an echoed header, whoever's it is: `Bearer <token>`, `Basic <token>`
# (8+ token characters with a digit, so "a basic question" stays), `Authorization: <value>`.
_CREDENTIAL = re.compile(
    r"(?i)(\b(?:bearer|basic)\s+)(?=[\w\-.~+/]*\d)[\w\-.~+/]{8,}=*"
    r"|(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?!(?:bearer|basic)\s)[^\s\"',;}\]]+"
)


def check_api_key(key: object) -> str | None:
    """``key`` without surrounding whitespace; ``None`` for no key (``None`` or ``""``).

    Raises:
        LLMConfigError: not a string, only whitespace, or a character an HTTP header cannot
            carry (non-ASCII, a space or a control character inside). The message never
            contains the key.
    """
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise LLMConfigError(f"api_key must be a string, not {type(key).__name__}.")
    stripped = key.strip()
    if not stripped:
        raise LLMConfigError(
            "api_key is only whitespace; pass the key itself (or None for a server that "
            "needs none). Check the file or variable it is read from."
        )
    bad = next((c for c in stripped if not (c.isascii() and c.isprintable()) or c == " "), None)
    if bad is not None:
        what = "a non-ASCII character" if not bad.isascii() else "a space or control character"
        raise LLMConfigError(
            f"api_key contains {what} (U+{ord(bad):04X}), which an HTTP header cannot carry; "
            "the key is not shown here. Copy it again from your provider (keys are ASCII), "
            "and check the file or variable it is read from."
        )
    return stripped


def redact(text: str, secret: str | None, *, credentials: bool = False) -> str:
    """``text`` with ``secret`` replaced by ``***``; with ``credentials``, also any bearer or
    authorization value (for error text only: a model's answer may quote such lines)."""
    if secret:
        text = text.replace(secret, REDACTED)
    if credentials:
        text = _CREDENTIAL.sub(lambda m: (m.group(1) or m.group(2)) + REDACTED, text)
        text = mask_url_passwords(text)
    return text


def scrub_error(error: FlowkitError, secret: str | None) -> None:
    """Redact ``secret`` and quoted credentials from ``error``'s text, in place, as it leaves
    the client; a foreign cause whose text quotes the key (a JSON parser's error holds the
    line it read) is left off the chain rather than passed on."""
    _scrub_one(error, secret)
    current: BaseException = error
    seen = {id(error)}
    while True:
        cause = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if cause is None or id(cause) in seen:
            return
        seen.add(id(cause))
        if isinstance(cause, FlowkitError):
            _scrub_one(cause, secret)
        elif secret and _quotes(cause, secret):
            current.__cause__ = current.__context__ = None
            current.__suppress_context__ = True
            return
        current = cause


def _scrub_one(error: FlowkitError, secret: str | None) -> None:
    error.args = tuple(
        redact(arg, secret, credentials=True) if isinstance(arg, str) else arg for arg in error.args
    )
    if isinstance(error, LLMResponseError):
        error.raw_text = redact(error.raw_text, secret, credentials=True)


def _quotes(error: BaseException, secret: str) -> bool:
    try:
        texts = [str(error), repr(error), repr(getattr(error, "__dict__", {}))]
    except Exception:  # a foreign error that cannot even be shown: pass none of it on
        return True
    return any(secret in text for text in texts)
