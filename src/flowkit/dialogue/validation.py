"""Slot validation: the rules of a slot's ``validation:`` and the reason shown when a value
breaks one ("The earliest possible time is 08:00.").

A failure is a reason code plus the rule's parameters (never the value itself), so it can be
recorded in ``exec_trace`` and logged without leaking personal data.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from ..foundation._safe_regex import compile_pattern
from ._defaults import REASONS
from ._models import Domain
from .state import JsonScalar

__all__ = ["check_value", "reason_text", "slot_label"]

#: A time slot's value: what the recogniser writes (``15:00``), 00:00 to 23:59.
_HH_MM = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d")


def check_value(
    domain: Domain, slot: str, value: JsonScalar, today: date
) -> tuple[str, dict[str, Any]] | None:
    """``None`` when ``value`` passes every rule of ``slot``, else ``(reason code, params)``."""
    rules = domain.slots[slot].validation
    if isinstance(value, int | float) and not isinstance(value, bool):
        if rules.min is not None and value < rules.min:
            return "min", {"min": _plain(rules.min)}
        if rules.max is not None and value > rules.max:
            return "max", {"max": _plain(rules.max)}
        if rules.whole and not float(value).is_integer():
            return "whole", {}
    entity = domain.entities.get(domain.slots[slot].entity or "")
    kind = entity.kind if entity is not None else None  # None: a from_intent value
    text = str(value)
    if kind in ("text", "regex"):
        if rules.min_length is not None and len(text) < rules.min_length:
            return "min_length", {"min_length": rules.min_length}
        if rules.max_length is not None and len(text) > rules.max_length:
            return "max_length", {"max_length": rules.max_length}
        pattern = rules.pattern
        if pattern is not None and not compile_pattern(pattern, what="pattern").fullmatch(text):
            return "pattern", {}
    if kind == "date":
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return "pattern", {}
        if rules.not_past and day < today:
            return "not_past", {}
        if rules.max_days_ahead is not None and (day - today).days > rules.max_days_ahead:
            return "max_days_ahead", {"max_days_ahead": rules.max_days_ahead}
    if kind == "choice" and entity is not None and entity.values and value not in entity.values:
        return "choice", {}
    if kind == "time":
        if not _HH_MM.fullmatch(text):
            return "pattern", {}
        if rules.earliest is not None and text < rules.earliest:
            return "earliest", {"earliest": rules.earliest}
        if rules.latest is not None and text > rules.latest:
            return "latest", {"latest": rules.latest}
    return None


def slot_label(domain: Domain, slot: str, lang: str) -> str:
    return domain.text(domain.slots[slot].label, lang, slot.replace("_", " "))


def reason_text(domain: Domain, slot: str, code: str, params: dict[str, Any], lang: str) -> str:
    """The reason for refusing a value of ``slot``, in ``lang``: the slot's own message for
    the rule, else the domain's ``reason_<code>`` response, else the built-in text."""
    own = domain.slots[slot].validation.messages.get(code, {}).get(lang)
    spec = domain.responses.get(f"reason_{code}")
    template = own or (spec.first(lang) if spec else None) or REASONS.get(code, {}).get(lang, "")
    try:
        return template.format(label=slot_label(domain, slot, lang), **params)
    except (KeyError, IndexError, ValueError):
        return template


def _plain(number: float) -> int | float:
    return int(number) if float(number).is_integer() else number
