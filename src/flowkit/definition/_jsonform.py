"""The JSON form of what a thread saves, checked before anything is written.

JSON has no NaN or infinity (encoders write ``null`` or a non-standard token), no bytes and no
arbitrary objects, and readers refuse deep nesting and integers of over 4,300 digits. A value
like that, once written, makes the thread unloadable; so every start state, node update, gate
input and patch is turned into its JSON form here and refused with ``UnstorableValueError``
(naming thread, node or gate, field and where inside the field) while nothing has been written
yet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

from ..errors import UnstorableValueError
from ..foundation._long_numbers import SAFE_BITS, int_too_long
from ._faithful import loose_fields, unfaithful

if TYPE_CHECKING:
    from ._state import StateSchema

__all__ = ["MAX_NESTING", "check_json_form", "dump_state", "dump_update"]

#: How deep containers may nest inside one field's value. The journal's reader (pydantic's
#: JSON parser) stops at 200 levels and a snapshot wraps a field in three more; 128 leaves room.
MAX_NESTING = 128

# Raised by pydantic's serialiser for values it cannot dump: unknown types
# (PydanticSerializationError is a ValueError), bytes that are not UTF-8 (UnicodeError),
# nesting past its own limit (ValueError), or a recursive structure.
_DUMP_ERRORS = (ValueError, TypeError, UnicodeError, RecursionError)


def dump_update(
    schema: StateSchema, update: Mapping[str, Any], *, thread_id: str, who: str
) -> dict[str, Any]:
    """The JSON form of a normalised update, field by field; ``UnstorableValueError`` if any
    field cannot be stored faithfully."""
    fields = schema.fields
    loose = loose_fields(schema.model)
    out: dict[str, Any] = {}
    for key, value in update.items():
        adapter = fields[key].adapter
        out[key] = stored = _dump(
            partial(adapter.dump_python, value, mode="json"),
            thread_id=thread_id,
            who=who,
            field=key,
        )
        _check_floats(value, thread_id=thread_id, who=who, field=key)
        if key in loose:
            _check_faithful(adapter, value, stored, thread_id=thread_id, who=who, field=key)
    return out


def dump_state(
    model: BaseModel, *, thread_id: str, who: str, dump: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``dump()`` (a whole state's JSON form), checked field by field."""
    try:
        data = dump()
    except _DUMP_ERRORS:
        # Find the field to blame: dump each one alone (only on this error path).
        for name in type(model).model_fields:
            _dump(
                partial(model.model_dump, mode="json", include={name}),
                thread_id=thread_id,
                who=who,
                field=name,
            )
        raise
    loose = loose_fields(type(model))
    for key, value in data.items():
        check_json_form(value, thread_id=thread_id, who=who, field=key)
        written = getattr(model, key, None)
        _check_floats(written, thread_id=thread_id, who=who, field=key)
        adapter = loose.get(key)
        if adapter is not None:
            _check_faithful(adapter, written, value, thread_id=thread_id, who=who, field=key)
    return data


def dump_payload(value: Any, *, thread_id: str, who: str) -> Any:
    """The JSON form of a pause's payload (a model, a dict, a list, text, a number), as the
    journal keeps it and every reader is given it; ``UnstorableValueError`` if JSON cannot
    carry it faithfully."""
    from pydantic_core import to_jsonable_python

    _check_floats(value, thread_id=thread_id, who=who, field="payload")
    dump = partial(to_jsonable_python, value, fallback=_plain_container)
    return _dump(dump, thread_id=thread_id, who=who, field="payload")


def _plain_container(value: Any) -> Any:
    """A container JSON has no name for (a reducer's list, a ``UserDict``) as the plain one."""
    if isinstance(value, Sequence | AbstractSet) and not isinstance(value, str | bytes):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _check_faithful(
    adapter: TypeAdapter[Any], value: Any, stored: Any, *, thread_id: str, who: str, field: str
) -> None:
    found = unfaithful(adapter, value, stored)
    if found is not None:
        reason, path = found
        where = field + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        reason += (
            " in a field of any type (JSON would give it back changed after a resume; "
            "or declare the field's type)"
        )
        raise UnstorableValueError(reason, thread_id=thread_id, node=who, field=field, at=where)


