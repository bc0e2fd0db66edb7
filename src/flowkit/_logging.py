"""Logging: flowkit logs through ``structlog.get_logger("flowkit")`` and never configures structlog.

``mask_pii`` is a processor applications add to their own structlog chain so that values of
sensitive keys, e-mail addresses, phone numbers and secrets never reach a log line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

__all__ = ["get_logger", "mask_pii"]

MASK = "***"

_DEFAULT_KEYS = frozenset(
    {"api_key", "apikey", "authorization", "password", "secret", "token", "access_token"}
)
_PHONE = re.compile(r"(?<!\w)\+?\d[\d\s()-]{7,}\d(?!\w)")
_PATTERNS = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # e-mail
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}\b"),  # API-key-like tokens
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]+=*"),
)


def get_logger() -> FilteringBoundLogger:
    # Imported on first use: structlog pulls in asyncio, which a plain import should not pay.
    import structlog

    return structlog.get_logger("flowkit")  # type: ignore[no-any-return]


class mask_pii:  # noqa: N801 - used like a function in processor chains
    """A structlog processor masking sensitive keys and PII patterns in every event value.

    >>> processor = mask_pii(keys={"requester_name"})
    >>> processor(None, "info", {"event": "x", "requester_name": "Sato", "note": "mail a@b.co"})
    {'event': 'x', 'requester_name': '***', 'note': 'mail ***'}
    """

    def __init__(
        self, *, keys: Iterable[str] = (), patterns: Iterable[re.Pattern[str]] = ()
    ) -> None:
        self.keys = _DEFAULT_KEYS | {k.lower() for k in keys}
        self.patterns = (*_PATTERNS, *patterns)

    def __call__(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in list(event_dict.items()):
            event_dict[key] = self._mask(key, value)
        return event_dict

    def _mask(self, key: str, value: Any) -> Any:
        if key.lower() in self.keys and value is not None:
            return MASK
        if isinstance(value, str):
            for pattern in self.patterns:
                value = pattern.sub(MASK, value)
            return _PHONE.sub(_mask_phone, value)
        if isinstance(value, dict):
            return {k: self._mask(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._mask(key, v) for v in value)
        return value


def _mask_phone(match: re.Match[str]) -> str:
    # Phone numbers have 10+ digits (03-1234-5678, +81 90 1234 5678); dates such as
    # 2024-01-15 have 8 and stay readable.
    digits = sum(ch.isdigit() for ch in match.group(0))
    return MASK if digits >= 10 else match.group(0)
