"""Route tables as data: the building blocks, and one module per workflow's tables.

Build tables from ``Route``s and conditions (``field``, ``when``, ``all_of`` ...); resolve them
against a state with no engine: ``table.resolve(state)``.
"""

from __future__ import annotations

from ..definition._conditions import (
    Condition,
    all_of,
    always,
    any_of,
    condition_from_data,
    field,
    not_,
    when,
)
from ..definition._route_table import END, Resolution, Route, RouteTable

__all__ = [
    "END",
    "Condition",
    "Resolution",
    "Route",
    "RouteTable",
    "all_of",
    "always",
    "any_of",
    "condition_from_data",
    "field",
    "not_",
    "when",
]
