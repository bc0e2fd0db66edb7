"""What a response may show of a state: secrets never, personal data only to a principal.

Every response that carries state (or updates, or values derived from them) goes through the
server's ``redact`` function. The default masks values under secret-looking keys (``api_key``,
``password``, ``token`` ...) for everyone, the dialogue workflow's personal slots as ``flowkit
show`` does, and, for an anonymous reader (open reads without a token), also e-mail
addresses, phone numbers and key-like strings anywhere in the state. The payloads of a
thread's open pauses (values computed from its state) go through it with the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..foundation._logging import MASK, mask_pii, mask_text

__all__ = [
    "PAUSES_KEY",
    "Redact",
    "default_redact",
    "mask_free_text",
    "mask_free_values",
    "redact_with_pauses",
]

#: ``redact(flow_name, state_json, principal)`` -> what the principal may see.
Redact = Callable[[str, Mapping[str, Any], "str | None"], Mapping[str, Any]]

_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "authorization", "password", "secret", "token", "access_token"}
)
_PII = mask_pii()


def default_redact(flow: str, state: Mapping[str, Any], principal: str | None) -> dict[str, Any]:
    """Secrets masked for everyone; personal data also masked for anonymous readers."""
    shown = dict(state)
    if flow == "dialogue":
        from ..dialogue.privacy import mask_dialogue_state

        shown, _ = mask_dialogue_state(shown)
    return mask_free_values(shown, principal)


def mask_free_values(values: Mapping[str, Any], principal: str | None) -> dict[str, Any]:
    """Values a client set that are not a flow's state (a LangGraph thread's ``metadata``), as
    ``principal`` may see them: as the default redaction shows a state (secrets masked for
    everyone, personal data for an anonymous reader), whatever the server's ``redact``
    function, which is written for its flows' states."""
    shown: dict[str, Any] = _mask_secrets(dict(values))
    if principal is None:
        masked: dict[str, Any] = _PII(None, "", shown)  # type: ignore[assignment]
        shown = masked
    return shown


def mask_free_text(text: str | None, principal: str | None) -> str | None:
    """Text a person typed beside a state (a patch's ``reason``, the ``actor`` who answered),
    as ``principal`` may see it: as written, or for an anonymous reader with personal data
    and key-like strings masked as a failed node's message is."""
    if principal is not None or not text:
        return text
    return mask_text(text)


def _mask_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (MASK if str(k).lower() in _SECRET_KEYS and v is not None else _mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_secrets(v) for v in value]
    return value


#: The key under which the open pauses' payloads go through ``redact`` with the state they
#: came from (a list of ``{"id", "payload"}``), so a payload is masked as the state is; a
#: redact function that drops the key hides them (each payload is then ``null``).
PAUSES_KEY = "__pauses__"


def redact_with_pauses(
    redact: Redact,
    flow: str,
    state: Mapping[str, Any] | None,
    pauses: Sequence[tuple[str, Any]],
    principal: str | None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``state`` and the open ``pauses`` (id, payload) as ``principal`` may see them: the
    payloads go through ``redact`` together with the state (``PAUSES_KEY``), so whatever the
    state's redaction masks (a secret, personal data) is masked in them too. ``state``
    ``None``: the payloads alone (an event, which carries no state)."""
    given = dict(state or {})
    carried = [{"id": pause, "payload": payload} for pause, payload in pauses]
    if any(payload is not None for _, payload in pauses):
        given[PAUSES_KEY] = carried
    shown = dict(redact(flow, given, principal))
    masked = shown.pop(PAUSES_KEY, None) if PAUSES_KEY in given else carried
    payloads = [_payload_at(masked, index) for index in range(len(carried))]
    return shown, [
        {"id": pause, "payload": payload}
        for (pause, _), payload in zip(pauses, payloads, strict=True)
    ]


def _payload_at(masked: Any, index: int) -> Any:
    if not isinstance(masked, list) or index >= len(masked):
        return None
    entry = masked[index]
    return entry.get("payload") if isinstance(entry, Mapping) else None
