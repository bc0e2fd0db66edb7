"""Reducers: how a node's update to one state field combines with the field's current value.

A field without a reducer is overwritten. A field annotated with a reducer, such as
``messages: Annotated[list[str], append] = []``, is combined: ``append`` adds the update's
items to the end. Reducers must be pure, because journal replay calls them again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Reducer", "append", "reducer"]


@dataclass(frozen=True, slots=True)
class Reducer:
    """A named, pure function ``(current, update) -> new`` attached to a field via ``Annotated``.

    The update has the field's own type (for ``append`` on ``list[T]``, a ``list[T]``), so the
    engine validates it with the field's type before reducing.
    """

    name: str
    combine: Callable[[Any, Any], Any]

    def __call__(self, current: Any, update: Any) -> Any:
        return self.combine(current, update)

    def __repr__(self) -> str:
        return f"<reducer {self.name}>"


def _append(current: Sequence[Any] | None, update: Sequence[Any]) -> list[Any]:
    # A new list every time: earlier checkpoints may still hold the old one.
    if not current:
        return list(update)
    return [*current, *update]


#: Appends the update's items to the field (``messages``, ``exec_trace``, ``tool_calls`` ...).
append = Reducer("append", _append)


def reducer(name: str) -> Callable[[Callable[[Any, Any], Any]], Reducer]:
    """Turn a pure ``(current, update) -> new`` function into a reducer usable in ``Annotated``.

    >>> @reducer("max")
    ... def keep_max(current, update):
    ...     return max(current, update)
    >>> keep_max(3, 5)
    5
    """

    def wrap(fn: Callable[[Any, Any], Any]) -> Reducer:
        return Reducer(name, fn)

    return wrap
