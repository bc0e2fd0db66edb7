"""Values a field that admits any type cannot give back as they were written.

A field typed ``Any`` (or ``dict[str, Any]``, a bare ``list``, a model with such a field ...)
keeps whatever a node puts in it while the thread runs, but a store keeps its JSON form, and
reading that back gives JSON's types: a tuple or a set comes back as a list, an int key as a
str, a datetime, a Decimal or bytes as a str, a model as a dict. The thread would then run on
one value in the process that wrote it and on another after a resume anywhere else. So, for
those fields only, the JSON form is read back once before anything is written and a value
that does not come back the same, type for type, is refused (``_jsonform`` raises
``UnstorableValueError`` with the reason this module gives). Fields with a declared type are
read back by that type and need no check.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from ._reducers import AppendedList, Reducer

__all__ = ["admits_any", "loose_fields", "unfaithful"]

_BARE = (dict, list, set, frozenset, tuple)
_LISTS = (list, AppendedList)


def admits_any(annotation: Any, _seen: frozenset[type] = frozenset()) -> bool:
    """Whether a value of ``annotation`` may hold something its JSON form does not give
    back (an ``Any``, ``object`` or bare container anywhere inside it)."""
    if annotation is Any or annotation is object or annotation in _BARE:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in _seen:
            return False
        seen = _seen | {annotation}
        if annotation.model_config.get("extra") == "allow":
            return True
        return any(admits_any(f.annotation, seen) for f in annotation.model_fields.values())
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return admits_any(args[0], _seen)
    return any(admits_any(a, _seen) for a in args if a is not Ellipsis)


@cache
def loose_fields(model: type[BaseModel]) -> Mapping[str, TypeAdapter[Any]]:
    """The fields of ``model`` that admit any type, each with the adapter reading it back."""
    out: dict[str, TypeAdapter[Any]] = {}
    for name, info in model.model_fields.items():
        if not admits_any(info.annotation):
            continue
        metadata = [m for m in info.metadata if not isinstance(m, Reducer)]
        annotation = info.annotation
        out[name] = TypeAdapter(
            Annotated[annotation, *metadata] if metadata else annotation  # type: ignore[arg-type]
        )
    return out


def unfaithful(
    adapter: TypeAdapter[Any], value: Any, stored: Any
) -> tuple[str, list[str | int]] | None:
    """Why ``stored`` (``value``'s JSON form) would not read back as ``value``, and where
    inside it; None when it reads back the same."""
    try:
        back = adapter.validate_python(stored, strict=False)
    except ValidationError:
        return "a value its field cannot read back from JSON", []
    return _difference(value, back)


def _kind(value: Any) -> str:
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _difference(written: Any, back: Any) -> tuple[str, list[str | int]] | None:
    if isinstance(written, _LISTS) and isinstance(back, _LISTS):  # a reducer's own form
        return _items(enumerate(written), enumerate(back), len(written), len(back))
    if isinstance(written, dict) and isinstance(back, dict) and type(written) is type(back):
        if len(written) != len(back):
            return "a mapping that would read back with a different number of keys", []
        for (key, item), (key_back, again) in zip(written.items(), back.items(), strict=True):
            if type(key) is not type(key_back) or key != key_back:
                why = f"{_kind(key)} key (it would read back as {_kind(key_back)})"
                return why, [str(key)]
            found = _difference(item, again)
            if found is not None:
                found[1].insert(0, key if isinstance(key, (str, int)) else str(key))
                return found
        return None
    if type(written) is not type(back):
        return f"{_kind(written)} (it would read back as {_kind(back)})", []
    if isinstance(written, tuple):
        return _items(enumerate(written), enumerate(back), len(written), len(back))
    if isinstance(written, BaseModel):
        pairs = list(written.__dict__.items()) + list((written.__pydantic_extra__ or {}).items())
        again = list(back.__dict__.items()) + list((back.__pydantic_extra__ or {}).items())
        return _items(pairs, again, len(pairs), len(again))
    if written != back:
        return f"{_kind(written)} that would read back as a different value", []
    return None


def _items(
    written: Any, back: Any, n_written: int, n_back: int
) -> tuple[str, list[str | int]] | None:
    if n_written != n_back:
        return "a container that would read back with a different number of items", []
    for (key, item), (_, again) in zip(written, back, strict=True):
        found = _difference(item, again)
        if found is not None:
            found[1].insert(0, key if isinstance(key, (str, int)) else str(key))
            return found
    return None
