"""Recovery policies as data: detection rules, a strategy table, and the registry of policies.

A rule is a condition over a thread's facts (``flowkit.runtime.ThreadFacts``: its status and
node, its state under ``state.``, whether a node started and never finished, how long it
has sat still) with the reason it gives. The strategy table works like a route table: the
first row whose condition holds picks the strategy, else the default. Conditions are the
route tables' own (``field``, ``&``, ``|``, ``~``) plus ``size`` and ``number`` comparisons.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Final, Literal

from ..definition._conditions import Condition, field, read_path
from ..errors import RecoveryPolicyError
from .strategies import Resume, Strategy

if TYPE_CHECKING:
    from ..definition._flow import Flow

__all__ = [
    "DEFAULT_POLICY",
    "ENTRY_POINT_GROUP",
    "RECOVERY_ACTOR",
    "Compare",
    "DetectionRule",
    "RecoveryPolicy",
    "StrategyRoute",
    "number",
    "policy_for",
    "size",
]

#: The ``actor`` of every patch the recovery service writes (the monitor counts these).
RECOVERY_ACTOR: Final = "flowkit-recover"
#: Packages register recovery policies for their workflows under this entry-point group.
ENTRY_POINT_GROUP: Final = "flowkit.recovery_policies"
#: Policies shipped with flowkit: flow name -> "module:attribute".
BUILTIN: Mapping[str, str] = {"sas": "flowkit.sas.recovery:policy"}

Op = Literal["lt", "le", "gt", "ge", "eq"]
_SYMBOL: Mapping[str, str] = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}


@dataclass(frozen=True, eq=True, repr=False)
class Compare(Condition):
    """A numeric comparison of a fact: its value (``number``) or its length (``size``).

    A missing value never matches a ``number`` comparison; a missing collection has size 0.
    """

    path: str
    op: Op
    value: float
    measure: Literal["number", "size"] = "number"

    def __call__(self, facts: Any) -> bool:
        actual = read_path(facts, self.path)
        if self.measure == "size":
            actual = len(actual) if isinstance(actual, Sequence | Mapping) else 0
        elif not isinstance(actual, int | float) or isinstance(actual, bool):
            return False
        if self.op == "lt":
            return bool(actual < self.value)
        if self.op == "le":
            return bool(actual <= self.value)
        if self.op == "gt":
            return bool(actual > self.value)
        if self.op == "ge":
            return bool(actual >= self.value)
        return bool(actual == self.value)

    def describe(self) -> str:
        subject = f"len({self.path})" if self.measure == "size" else self.path
        return f"{subject} {_SYMBOL[self.op]} {self.value:g}"

    def to_data(self) -> Any:
        return {self.measure: self.path, self.op: self.value}

    def fields(self) -> frozenset[str]:
        return frozenset({self.path.split(".", 1)[0]})


@dataclass(frozen=True)
class _Measure:
    path: str
    measure: Literal["number", "size"]

    def lt(self, value: float) -> Compare:
        return Compare(self.path, "lt", value, self.measure)

    def le(self, value: float) -> Compare:
        return Compare(self.path, "le", value, self.measure)

    def gt(self, value: float) -> Compare:
        return Compare(self.path, "gt", value, self.measure)

    def ge(self, value: float) -> Compare:
        return Compare(self.path, "ge", value, self.measure)

    def eq(self, value: float) -> Compare:
        return Compare(self.path, "eq", value, self.measure)


def number(path: str) -> _Measure:
    """Compare a numeric fact: ``number("in_state_s").gt(300)``."""
    return _Measure(field(path).path, "number")


def size(path: str) -> _Measure:
    """Compare the length of a list, text or mapping: ``size("state.messages").lt(3)``."""
    return _Measure(field(path).path, "size")


@dataclass(frozen=True)
class DetectionRule:
    """When ``when`` holds for a thread's facts, the thread is stuck for ``reason``.

    ``reason`` may name facts in braces (``{node}``, ``{in_state_s:.0f}``, ``{started_node}``);
    it is shown to operators and kept in the audit record, so it never quotes state values.
    """

    name: str
    when: Condition
    reason: str

    def explain(self, scalars: Mapping[str, Any]) -> str:
        try:
            return self.reason.format_map(scalars)
        except (KeyError, ValueError, IndexError):
            return self.reason


@dataclass(frozen=True)
class StrategyRoute:
    """One row of a strategy table: threads whose facts match ``when`` get ``strategy``."""

    when: Condition
    strategy: Strategy


@dataclass(frozen=True)
class RecoveryPolicy:
    """Detection rules and the strategy table of one workflow (or of any flow)."""

    name: str
    rules: Sequence[DetectionRule]
    strategies: Sequence[StrategyRoute] = ()
    default: Strategy = dataclass_field(default_factory=Resume)
    description: str = ""

    def strategy_for(self, facts: Any) -> Strategy:
        for route in self.strategies:
            if route.when(facts):
                return route.strategy
        return self.default

    def problems(self, flow: Flow) -> list[str]:
        """Every way this policy does not fit ``flow`` (unknown states or fields)."""
        found: list[str] = []
        names = [rule.name for rule in self.rules]
        found += [f"rule `{n}` is defined twice" for n in sorted(set(names)) if names.count(n) > 1]
        strategies = [route.strategy for route in self.strategies] + [self.default]
        for strategy in strategies:
            found += strategy.problems(flow)
        for rule in self.rules:
            for name in sorted(rule.when.fields() - _FACTS):
                found.append(f"rule `{rule.name}` reads `{name}`, which is not a thread fact")
            found += _state_fields(flow, rule.when, f"rule `{rule.name}`")
        for route in self.strategies:
            found += _state_fields(flow, route.when, f"strategy row `{route.when.describe()}`")
        return sorted(set(found), key=found.index)

    def check(self, flow: Flow) -> None:
        """Raise ``RecoveryPolicyError`` listing every problem, if there is any."""
        found = self.problems(flow)
        if found:
            raise RecoveryPolicyError(self.name, flow.name, found)


#: Fact names a condition may start with (``flowkit.runtime.ThreadFacts``).
_FACTS = frozenset(
    {
        "thread_id",
        "flow",
        "status",
        "node",
        "version",
        "state",
        "started",
        "interrupted",
        "idle_s",
        "in_state_s",
        "steps",
        "failed_steps",
        "recoveries",
        "last_kind",
        "last_actor",
        "entered_ts",
        "stable_node",
        "stable_version",
    }
)


def _state_fields(flow: Flow, condition: Condition, where: str) -> list[str]:
    paths: list[str] = []
    _collect_paths(condition, paths)
    return [
        f"{where} reads `{path}`, but {flow.state.__name__} has no field `{path.split('.')[1]}`"
        for path in paths
        if path.startswith("state.") and path.split(".")[1] not in flow.schema
    ]


def _collect_paths(condition: Condition, into: list[str]) -> None:
    path = getattr(condition, "path", None)
    if isinstance(path, str):
        into.append(path)
    for part in (getattr(condition, "inner", None), *getattr(condition, "parts", ())):
        if isinstance(part, Condition):
            _collect_paths(part, into)


#: Any flow: a node that started and never finished, or a run that stopped between nodes,
#: is resumed where it stands (the node runs again from its last committed state).
DEFAULT_POLICY = RecoveryPolicy(
    name="default",
    description="Resume threads whose process died; nothing else is judged stuck.",
    rules=(
        DetectionRule(
            "node_never_finished",
            field("started"),
            "node `{started_node}` started (attempt {started_attempt}) from version {version} "
            "and never finished: the process running it stopped",
        ),
        DetectionRule(
            "interrupted_run",
            field("interrupted") & ~field("started"),
            "the run stopped before node `{node}` and nothing is running the thread",
        ),
    ),
    default=Resume(),
)


def policy_for(flow_name: str) -> RecoveryPolicy:
    """The policy registered for ``flow_name`` (built in or by entry point), else the default."""
    spec = BUILTIN.get(flow_name)
    if spec is None:
        from importlib.metadata import entry_points

        found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
        spec = found.get(flow_name)
    if spec is None:
        return DEFAULT_POLICY
    module_name, _, attribute = spec.partition(":")
    policy = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(policy, RecoveryPolicy):
        raise RecoveryPolicyError(
            spec, flow_name, [f"`{spec}` is a {type(policy).__name__}, not a RecoveryPolicy"]
        )
    return policy
