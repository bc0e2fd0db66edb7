"""Gates: named states where a run pauses until a person (or a system) supplies input.

The input is validated against the gate's pydantic model. By default the fields the caller
set are written into the state; ``apply`` turns the input into any other update instead.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

__all__ = ["MAX_DEADLINE", "Gate"]

#: The longest a gate waits for its answer (a century): any later time could not be kept.
MAX_DEADLINE = timedelta(days=36_525)


@dataclass(frozen=True, slots=True)
class Gate:
    """A pause point: ``Gate(ReviewInput)`` or ``Gate(ReviewInput, apply=fn, writes=[...])``.

    ``apply(state, input) -> update`` maps a validated input onto a state update; without it
    the input's explicitly given fields are copied into same-named state fields. An ``apply``
    with a keyword-only ``thread_id`` parameter also receives the thread's id.

    ``payload(state)`` is what the pause carries to whoever answers it (the question, the
    draft, the options): computed once, when the thread arrives at the gate, journaled with
    that step, and returned by ``get_state``/``RunResult.pauses``, events, streams, the CLI
    and the HTTP API. It must have a JSON form (a dict, list, str, number, a model).
    """

    input: type[BaseModel]
    apply: Callable[..., Mapping[str, Any] | None] | None = None
    writes: frozenset[str] | None = None
    description: str = ""
    payload: Callable[[Any], Any] | None = None
    #: How long the gate waits for its answer (a ``timedelta``, or seconds) before its timer
    #: fires and the thread moves to ``on_timeout`` (see docs/timers.md); ``None``: forever.
    #: Or a function ``state -> datetime | timedelta | None`` asked as the thread arrives: a
    #: wake-up the state decides (a reminder), ``None`` for none this time.
    deadline: timedelta | Callable[[Any], datetime | timedelta | None] | None = None
    #: The state the thread moves to when the deadline passes unanswered.
    on_timeout: str | None = None

    def __init__(
        self,
        input: type[BaseModel],
        *,
        apply: Callable[..., Mapping[str, Any] | None] | None = None,
        writes: Iterable[str] | None = None,
        description: str = "",
        payload: Callable[[Any], Any] | None = None,
        deadline: timedelta | float | Callable[[Any], datetime | timedelta | None] | None = None,
        on_timeout: str | None = None,
    ) -> None:
        if not (isinstance(input, type) and issubclass(input, BaseModel)):
            raise TypeError(f"Gate input must be a pydantic model class, got {input!r}")
        if payload is not None and not callable(payload):
            raise TypeError(
                "Gate payload= is a function state -> what the pause shows whoever answers it"
            )
        object.__setattr__(self, "input", input)
        object.__setattr__(self, "apply", apply)
        object.__setattr__(self, "writes", frozenset(writes) if writes is not None else None)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "payload", payload)
        if deadline is not None and not isinstance(deadline, timedelta) and not callable(deadline):
            if isinstance(deadline, bool) or not isinstance(deadline, int | float):
                raise TypeError(
                    "Gate deadline= is a timedelta, a number of seconds, or a function "
                    "state -> datetime | timedelta | None"
                )
            if not math.isfinite(deadline) or abs(deadline) > MAX_DEADLINE.total_seconds():
                raise ValueError(
                    f"Gate deadline= must be a positive time of at most {MAX_DEADLINE.days} days"
                )
            deadline = timedelta(seconds=deadline)
        if isinstance(deadline, timedelta) and not timedelta(0) < deadline <= MAX_DEADLINE:
            raise ValueError(
                f"Gate deadline= must be a positive time of at most {MAX_DEADLINE.days} days"
            )
        if (deadline is None) != (on_timeout is None):
            raise TypeError(
                "Gate deadline= and on_timeout= go together: how long the gate waits, and the "
                "state the thread moves to when nobody answered in time"
            )
        object.__setattr__(self, "deadline", deadline)
        object.__setattr__(self, "on_timeout", on_timeout)

    @property
    def on_arrival(self) -> bool:
        """Whether a thread arriving at this gate carries something: a payload, a deadline."""
        return self.payload is not None or self.deadline is not None

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
