"""Recovery strategies (seed 000 §3.2) as data, and the patch each one plans for a thread.

``Resume``: stay where the thread stands; the node runs again from its last commit.
``BackToStable`` (strategy 2): go back to a state where nothing runs (a gate, the start),
with the given field values and resets, or by default to the last gate the thread waited at,
restoring the fields that changed since. ``Complete`` (strategy 1): finish only when the
output exists as a real file written in this state, never by naming one that does not;
otherwise use ``otherwise``. ``Reset`` (strategy 3): back to the start, fields cleared.
"""

from __future__ import annotations

import string
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ._facts import ThreadFacts

__all__ = ["BackToStable", "Complete", "Patch", "PlanContext", "Reset", "Resume", "Strategy"]


_MTIME_SLACK_S = 0.1


@dataclass(frozen=True)
class Patch:
    """What a recovery writes: move to ``goto`` with ``values`` (JSON form), and why."""

    strategy: str
    goto: str
    values: Mapping[str, Any]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanContext:
    """What a strategy may look at: the thread's facts, its flow, and its past states."""

    facts: ThreadFacts
    flow: Flow
    state_at: Callable[[int], Mapping[str, Any]]  # JSON state at a checkpoint version


class Strategy(ABC):
    """Base of the strategies: ``plan`` returns the patch, or ``None`` when it cannot apply."""

    name: ClassVar[str] = "strategy"

    @abstractmethod
    def plan(self, ctx: PlanContext, notes: list[str]) -> Patch | None:
        """The patch that recovers the thread described by ``ctx``, noting why in ``notes``."""

    def problems(self, flow: Flow) -> list[str]:
        return []


def _field_problems(
    flow: Flow, who: str, goto: str | None, values: Mapping[str, Any], reset: Sequence[str]
) -> list[str]:
    found: list[str] = []
    if goto is not None and goto not in flow.states:
        found.append(f"{who} goes to `{goto}`, which is not a state of flow `{flow.name}`")
    for name in [*values, *reset]:
        if name not in flow.schema:
            found.append(f"{who} sets `{name}`, which {flow.state.__name__} has no field for")
        elif name in flow.schema.reducer_fields:
            found.append(
                f"{who} sets `{name}`, whose reducer would combine the value instead of "
                "replacing it; recovery cannot set it"
            )
    for name, value in values.items():
        if name in flow.schema and not flow.schema.accepts(name, value):
            found.append(f"{who} sets `{name}` to {value!r}, which the field does not accept")
    return found


def _explicit(flow: Flow, values: Mapping[str, Any], reset: Sequence[str]) -> dict[str, Any]:
    """``values`` plus each ``reset`` field at its model default, in JSON form."""
    raw: dict[str, Any] = {}
    for name in reset:
        raw[name] = flow.state.model_fields[name].get_default(call_default_factory=True)
    raw.update(values)
    return flow.schema.dump_update(
        {k: flow.schema.fields[k].adapter.validate_python(v) for k, v in raw.items()}
    )


def _restore(ctx: PlanContext, version: int, notes: list[str]) -> dict[str, Any]:
    """The values that bring every replaceable field back to checkpoint ``version``."""
    schema = ctx.flow.schema
    then = ctx.state_at(version)
    now = ctx.facts.state
    kept = sorted(k for k in schema.reducer_fields if then.get(k) != now.get(k))
    if kept:
        notes.append(f"append-only fields keep their newer entries: {', '.join(kept)}")
    return {
        key: value
        for key, value in then.items()
        if key not in schema.reducer_fields and key != "dialog_state" and now.get(key) != value
    }


@dataclass(frozen=True)
class Resume(Strategy):
    """Leave the thread where it stands; ``resume`` runs its node again from the last commit."""

    name: ClassVar[str] = "resume"

    def plan(self, ctx: PlanContext, notes: list[str]) -> Patch:
        facts = ctx.facts
        if facts.status == "pending":
            notes.append(f"resume runs `{facts.node}` again from version {facts.version}")
        return Patch(self.name, facts.node, {}, tuple(notes))


