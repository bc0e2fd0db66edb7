"""The state schema: per-field validation, reducers, and the JSON form of states and updates.

Applying an update validates only the fields it touches (a state with thousands of messages
is not revalidated on every step) and returns the normalised update, which is exactly what
the journal stores: replaying stored updates through ``apply`` rebuilds the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import InvalidUpdateError
from ..foundation._logging import mask_text
from ..foundation._plain import shorten
from ._reducers import Reducer

__all__ = ["StateSchema", "Update"]

#: A partial update: field name -> value (for reducer fields, the reducer's update).
Update = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    adapter: TypeAdapter[Any]
    reducer: Reducer | None


def _reducer_of(metadata: list[Any]) -> Reducer | None:
    for item in metadata:
        if isinstance(item, Reducer):
            return item
    return None


def _reducer_failed(reducer: Reducer, node: str, key: str, exc: Exception) -> InvalidUpdateError:
    """The error for a reducer that raised: naming the node, the field and the reducer (its
    message masked, as a node's is)."""
    return InvalidUpdateError(
        f"`{node}` wrote `{key}`, and the field's reducer `{reducer.name}` raised "
        f"{type(exc).__name__}: {mask_text(str(exc))}. Fix the reducer, or the value the "
        "node writes; nothing was saved.",
        node=node,
        key=key,
    )


class StateSchema:
    """Everything the engine needs to know about a workflow's pydantic state model."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        fields: dict[str, _FieldSpec] = {}
        for name, info in model.model_fields.items():
            annotation = info.annotation
            # Validate with the field's full annotation minus our reducer marker.
            metadata = [m for m in info.metadata if not isinstance(m, Reducer)]
            adapter: TypeAdapter[Any] = TypeAdapter(
                Annotated[annotation, *metadata] if metadata else annotation  # type: ignore[arg-type]
            )
            fields[name] = _FieldSpec(name, adapter, _reducer_of(info.metadata))
        self.fields: Mapping[str, _FieldSpec] = fields
        self.reducer_fields = frozenset(n for n, f in fields.items() if f.reducer is not None)
        self._own_forms = {
            n: f.reducer.own_form
            for n, f in fields.items()
            if f.reducer is not None and f.reducer.own_form is not None
        }

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    def accepts(self, name: str, value: Any) -> bool:
        """Whether field ``name`` accepts ``value`` (used to check the error field at build)."""
        try:
            self.fields[name].adapter.validate_python(value)
        except ValidationError:
            return False
        return True

    def apply(
        self, state: BaseModel, update: Mapping[str, Any], *, node: str, strict_json: bool = False
    ) -> tuple[BaseModel, Update]:
        """Validate ``update`` field by field, reduce it into ``state``; return (new, normalised).

        ``strict_json=False`` accepts JSON-mode values (strings for datetimes, dicts for nested
        models), which is how updates come back from the journal.
        """
        if not update:  # many nodes change nothing: no dicts to build, no copy
            return state, {}
        normalised: Update = {}
        values: dict[str, Any] = {}
        fields = self.fields
        for key, raw in update.items():
            spec = fields.get(key)
            if spec is None:
                raise InvalidUpdateError(
                    f"`{node}` wrote `{shorten(str(key), 40)}`, which "
                    f"{self.model.__name__} has no field for; "
                    f"add the field to the state model or stop writing it.",
                    node=node,
                    key=key,
                )
            try:
                value = spec.adapter.validate_python(raw, strict=False if strict_json else None)
            except ValidationError as exc:
                raise InvalidUpdateError(
                    f"`{node}` wrote an invalid value for `{key}`: "
                    f"{_first_error(exc)}. Return a value of the field's type.",
                    node=node,
                    key=key,
                ) from exc
            normalised[key] = value
            if spec.reducer is not None:
                try:  # no call of its own on every step: a `try` costs nothing in 3.11
                    values[key] = spec.reducer(getattr(state, key), value)
                except Exception as exc:
                    raise _reducer_failed(spec.reducer, node, key, exc) from exc
            else:
                values[key] = value
        if not values:
            return state, normalised
        return state.model_copy(update=values), normalised

    def dump_update(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON form of a normalised update."""
        fields = self.fields
        return {k: fields[k].adapter.dump_python(v, mode="json") for k, v in update.items()}

    def dump_state(self, state: BaseModel) -> dict[str, Any]:
        return state.model_dump(mode="json")

    def load_state(self, data: Mapping[str, Any]) -> BaseModel:
        return self.own_form(self.model.model_validate(data, strict=False))

    def own_form(self, state: BaseModel, *, fresh: bool = False) -> BaseModel:
        """``state`` with its reducer fields in their reducers' own form (see ``Reducer``).

        A state loaded whole and the same state replayed step by step must be identical, type
        for type: an ``append`` field holds an ``AppendedList`` either way. ``fresh=True``
        says the caller has just built ``state`` and nobody else holds it, so it is changed
        in place instead of copied (the copy was most of what starting a thread cost).
        """
        if not self._own_forms:
            return state
        values = {name: form(getattr(state, name)) for name, form in self._own_forms.items()}
        if all(values[name] is getattr(state, name) for name in values):
            return state
        if fresh:
            state.__dict__.update(values)
            return state
        return state.model_copy(update=values)

    def replay(self, state: BaseModel, stored_update: Mapping[str, Any], *, node: str) -> BaseModel:
        """Apply an update read back from a journal (JSON form)."""
        new_state, _ = self.apply(state, stored_update, node=node, strict_json=True)
        return new_state


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first['msg']}{f' at {where}' if where else ''}{more}"
