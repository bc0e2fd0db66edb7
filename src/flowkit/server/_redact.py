"""What a response may show of a state: secrets never, personal data only to a principal.

Every response that carries state (or updates, or values derived from them) goes through the
server's ``redact`` function. The default masks values under secret-looking keys (``api_key``,
``password``, ``token`` ...) for everyone, the dialogue workflow's personal slots as ``flowkit
show`` does, and, for an anonymous reader (open reads without a token), also e-mail
addresses, phone numbers and key-like strings anywhere in the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..foundation._logging import MASK, mask_pii

__all__ = ["Redact", "default_redact"]

#: ``redact(flow_name, state_json, principal)`` -> what the principal may see.
Redact = Callable[[str, Mapping[str, Any], "str | None"], Mapping[str, Any]]

_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "authorization", "password", "secret", "token", "access_token"}
)
_PII = mask_pii()


def default_redact(flow: str, state: Mapping[str, Any], principal: str | None) -> dict[str, Any]:
    """Secrets masked for everyone; personal data also masked for anonymous readers."""
    shown: dict[str, Any] = _mask_secrets(dict(state))
    if flow == "dialogue":
        from ..dialogue.privacy import mask_dialogue_state

        shown, _ = mask_dialogue_state(shown)
    if principal is None:
        masked: dict[str, Any] = _PII(None, "", dict(shown))  # type: ignore[assignment]
        shown = masked
    return shown


def _mask_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (MASK if str(k).lower() in _SECRET_KEYS and v is not None else _mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_secrets(v) for v in value]
    return value
