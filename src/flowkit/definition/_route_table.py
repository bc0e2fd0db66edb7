"""Route tables: ordered ``condition -> target`` rules plus a default, as plain data.

A table resolves a state with no engine, store or LLM, so routing logic is unit-tested on its
own. Declarative tables serialise to JSON and back (``to_data`` / ``from_data``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import FlowDefinitionError, RouteError, UntrustedInputError
from ..foundation._logging import mask_text
from ..foundation._untrusted import check_data_depth, parse_json
from ._conditions import Always, Call, Condition, condition_from_data

__all__ = ["END", "Resolution", "Route", "RouteTable"]

#: The target that ends a run successfully.
END: Final = "__end__"


@dataclass(frozen=True, slots=True, init=False)
class Route:
    """One rule: when ``condition`` holds for the state, go to ``target``.

    ``condition`` is a flowkit condition, or a plain named function ``fn(state) -> bool``,
    which becomes ``when(fn.__name__, fn)``: it routes, describes and serialises by that name.
    A lambda or a ``functools.partial`` has no usable name and is refused.
    """

    condition: Condition
    target: str

    def __init__(self, condition: Condition | Callable[[Any], bool], target: str) -> None:
        object.__setattr__(self, "condition", _as_condition(condition, target))
        object.__setattr__(self, "target", target)


def _as_condition(condition: object, target: str) -> Condition:
    if isinstance(condition, Condition):
        return condition
    if not callable(condition):
        raise FlowDefinitionError(
            "<route>",
            [
                f"Route to `{target}`: the condition {condition!r:.60} is not a condition; pass "
                "field(...), when(...) or a named function fn(state) -> bool"
            ],
        )
    # Only a real name survives the JSON form and reads well in diagrams and errors; a
    # lambda is `<lambda>`, a partial or callable object has no `__name__` of its own.
    name = getattr(condition, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier() or isinstance(condition, type):
        raise FlowDefinitionError(
            "<route>",
            [
                f"Route to `{target}`: the condition {_callable_label(condition)} has no name "
                "to route, show and save it by; define it with `def is_ready(state): ...` or "
                "wrap it: when('is_ready', fn)"
            ],
        )
    return Call(name, condition)


def _callable_label(fn: object) -> str:
    name = getattr(fn, "__name__", None)
    return f"`{name}`" if isinstance(name, str) else f"{type(fn).__name__} {fn!r:.60}"


@dataclass(frozen=True, slots=True)
class Resolution:
    """Which target a table chose and why (``rule`` is the index, ``None`` for the default)."""

    target: str
    rule: int | None
    reason: str


class RouteTable:
    """An ordered list of rules and a default target; the first matching rule wins."""

    __slots__ = ("_rules", "default", "name")

    def __init__(self, name: str, rules: Sequence[Route], *, default: str | None = None) -> None:
        if default is not None and not isinstance(default, str):
            raise FlowDefinitionError(
                str(name),
                [
                    f"route table `{name}`: default must be a node name (a string) or None, "
                    f"not {type(default).__name__} {default!r:.60}; fix the table"
                ],
            )
        self.name = name
        self._rules: tuple[Route, ...] = tuple(rules)
        self.default = default

    @property
    def rules(self) -> tuple[Route, ...]:
        return self._rules

    @property
    def targets(self) -> frozenset[str]:
        """Every target this table can return."""
        found = {r.target for r in self._rules}
        if self.default is not None:
            found.add(self.default)
        return frozenset(found)

    def resolve(self, state: Any) -> str:
        """The target for ``state`` (a model or a mapping)."""
        for route in self._rules:
            try:
                matched = route.condition(state)
            except Exception as exc:
                raise _condition_failed(self.name, route, exc) from exc
            if matched:
                return route.target
        if self.default is None:
            raise RouteError(
                f"Route table `{self.name}` matched no rule and has no default; add default=...",
                table=self.name,
            )
        return self.default

    def explain(self, state: Any) -> Resolution:
        """Like ``resolve``, also saying which rule matched."""
        for index, route in enumerate(self._rules):
            try:
                matched = route.condition(state)
            except Exception as exc:
                raise _condition_failed(self.name, route, exc) from exc
            if matched:
                return Resolution(route.target, index, route.condition.describe())
        if self.default is None:
            self.resolve(state)  # raises the RouteError with its message
        return Resolution(self.default or "", None, "default")

    def problems(self) -> list[str]:
        """Problems visible in the table alone: shadowed rules and a missing default."""
        found: list[str] = []
        seen: dict[str, int] = {}
        unconditional: int | None = None
        for index, route in enumerate(self._rules):
            described = json.dumps(route.condition.to_data(), sort_keys=True, default=str)
            if unconditional is not None:
                found.append(
                    f"Route table `{self.name}`: rule {index} (`{route.condition.describe()} -> "
                    f"{route.target}`) can never match because rule {unconditional} is "
                    f"unconditional; move it up or delete it."
                )
            elif described in seen:
                found.append(
                    f"Route table `{self.name}`: rule {index} repeats the condition of rule "
                    f"{seen[described]} (`{route.condition.describe()}`) and can never match; "
                    f"delete it or change its condition."
                )
            else:
                seen[described] = index
            if isinstance(route.condition, Always) and unconditional is None:
                unconditional = index
        if unconditional is not None and self.default is not None:
            found.append(
                f"Route table `{self.name}`: default `{self.default}` can never be used because "
                f"rule {unconditional} is unconditional; drop the default or that rule."
            )
        if unconditional is None and self.default is None:
            found.append(
                f"Route table `{self.name}` has no default, so a state matching no rule stops "
                f"the run; add default=... (use END to finish)."
            )
        return found

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(r.condition.fields() for r in self._rules))

    def to_data(self) -> dict[str, Any]:
        """Plain data (JSON-ready) that ``from_data`` turns back into an equal table."""
        return {
            "name": self.name,
            "rules": [{"when": r.condition.to_data(), "to": r.target} for r in self._rules],
            "default": self.default,
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_data(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_data(
        cls,
        data: Mapping[str, Any],
        *,
        callables: Mapping[str, Callable[[Any], bool]] | None = None,
    ) -> RouteTable:
        try:
            check_data_depth(data, what="route table data")
        except UntrustedInputError as exc:
            raise FlowDefinitionError("<route data>", [str(exc)]) from exc
        try:
            rules = [
                Route(condition_from_data(rule["when"], callables), str(rule["to"]))
                for rule in data["rules"]
            ]
            return cls(str(data["name"]), rules, default=data.get("default"))
        except (KeyError, TypeError, ValueError) as exc:
            raise FlowDefinitionError(
                str(data.get("name", "<route data>")) if isinstance(data, Mapping) else "<data>",
                [
                    f"route table data is malformed ({exc!r}); expected "
                    "{'name': ..., 'rules': [{'when': ..., 'to': ...}], 'default': ...}"
                ],
            ) from exc

    @classmethod
    def from_json(
        cls, text: str, *, callables: Mapping[str, Callable[[Any], bool]] | None = None
    ) -> RouteTable:
        try:
            data = parse_json(text, what="route table JSON")
        except UntrustedInputError as exc:
            raise FlowDefinitionError("<route data>", [str(exc)]) from exc
        except ValueError as exc:
            raise FlowDefinitionError(
                "<route data>", [f"route table JSON is not valid JSON: {exc}"]
            ) from exc
        return cls.from_data(data, callables=callables)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RouteTable):
            return NotImplemented
        return (self.name, self._rules, self.default) == (other.name, other._rules, other.default)

    def __hash__(self) -> int:
        return hash((self.name, self._rules, self.default))

    def __repr__(self) -> str:
        return f"RouteTable({self.name!r}, {len(self._rules)} rules, default={self.default!r})"


def _condition_failed(table: str, route: Route, exc: Exception) -> RouteError:
    return RouteError(
        f"Route table `{table}`: condition `{route.condition.describe()}` raised "
        f"{type(exc).__name__}: {mask_text(str(exc))}. Make the condition total over the "
        "state.",
        table=table,
    )


def targets_of(route: str | RouteTable) -> frozenset[str]:
    """The targets a route (a plain target or a table) can lead to."""
    return route.targets if isinstance(route, RouteTable) else frozenset({route})