def _dump(produce: Callable[[], Any], *, thread_id: str, who: str, field: str) -> Any:
    try:
        value = produce()
    except _DUMP_ERRORS as exc:
        raise UnstorableValueError(
            _reason_of(exc), thread_id=thread_id, node=who, field=field
        ) from exc
    check_json_form(value, thread_id=thread_id, who=who, field=field)
    return value


def check_json_form(value: Any, *, thread_id: str, who: str, field: str) -> None:
    """Refuse a JSON-form value that JSON cannot carry faithfully (NaN, ±inf, lone
    surrogates, nesting deeper than ``MAX_NESTING``, integers Python cannot read back)."""
    found = _problem(value, 0)
    if found is not None:
        reason, path = found
        if reason.startswith("containers nested"):
            path = []  # a path 128 levels long helps nobody
        where = field + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        raise UnstorableValueError(reason, thread_id=thread_id, node=who, field=field, at=where)


def _check_floats(value: Any, *, thread_id: str, who: str, field: str) -> None:
    # pydantic turns a NaN or inf into None when it infers a type (``Any``, ``dict[str, Any]``)
    # but keeps it for a declared float, so only the Python value shows every one of them.
    path = _nonfinite(value, 0)
    if path is not None:
        where = field + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        reason = "NaN or infinity (JSON has no NaN or infinity)"
        raise UnstorableValueError(reason, thread_id=thread_id, node=who, field=field, at=where)


def _nonfinite(value: Any, depth: int) -> list[str | int] | None:
    kind = type(value)
    if kind is float:
        return None if math.isfinite(value) else []
    if kind in _SCALARS or depth > MAX_NESTING:
        return None
    items: Any
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    elif isinstance(value, (set, frozenset)):
        items = ((i, v) for i, v in enumerate(value))
    elif isinstance(value, BaseModel):
        items = value.__dict__.items()
    elif isinstance(value, float):
        return None if math.isfinite(value) else []
    else:
        return None
    for key, item in items:
        found = _nonfinite(item, depth + 1)
        if found is not None:
            found.insert(0, key if isinstance(key, (str, int)) else str(key))
            return found
    return None


_SCALARS = frozenset({str, int, bool, type(None), bytes})


def _problem(value: Any, depth: int) -> tuple[str, list[str | int]] | None:
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return None
        return f"{value!r} (JSON has no NaN or infinity)", []
    if kind is int:
        if value.bit_length() <= SAFE_BITS:
            return None
        reason = int_too_long(value)
        return None if reason is None else (reason, [])
    if kind is str:
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string with a lone surrogate (not valid Unicode text)", []
        return None
    if kind is dict or kind is list:
        if depth >= MAX_NESTING:
            return f"containers nested more than {MAX_NESTING} levels deep", []
        items = value.items() if kind is dict else enumerate(value)
        for key, item in items:
            if type(key) is str and not key.isascii():
                found = _problem(key, depth)
                if found is not None:
                    return found[0], [key]
            found = _problem(item, depth + 1)
            if found is not None:
                found[1].insert(0, key)
                return found
    return None


def _reason_of(exc: BaseException) -> str:
    if isinstance(exc, UnicodeError):
        return "bytes that are not UTF-8 text (store binary data base64-encoded)"
    if isinstance(exc, RecursionError):
        return f"containers nested more than {MAX_NESTING} levels deep"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "depth" in text or "ecursion" in text:
        return f"containers nested more than {MAX_NESTING} levels deep (or a cycle)"
    return f"a value JSON cannot hold ({text[:160]})"