@dataclass(frozen=True)
class BackToStable(Strategy):
    """Go to ``goto`` with ``values`` and ``reset`` fields (seed strategy 2).

    Without ``goto``, go back to the last gate the thread waited at (or the start) and
    restore every replaceable field to its value there; ``values`` then apply on top.
    """

    goto: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    reset: Sequence[str] = ()

    name: ClassVar[str] = "back_to_stable"

    def plan(self, ctx: PlanContext, notes: list[str]) -> Patch:
        values = _explicit(ctx.flow, self.values, self.reset)
        if self.goto is not None:
            return Patch(self.name, self.goto, values, tuple(notes))
        facts = ctx.facts
        restored = _restore(ctx, facts.stable_version, notes)
        notes.append(f"back to `{facts.stable_node}` as it was at version {facts.stable_version}")
        return Patch(self.name, facts.stable_node, {**restored, **values}, tuple(notes))

    def problems(self, flow: Flow) -> list[str]:
        return _field_problems(flow, "back_to_stable", self.goto, self.values, self.reset)


@dataclass(frozen=True)
class Reset(Strategy):
    """Back to the start (or ``goto``) with ``values`` and ``reset`` fields (seed strategy 3).

    With neither ``values`` nor ``reset``, every replaceable field returns to the start state.
    """

    goto: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    reset: Sequence[str] = ()

    name: ClassVar[str] = "reset"

    def plan(self, ctx: PlanContext, notes: list[str]) -> Patch:
        goto = self.goto or ctx.flow.start
        if self.values or self.reset:
            return Patch(
                self.name, goto, _explicit(ctx.flow, self.values, self.reset), tuple(notes)
            )
        return Patch(self.name, goto, _restore(ctx, 0, notes), tuple(notes))

    def problems(self, flow: Flow) -> list[str]:
        return _field_problems(flow, "reset", self.goto, self.values, self.reset)


@dataclass(frozen=True)
class Complete(Strategy):
    """Finish at ``goto`` with ``values``, but only if the output file really exists.

    ``output`` is the state field that names the finished file. The file counts when the field
    names it, or when one of ``candidates`` (templates over state fields, like
    ``"{run_output_directory}/flow.xml"``) does, and it is a regular file written after the
    thread entered its current state. Otherwise ``otherwise`` plans instead (or nothing).
    """

    goto: str
    output: str
    values: Mapping[str, Any] = field(default_factory=dict)
    candidates: Sequence[str] = ()
    otherwise: Strategy | None = None

    name: ClassVar[str] = "complete"

    def plan(self, ctx: PlanContext, notes: list[str]) -> Patch | None:
        found = self._evidence(ctx)
        if found is not None:
            values = _explicit(ctx.flow, self.values, ())
            values[self.output] = str(found)
            notes.append(f"the output {found} exists and was written in `{ctx.facts.node}`")
            return Patch(self.name, self.goto, values, tuple(notes))
        notes.append(
            f"cannot complete: no file written in `{ctx.facts.node}` is named by `{self.output}`"
            + (" or its candidates" if self.candidates else "")
        )
        return self.otherwise.plan(ctx, notes) if self.otherwise is not None else None

    def _evidence(self, ctx: PlanContext) -> Path | None:
        state = ctx.facts.state
        paths = [state.get(self.output)]
        paths += [_fill(template, state) for template in self.candidates]
        for raw in paths:
            if not isinstance(raw, str) or not raw:
                continue
            path = Path(raw)
            try:
                info = path.stat()
            except OSError:
                continue
            # File times come from a coarse kernel clock (a few ms behind), hence the slack.
            if path.is_file() and info.st_mtime >= ctx.facts.entered_ts - _MTIME_SLACK_S:
                return path
        return None

    def problems(self, flow: Flow) -> list[str]:
        found = _field_problems(flow, "complete", self.goto, {**self.values}, ())
        if self.output not in flow.schema:
            found.append(f"complete reads `{self.output}`, which {flow.state.__name__} lacks")
        for template in self.candidates:
            for _, name, _, _ in string.Formatter().parse(template):
                if name and name not in flow.schema:
                    found.append(f"complete candidate {template!r} names unknown field `{name}`")
        if self.otherwise is not None:
            found += self.otherwise.problems(flow)
        return found


def _fill(template: str, state: Mapping[str, Any]) -> str | None:
    """``template`` with state fields filled in, or ``None`` if one is empty or not text."""
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    values = {name: state.get(name) for name in names}
    if not all(isinstance(v, str) and v for v in values.values()):
        return None
    return template.format_map(values)
