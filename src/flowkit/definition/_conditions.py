"""Conditions for route tables: declarative field predicates and named callables.

Declarative conditions (``field("approved")``, ``field("mode").eq("SLOT_FILLING")``,
``field("intent").is_in([...])``, combined with ``~``, ``&``, ``|``) are data: they serialise to
JSON and back, describe themselves for diagrams, and name the fields they read so a flow can
check them against its state model. ``when(name, fn)`` wraps any pure function, kept by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal

from pydantic import BaseModel

__all__ = [
    "AllOf",
    "Always",
    "AnyOf",
    "Call",
    "Condition",
    "FieldCondition",
    "Not",
    "all_of",
    "always",
    "any_of",
    "condition_from_data",
    "field",
    "not_",
    "when",
]

_MISSING = object()
Scalar = str | int | float | bool | None


def read_path(state: Any, path: str) -> Any:
    """Read ``a.b.c`` from a model or mapping; a missing step reads as ``None``."""
    return read_parts(state, tuple(path.split(".")))


def read_parts(state: Any, parts: tuple[str, ...]) -> Any:
    """``read_path`` with the path already split (conditions split theirs once, when made)."""
    value = state
    for part in parts:
        # Models first: they are what flows route on, and asking the Mapping ABC about a
        # model costs several times more than this test (it ran on every rule of every step).
        if isinstance(value, BaseModel):
            value = getattr(value, part, _MISSING)
        elif isinstance(value, Mapping):
            value = value.get(part, _MISSING)
        else:
            value = getattr(value, part, _MISSING)
        if value is _MISSING:
            return None
    return value


def _same(actual: Any, expected: Any) -> bool:
    # Enums compare by their value, so tables written as data match enum-typed fields.
    if actual == expected:
        return True
    inner = getattr(actual, "value", _MISSING)
    return inner is not _MISSING and inner == expected


class Condition(ABC):
    """Base of every condition: callable on a state, combinable, describable, serialisable."""

    @abstractmethod
    def __call__(self, state: Any) -> bool:
        """Whether the condition holds for ``state`` (a model or a mapping)."""

    @abstractmethod
    def describe(self) -> str:
        """A short human-readable form, used in diagrams and error messages."""

    @abstractmethod
    def to_data(self) -> Any:
        """The JSON form that ``condition_from_data`` reads back."""

    def fields(self) -> frozenset[str]:
        """Top-level state fields this condition reads."""
        return frozenset()

    def calls(self) -> frozenset[str]:
        """Names of the callables this condition uses."""
        return frozenset()

    def __invert__(self) -> Condition:
        return Not(self)

    def __and__(self, other: Condition) -> Condition:
        return AllOf((self, other))

    def __or__(self, other: Condition) -> Condition:
        return AnyOf((self, other))

    def __repr__(self) -> str:
        return f"<condition {self.describe()}>"


@dataclass(frozen=True, eq=True, repr=False)
class FieldCondition(Condition):
    """A predicate on one field path: truthy, equals a value, or is one of several values."""

    path: str
    op: Literal["truthy", "eq", "in"] = "truthy"
    value: Any = None
    #: ``path`` split at its dots, once: routing reads it on every step.
    parts: tuple[str, ...] = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.path.split(".")))

    def __call__(self, state: Any) -> bool:
        actual = read_parts(state, self.parts)
        if self.op == "truthy":
            return bool(actual)
        if self.op == "eq":
            return _same(actual, self.value)
        return any(_same(actual, v) for v in self.value)

    def eq(self, value: Scalar) -> FieldCondition:
        return FieldCondition(self.path, "eq", value)

    def is_in(self, values: Iterable[Scalar]) -> FieldCondition:
        return FieldCondition(self.path, "in", tuple(values))

    def describe(self) -> str:
        if self.op == "truthy":
            return self.path
        if self.op == "eq":
            return f"{self.path} == {self.value!r}"
        return f"{self.path} in {list(self.value)!r}"

    def to_data(self) -> Any:
        if self.op == "truthy":
            return {"field": self.path}
        if self.op == "eq":
            return {"field": self.path, "equals": self.value}
        return {"field": self.path, "in": list(self.value)}

    def fields(self) -> frozenset[str]:
        return frozenset({self.path.split(".", 1)[0]})


@dataclass(frozen=True, eq=True, repr=False)
class Not(Condition):
    inner: Condition

    def __call__(self, state: Any) -> bool:
        return not self.inner(state)

    def describe(self) -> str:
        return f"not {self.inner.describe()}"

    def to_data(self) -> Any:
        return {"not": self.inner.to_data()}

    def fields(self) -> frozenset[str]:
        return self.inner.fields()

    def calls(self) -> frozenset[str]:
        return self.inner.calls()


@dataclass(frozen=True, eq=True, repr=False)
class AllOf(Condition):
    parts: tuple[Condition, ...]

    def __call__(self, state: Any) -> bool:
        return all(p(state) for p in self.parts)

    def describe(self) -> str:
        return "(" + " and ".join(p.describe() for p in self.parts) + ")"

    def to_data(self) -> Any:
        return {"all": [p.to_data() for p in self.parts]}

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(p.fields() for p in self.parts))

    def calls(self) -> frozenset[str]:
        return frozenset().union(*(p.calls() for p in self.parts))


@dataclass(frozen=True, eq=True, repr=False)
class AnyOf(Condition):
    parts: tuple[Condition, ...]

    def __call__(self, state: Any) -> bool:
        return any(p(state) for p in self.parts)

    def describe(self) -> str:
        return "(" + " or ".join(p.describe() for p in self.parts) + ")"

    def to_data(self) -> Any:
        return {"any": [p.to_data() for p in self.parts]}

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(p.fields() for p in self.parts))

    def calls(self) -> frozenset[str]:
        return frozenset().union(*(p.calls() for p in self.parts))


@dataclass(frozen=True, eq=True, repr=False)
class Always(Condition):
    """Matches every state; any rule after it is shadowed."""

    def __call__(self, state: Any) -> bool:
        return True

    def describe(self) -> str:
        return "always"

    def to_data(self) -> Any:
        return {"always": True}


@dataclass(frozen=True, eq=False, repr=False)
class Call(Condition):
    """A named pure function of the state; serialised by name."""

    name: str
    fn: Callable[[Any], bool]

    def __call__(self, state: Any) -> bool:
        return bool(self.fn(state))

    def describe(self) -> str:
        return f"{self.name}()"

    def to_data(self) -> Any:
        return {"call": self.name}

    def calls(self) -> frozenset[str]:
        return frozenset({self.name})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Call) and other.name == self.name and other.fn is self.fn

    def __hash__(self) -> int:
        return hash(("call", self.name))


def field(path: str) -> FieldCondition:
    """A condition on a state field (``a.b`` reads nested fields); truthy unless refined."""
    if not path or any(not part.isidentifier() for part in path.split(".")):
        raise ValueError(f"field path {path!r} must be dotted identifiers like 'goal_state.step'")
    return FieldCondition(path)


def not_(condition: Condition) -> Condition:
    return Not(condition)


def all_of(*conditions: Condition) -> Condition:
    return AllOf(tuple(conditions))


def any_of(*conditions: Condition) -> Condition:
    return AnyOf(tuple(conditions))


def always() -> Condition:
    return Always()


def when(name: str, fn: Callable[[Any], bool]) -> Call:
    """Wrap a pure predicate ``fn(state) -> bool`` as a named condition."""
    if not name.isidentifier():
        raise ValueError(f"condition name {name!r} must be an identifier")
    return Call(name, fn)


def condition_from_data(
    data: Any, callables: Mapping[str, Callable[[Any], bool]] | None = None
) -> Condition:
    """Rebuild a condition from ``to_data()`` output; named calls come from ``callables``."""
    from ..errors import FlowDefinitionError

    if not isinstance(data, Mapping) or len(data) == 0:
        raise FlowDefinitionError("<route data>", [f"condition {data!r} is not an object"])
    if "field" in data:
        cond = field(str(data["field"]))
        if "equals" in data:
            return cond.eq(data["equals"])
        if "in" in data:
            return cond.is_in(data["in"])
        return cond
    if "not" in data:
        return Not(condition_from_data(data["not"], callables))
    if "all" in data:
        return AllOf(tuple(condition_from_data(d, callables) for d in data["all"]))
    if "any" in data:
        return AnyOf(tuple(condition_from_data(d, callables) for d in data["any"]))
    if data.get("always") is True:
        return Always()
    if "call" in data:
        name = str(data["call"])
        fn = (callables or {}).get(name)
        if fn is None:
            raise FlowDefinitionError(
                "<route data>",
                [f"condition calls `{name}`, which was not given; pass callables={{'{name}': fn}}"],
            )
        return Call(name, fn)
    raise FlowDefinitionError("<route data>", [f"condition {dict(data)!r} has no known form"])
