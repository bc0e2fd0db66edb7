"""Reducers: how a node's update to one state field combines with the field's current value.

A field without a reducer is overwritten. A field annotated with a reducer, such as
``messages: Annotated[list[str], append] = []``, is combined: ``append`` adds the update's
items to the end. Reducers must be pure, because journal replay calls them again.

``append`` must not copy the whole list on every step (a chat of 100,000 messages would pay
for all of them each time), yet every earlier state (a checkpoint, a replayed version, a fork,
a parallel branch) must keep exactly its own items. So the field holds an ``AppendedList``:
a read-only sequence over a persistent vector (pyrsistent's ``pvector``), where appending
shares every existing item with the version it grew from. It reads, compares, prints and
serialises like the list it stands for; the JSON form of the state is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

if TYPE_CHECKING:
    from pyrsistent import PVector, pvector
else:
    try:
        # pyrsistent's C vector, imported alone: `import pyrsistent` loads every structure it
        # has (~40 ms), which every flowkit process would pay at its first append.
        from pvectorc import pvector
    except ImportError:  # no C extension (PyPy, or PYRSISTENT_NO_C_EXTENSION builds)
        from pyrsistent import pvector

__all__ = ["AppendedList", "Reducer", "append", "reducer"]

T = TypeVar("T")


class AppendedList(Sequence[T], Generic[T]):
    """What an ``append`` field holds: a read-only list whose appends share earlier items.

    Index it, slice it (a slice is a plain ``list``), iterate, ``len``, ``in``, compare it with
    a list (``==``), add it to a list (the result is a ``list``). ``list(x)`` or ``x.copy()``
    gives a plain, mutable list. It is never changed in place: a node returns the new items,
    ``{"messages": [reply]}``, and the reducer makes the next version.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: PVector[T] = pvector(items)

    def appended(self, items: Iterable[T]) -> AppendedList[T]:
        """A new version with ``items`` at the end; this one is unchanged."""
        new: AppendedList[T] = AppendedList.__new__(AppendedList)
        new._items = self._items.extend(items)
        return new

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self._items[index])
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items)

    def __contains__(self, value: object) -> bool:
        return value in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AppendedList):
            return bool(self._items == other._items)
        if isinstance(other, list):  # a tuple is not equal to a list either
            return bool(self._items == other)  # type: ignore[comparison-overlap]  # item by item
        return NotImplemented

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # unhashable, like a list

    def __add__(self, other: Iterable[T]) -> list[T]:
        if isinstance(other, list | AppendedList):
            return [*self._items, *other]
        return NotImplemented

    def __radd__(self, other: Iterable[T]) -> list[T]:
        if isinstance(other, list):
            return [*other, *self._items]
        return NotImplemented

    def copy(self) -> list[T]:
        """A plain, mutable list of the items (like ``list.copy``)."""
        return list(self._items)

    def __copy__(self) -> AppendedList[T]:
        return self  # immutable: a copy would be the same

    def __deepcopy__(self, memo: dict[int, Any]) -> AppendedList[T]:
        return AppendedList(copy.deepcopy(list(self._items), memo))

    def __reduce__(self) -> tuple[Any, ...]:
        return (AppendedList, (list(self._items),))

    def __repr__(self) -> str:
        return repr(list(self._items))


def _plain(value: Any) -> Any:
    """An ``AppendedList`` as the plain list it stands for; anything else as it is."""
    return list(value) if isinstance(value, AppendedList) else value


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
    return AppendedList([*(current or ()), *update])


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
