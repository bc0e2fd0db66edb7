"""Flow versions: what a ``Migration`` changes, and what makes a flow's migrations wrong.

How a thread that ran under an older version is brought up to the current one is the
execution core's (``flowkit.execution._upgrade``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._shape import FlowShape

__all__ = ["DOCS", "Migration", "migration_problems", "order"]

DOCS = "see docs/migrations.md"


class Migration:
    """How threads of version ``to - 1`` become version ``to``.

    ``positions`` moves threads: a renamed node or gate (``{"review": "approval"}``) or a
    removed one mapped to another (``{"polish": "draft"}``). ``fields`` sets fields of the
    state, each to a value or to ``fn(old_state)``, where ``old_state`` is the state before
    this migration as a plain JSON dict (a new required field computed from the old state).
    ``drop`` removes fields the model no longer has. ``state``, for anything else, maps the
    JSON dict after those to the new one. A thread's ``dialog_state`` mirror follows its
    position. Functions must be pure: history applies them again to older checkpoints.
    """

    __slots__ = ("description", "drop", "fields", "positions", "state", "to")

    def __init__(
        self,
        *,
        to: int,
        positions: Mapping[str, str] | None = None,
        fields: Mapping[str, Any] | None = None,
        drop: Iterable[str] = (),
        state: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        description: str = "",
    ) -> None:
        self.to = to
        self.positions: dict[str, str] = dict(positions or {})
        self.fields: dict[str, Any] = dict(fields or {})
        self.drop: tuple[str, ...] = tuple(drop)
        self.state = state
        self.description = description

    def __repr__(self) -> str:
        return f"Migration(to={self.to}: {self.describe()})"

    def describe(self) -> str:
        """What the migration does, in words (shown in history and by ``flowkit migrate``)."""
        parts = [f"move {old} -> {new}" for old, new in self.positions.items()]
        parts += [f"set {name}" for name in self.fields]
        parts += [f"drop {name}" for name in self.drop]
        if self.state is not None:
            parts.append(f"state {getattr(self.state, '__name__', 'function')}")
        if self.description:
            parts.insert(0, self.description)
        return "; ".join(parts) or "version bump"

    def apply(self, state: dict[str, Any], node: str) -> tuple[dict[str, Any], str]:
        """The state and position after this migration (``state`` is not changed)."""
        old = copy.deepcopy(state)
        new = dict(state)
        for name, value in self.fields.items():
            new[name] = value(old) if callable(value) else copy.deepcopy(value)
        for name in self.drop:
            new.pop(name, None)
        if self.state is not None:
            new = self.state(new)
            if not isinstance(new, dict):
                raise TypeError(f"the state function returned {type(new).__name__}, not a dict")
        mirrored = new.get("dialog_state")
        if isinstance(mirrored, str) and mirrored in self.positions:
            new["dialog_state"] = self.positions[mirrored]
        return new, self.positions.get(node, node)


def migration_problems(flow: FlowShape) -> list[str]:
    """What is wrong with a flow's version and migrations (empty when nothing)."""
    version = flow.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return [f"version must be a whole number >= 1, not {version!r}."]
    problems: list[str] = []
    seen: set[int] = set()
    for each in flow.migrations:
        if not isinstance(each, Migration):
            problems.append(f"{each!r} is not a Migration; pass Migration(to=..., ...).")
            continue
        if isinstance(each.to, bool) or not isinstance(each.to, int) or not 2 <= each.to <= version:
            problems.append(
                f"Migration to version {each.to!r} is outside 2..{version}; a migration "
                "upgrades threads to a version up to the flow's own."
            )
        elif each.to in seen:
            problems.append(f"Two migrations upgrade to version {each.to}; merge them.")
        seen.add(each.to if isinstance(each.to, int) else -1)
        for name in each.fields:
            if name not in flow.schema:
                problems.append(
                    f"Migration to version {each.to} sets `{name}`, which "
                    f"{flow.state.__name__} has no field for; add the field or fix the name."
                )
        if each.state is not None and not callable(each.state):
            problems.append(f"Migration to version {each.to}: `state` must be a function.")
    chain = sorted((m for m in flow.migrations if isinstance(m, Migration)), key=order)
    for each in chain:
        for old, new in each.positions.items():
            final = new
            for later in chain:
                if order(later) > order(each):
                    final = later.positions.get(final, final)
            if final not in flow.states:
                problems.append(
                    f"Migration to version {each.to} moves `{old}` to `{new}`, which is not a "
                    f"state of this flow{' after later migrations' if final != new else ''}; "
                    "fix the name."
                )
    return problems


def order(migration: Migration) -> int:
    return migration.to if isinstance(migration.to, int) else 0
