"""Table-driven assertions for route tables: each case is a state and the expected target."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..definition._route_table import RouteTable

__all__ = ["RouteCase", "assert_routes"]


@dataclass(frozen=True, slots=True)
class RouteCase:
    """One row of a routing test: a state (model or mapping), the target, and a label."""

    state: Any
    expected: str
    label: str = ""


def assert_routes(
    table: RouteTable, cases: Iterable[RouteCase | tuple[Any, str] | tuple[Any, str, str]]
) -> None:
    """Resolve every case and fail once, listing every row whose target differs.

    >>> from flowkit import Route, RouteTable, field
    >>> table = RouteTable("t", [Route(field("ok"), "next")], default="retry")
    >>> assert_routes(table, [({"ok": True}, "next"), ({"ok": False}, "retry")])
    """
    failures: list[str] = []
    for index, raw in enumerate(cases):
        case = raw if isinstance(raw, RouteCase) else RouteCase(*raw)
        explained = table.explain(case.state)
        if explained.target != case.expected:
            label = case.label or _describe(case.state)
            failures.append(
                f"  case {index} ({label}): expected `{case.expected}`, got `{explained.target}` "
                f"via {explained.reason}"
            )
    if failures:
        raise AssertionError(
            f"Route table `{table.name}`: {len(failures)} case(s) routed wrongly:\n"
            + "\n".join(failures)
        )


def _describe(state: Any) -> str:
    if isinstance(state, Mapping):
        items = state.items()
    else:
        items = getattr(state, "model_dump", lambda: {})().items()
    shown = ", ".join(f"{k}={v!r}" for k, v in list(items)[:6])
    return shown or repr(state)[:80]
