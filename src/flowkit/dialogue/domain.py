"""The dialogue domain as data: intents, FAQ, entities, slots, goals, actions and responses.

A domain is YAML or JSON validated by these pydantic models, then cross-checked (every name it
refers to exists, every language has its phrases); ``load_domain`` reports every problem at
once in a ``DomainError`` naming the file and the path inside it.

The models live in ``_models``, finding a domain file in ``_locate``, reading and checking one
in ``_report``; this module loads a domain with them and re-exports their public names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import DomainError, UntrustedInputError
from ..foundation._untrusted import check_data_depth
from ._locate import example_names, example_path, resolve_path
from ._models import (
    AFFIRM,
    CONTROL_INTENTS,
    DENY,
    INFORM,
    NON_TASK_INTENTS,
    UNCLEAR,
    ActionSpec,
    Domain,
    EntitySpec,
    FaqSpec,
    GoalSpec,
    IntentSpec,
    Mode,
    ResponseSpec,
    SlotSpec,
    Style,
    ValidationSpec,
    WhenSpec,
    domain_json_schema,
)
from ._report import parse_file, problems_of

__all__ = [
    "AFFIRM",
    "CONTROL_INTENTS",
    "DENY",
    "INFORM",
    "NON_TASK_INTENTS",
    "UNCLEAR",
    "ActionSpec",
    "Domain",
    "EntitySpec",
    "FaqSpec",
    "GoalSpec",
    "IntentSpec",
    "Mode",
    "ResponseSpec",
    "SlotSpec",
    "Style",
    "ValidationSpec",
    "WhenSpec",
    "domain_json_schema",
    "example_names",
    "example_path",
    "load_domain",
    "read_data",
    "resolve_path",
]


def load_domain(source: str | Path | Mapping[str, Any] | Domain) -> Domain:
    """A validated domain from a file path, a shipped example name, or plain data.

    Raises:
        DomainError: the file is missing or unreadable, or the domain has problems (all listed,
            each with its path in the file and, from a file, its line).
    """
    if isinstance(source, Domain):
        return source
    if isinstance(source, Mapping):
        try:
            check_data_depth(source, what="domain")
        except UntrustedInputError as exc:
            raise DomainError([str(exc)]) from exc
        return _validate(source, None, {})
    if not isinstance(source, str | os.PathLike):
        raise DomainError(
            [
                f"expected a file path, a shipped example's name, a mapping or a Domain, not "
                f"{type(source).__name__}; pass one of those"
            ]
        )
    path = resolve_path(source)
    data, lines = parse_file(path)
    return _validate(data, str(path), lines)


def read_data(path: Path, what: str = "domain file") -> Any:
    """Parse a YAML or JSON file (by suffix); unreadable, oversized, non-UTF-8 or invalid
    files raise ``DomainError`` saying which and where."""
    return parse_file(path, what)[0]


def _validate(data: Any, path: str | None, lines: dict[tuple[str, ...], int]) -> Domain:
    domain, problems = problems_of(data, lines)
    if problems or domain is None:
        raise DomainError([str(p) for p in problems], path=path)
    return domain
