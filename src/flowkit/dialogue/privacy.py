"""Personal slot values kept out of what people see: ``chat``'s ``/state`` and ``flowkit show``.

A domain marks slots ``pii: true``; their values are shown as ``***``, in the slots and in any
text of the state that repeats them (messages, answers, traces).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import FlowkitError
from .domain import load_domain

__all__ = ["MASK", "mask_dialogue_state", "mask_like", "mask_slots", "mask_text"]

MASK = "***"


def mask_slots(slots: Mapping[str, Any], pii: Iterable[str]) -> dict[str, Any]:
    """``slots`` with the values of the ``pii`` slots replaced by ``***``."""
    hidden = frozenset(pii)
    return {name: (MASK if name in hidden else value) for name, value in slots.items()}


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***`` (longest first)."""
    for value in sorted(set(secrets), key=len, reverse=True):
        if value:
            text = text.replace(value, MASK)
    return text


def mask_dialogue_state(state: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """A dumped ``DialogueState`` with personal values masked, and a note saying how.

    The domain named in the state says which slots are personal. When it cannot be loaded
    (a domain file the reader does not have), every slot counts as personal.
    """
    slots = state.get("slots")
    if not isinstance(slots, Mapping):
        return dict(state), ""
    pii, secrets, note = _personal(state)
    masked = _walk(dict(state), secrets)
    masked["slots"] = mask_slots(slots, pii)
    return masked, note


def mask_like(data: Any, state: Mapping[str, Any]) -> Any:
    """``data`` (e.g. a thread's history) with the personal values of ``state`` masked."""
    if not isinstance(state.get("slots"), Mapping):
        return data
    return _walk(data, _personal(state)[1])


def _personal(state: Mapping[str, Any]) -> tuple[frozenset[str], set[str], str]:
    slots: Mapping[str, Any] = state["slots"]
    name = str(state.get("domain") or "")
    try:
        pii: frozenset[str] = load_domain(name).pii_slots() if name else frozenset(slots)
        note = f"personal slots of domain `{name}` masked"
    except (FlowkitError, OSError, ValueError):
        pii = frozenset(slots)
        note = f"domain `{name}` not found here: every slot value masked"
    secrets = {str(v) for k, v in slots.items() if k in pii and v not in (None, "")}
    return pii, secrets, note


def _walk(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):
        return mask_text(value, secrets)
    if isinstance(value, Mapping):
        return {k: _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, secrets) for v in value]
    return value
