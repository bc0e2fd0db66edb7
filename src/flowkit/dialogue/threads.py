"""Conversation ids that keep personal data out of logs.

Every engine log line carries ``thread_id`` unmasked (ids are never pattern-masked: a
generated ``chat-20261124-004641-0f9b`` is not a phone number), so a conversation keyed by a
user's e-mail address or phone number would put it in every line. ``opaque_thread_id``
derives a stable id from such a key instead; ``check_opaque`` refuses ids that look personal.
"""

from __future__ import annotations

import hashlib
import hmac

from ..errors import InvalidThreadIdError
from ..foundation._logging import _PHONE

__all__ = ["check_opaque", "opaque_thread_id"]

_EMAIL_AT = "@"


def opaque_thread_id(user_key: str, *, secret: str | bytes = b"", prefix: str = "dlg") -> str:
    """A stable id for ``user_key`` (an e-mail address, a phone number, an account name) that
    does not reveal it: ``prefix-`` and 24 hex digits of an HMAC-SHA256.

    Pass your application's ``secret`` so nobody can recompute the id of a known address; the
    same key and secret always give the same id, so the conversation continues.
    """
    key = secret.encode() if isinstance(secret, str) else secret
    digest = hmac.new(key, user_key.encode(), hashlib.sha256).hexdigest()[:24]
    return f"{prefix}-{digest}"


def check_opaque(thread_id: str) -> str:
    """``thread_id`` if it does not look like personal data, else ``InvalidThreadIdError``
    (whose message does not repeat the id)."""
    if not isinstance(thread_id, str):  # an int may be a phone number: name only its type
        raise InvalidThreadIdError(f"<{type(thread_id).__name__}>", "it must be a string")
    local, at, domain = thread_id.partition(_EMAIL_AT)
    if (at and local and "." in domain) or _PHONE.search(thread_id):
        raise InvalidThreadIdError(
            "***",
            "it looks like an e-mail address or a phone number, and thread ids appear "
            "unmasked in log lines; derive an opaque id with "
            "flowkit.dialogue.threads.opaque_thread_id(key, secret=...)",
        )
    return thread_id
