"""Reducers: how a node's update to one state field combines with the field's current value.

A field without a reducer is overwritten. A field annotated with a reducer, such as
``messages: Annotated[list[str], append] = []``, is combined: ``append`` adds the update's
items to the end. Reducers must be pure, because journal replay calls them again.

``append`` must not copy the whole list on every step (a chat of 100,000 messages would pay
for all of them each time), yet every earlier state (a checkpoint, a replayed version, a fork,
a parallel branch) must keep exactly its own items. So the field holds an ``AppendedList``: a
read-only view of the first ``n`` items of a list that its versions share. Items are only ever
added past the end of that list, so no version's items ever change; appending to the newest
version extends the list in place, appending to an older one (a fork, a branch) copies its
items once. It reads, compares, prints and serialises like the list it stands for; the JSON
form of the state is unchanged.

Why not a persistent vector library: pyrsistent's C ``pvector`` was tried first and appends
in O(1), but each new version reports every item to the garbage collector, so every
collection of young objects walked the whole history: +38 % per step at 100,000 messages.
A view of a shared list is one small young object per step, and reading it is list indexing.
"""

from __future__ import annotations

import copy
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar, Generic, TypeVar, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = ["AppendedList", "Reducer", "append", "reducer"]

T = TypeVar("T")

#: Makes "is this the newest version? then extend the shared list" one step across threads.
_GROW = threading.Lock()


class AppendedList(Sequence[T], Generic[T]):
    """What an ``append`` field holds: a read-only list whose appends share earlier items.

    Index it, slice it (a slice is a plain ``list``), iterate, ``len``, ``in``, compare it with
    a list (``==``), add it to a list (the result is a ``list``). ``list(x)`` or ``x.copy()``
    gives a plain, mutable list. It is never changed in place: a node returns the new items,
    ``{"messages": [reply]}``, and the reducer makes the next version.
    """

    __slots__ = ("_items", "_len")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._len = len(self._items)

    @classmethod
    def _view(cls, items: list[T], length: int) -> AppendedList[T]:
        view: AppendedList[T] = cls.__new__(cls)
        view._items = items
        view._len = length
        return view

    def appended(self, items: Iterable[T]) -> AppendedList[T]:
        """A new version with ``items`` at the end; this one is unchanged."""
        added = list(items)
        with _GROW:
            shared = self._items
            if len(shared) == self._len:  # nothing was added past us yet: grow in place
                shared.extend(added)
                return AppendedList._view(shared, len(shared))
        # A later version grew the shared list already (a fork, a branch, a replay of an
        # earlier state): this lineage goes on in a copy of our own items.
        fresh = shared[: self._len]
        fresh.extend(added)
        return AppendedList._view(fresh, len(fresh))

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            # indices() gives -1 for "before the first item" when stepping backwards.
            return self._items[start : stop if stop >= 0 else None : step]
        position = operator.index(index)
        if position < 0:
            position += self._len
        if not 0 <= position < self._len:
            raise IndexError("list index out of range")
        return self._items[position]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._len)

    def __reversed__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in range(self._len - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AppendedList):
            if self._items is other._items:
                return self._len == other._len
            other = other._items if other._len == len(other._items) else list(other)
        if not isinstance(other, list):  # a tuple is not equal to a list either
            return NotImplemented
        if len(other) != self._len:
            return False
        mine = self._items if self._len == len(self._items) else self._items[: self._len]
        return mine == other

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # unhashable, like a list

    def __add__(self, other: Iterable[T]) -> list[T]:
        if isinstance(other, list | AppendedList):
            return [*self, *other]
        return NotImplemented

    def __radd__(self, other: Iterable[T]) -> list[T]:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented

    def copy(self) -> list[T]:
        """A plain, mutable list of the items (like ``list.copy``)."""
        return self._items[: self._len]

    def __copy__(self) -> AppendedList[T]:
        return self  # immutable: a copy would be the same

    def __deepcopy__(self, memo: dict[int, Any]) -> AppendedList[T]:
        return AppendedList(copy.deepcopy(self.copy(), memo))

    def __reduce__(self) -> tuple[Any, ...]:
        return (AppendedList, (self.copy(),))

    def __repr__(self) -> str:
        return repr(self.copy())


def _plain(value: Any) -> Any:
    """An ``AppendedList`` as the plain list it stands for; anything else as it is."""
    return value.copy() if isinstance(value, AppendedList) else value


@dataclass(frozen=True, slots=True)
class Reducer:
    """A named, pure function ``(current, update) -> new`` attached to a field via ``Annotated``.

    The update has the field's own type (for ``append`` on ``list[T]``, a ``list[T]``), so the
    engine validates it with the field's type before reducing.
    """

    name: str
    combine: Callable[[Any, Any], Any]
    #: The reducer's own form of a field's value (``append``: an ``AppendedList``), applied
    #: to a state loaded whole (a start state, a snapshot), so it is the same, type for type,
    #: as the state that journal replay builds step by step.
    own_form: Callable[[Any], Any] | None = None

    def __call__(self, current: Any, update: Any) -> Any:
        return self.combine(current, update)

    def __repr__(self) -> str:
        return f"<reducer {self.name}>"

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        # A reducer field may hold an `AppendedList`: to pydantic it is the plain list it
        # stands for, so `model_dump`, JSON and `Model(messages=state.messages)` work as before.
        schema = handler(source)
        return core_schema.no_info_before_validator_function(
            _plain,
            schema,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _plain, return_schema=schema
            ),
        )


def _append(current: Sequence[Any] | None, update: Sequence[Any]) -> AppendedList[Any]:
    if isinstance(current, AppendedList):
        return current.appended(update)
    # The first append to a plain list (a fresh or a loaded state) copies it once.
    return AppendedList(current or ()).appended(update)


def _as_appended(value: Any) -> Any:
    if isinstance(value, AppendedList) or value is None:
        return value
    return AppendedList(value)


#: Appends the update's items to the field (``messages``, ``exec_trace``, ``tool_calls`` ...).
append = Reducer("append", _append, _as_appended)


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
