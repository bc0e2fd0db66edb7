"""Gates: named states where a run pauses until a person (or a system) supplies input.

The input is validated against the gate's pydantic model. By default the fields the caller
set are written into the state; ``apply`` turns the input into any other update instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["Gate"]


@dataclass(frozen=True, slots=True)
class Gate:
    """A pause point: ``Gate(ReviewInput)`` or ``Gate(ReviewInput, apply=fn, writes=[...])``.

    ``apply(state, input) -> update`` maps a validated input onto a state update; without it
    the input's explicitly given fields are copied into same-named state fields. An ``apply``
    with a keyword-only ``thread_id`` parameter also receives the thread's id.
    """

    input: type[BaseModel]
    apply: Callable[..., Mapping[str, Any] | None] | None = None
    writes: frozenset[str] | None = None
    description: str = ""

    def __init__(
        self,
        input: type[BaseModel],
        *,
        apply: Callable[..., Mapping[str, Any] | None] | None = None,
        writes: Iterable[str] | None = None,
        description: str = "",
    ) -> None:
        if not (isinstance(input, type) and issubclass(input, BaseModel)):
            raise TypeError(f"Gate input must be a pydantic model class, got {input!r}")
        object.__setattr__(self, "input", input)
        object.__setattr__(self, "apply", apply)
        object.__setattr__(self, "writes", frozenset(writes) if writes is not None else None)
        object.__setattr__(self, "description", description)

    @property
    def default_writes(self) -> frozenset[str]:
        """The state fields the default mapping can write: the input model's fields."""
        return frozenset(self.input.model_fields)

    def to_update(self, state: Any, value: BaseModel, *, thread_id: str = "") -> Mapping[str, Any]:
        if self.apply is not None:
            if "thread_id" in inspect.signature(self.apply).parameters:
                return self.apply(state, value, thread_id=thread_id) or {}
            return self.apply(state, value) or {}
        return {name: getattr(value, name) for name in value.model_fields_set}


def as_gate(value: Gate | type[BaseModel]) -> Gate:
    return value if isinstance(value, Gate) else Gate(value)
