"""Flow versions and migrations: what a ``Migration`` changes, and how a thread that ran under
an older version of its flow is brought up to the current one.

A thread's journal records the flow version it ran under. When that is older than the flow,
its records are read as plain JSON (``_journal``), and the migrations from that version on
upgrade the last state and position; the result is validated against the current flow and
recorded as a ``patch`` (``actor="migration"``) holding the whole new position, so nothing
before it is ever read with the new flow again.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ._execution import Cursor, status_of
from ._node import NodeError
from ._parallel import Parallel
from ._subflow import Subflow
from .errors import IncompatibleThreadError

if TYPE_CHECKING:
    from ._flow import Flow
    from ._records import Status

__all__ = [
    "Migration",
    "MigrationReport",
    "RawCursor",
    "check_position",
    "migration_problems",
    "state_problem",
    "upgrade",
]

_DOCS = "see docs/migrations.md"


class Migration:
    """How threads of version ``to - 1`` become version ``to``.

    ``positions`` moves threads: a renamed node or gate (``{"review": "approval"}``) or a
    removed one mapped to another (``{"polish": "draft"}``). ``fields`` sets fields of the
    state, each to a value or to ``fn(old_state)``, where ``old_state`` is the state before
    this migration as a plain JSON dict (a new required field computed from the old state).
    ``drop`` removes fields the model no longer has. ``state``, for anything else, maps the
    JSON dict after those to the new one. A thread's ``dialog_state`` mirror follows its
    position. Functions must be pure: history applies them again to older checkpoints.
    """

    __slots__ = ("description", "drop", "fields", "positions", "state", "to")

    def __init__(
        self,
        *,
        to: int,
        positions: Mapping[str, str] | None = None,
        fields: Mapping[str, Any] | None = None,
        drop: Iterable[str] = (),
        state: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        description: str = "",
    ) -> None:
        self.to = to
        self.positions: dict[str, str] = dict(positions or {})
        self.fields: dict[str, Any] = dict(fields or {})
        self.drop: tuple[str, ...] = tuple(drop)
        self.state = state
        self.description = description

    def __repr__(self) -> str:
        return f"Migration(to={self.to}: {self.describe()})"

    def describe(self) -> str:
        """What the migration does, in words (shown in history and by ``flowkit migrate``)."""
        parts = [f"move {old} -> {new}" for old, new in self.positions.items()]
        parts += [f"set {name}" for name in self.fields]
        parts += [f"drop {name}" for name in self.drop]
        if self.state is not None:
            parts.append(f"state {getattr(self.state, '__name__', 'function')}")
        if self.description:
            parts.insert(0, self.description)
        return "; ".join(parts) or "version bump"

    def apply(self, state: dict[str, Any], node: str) -> tuple[dict[str, Any], str]:
        """The state and position after this migration (``state`` is not changed)."""
        old = copy.deepcopy(state)
        new = dict(state)
        for name, value in self.fields.items():
            new[name] = value(old) if callable(value) else copy.deepcopy(value)
        for name in self.drop:
            new.pop(name, None)
        if self.state is not None:
            new = self.state(new)
            if not isinstance(new, dict):
                raise TypeError(f"the state function returned {type(new).__name__}, not a dict")
        mirrored = new.get("dialog_state")
        if isinstance(mirrored, str) and mirrored in self.positions:
            new["dialog_state"] = self.positions[mirrored]
        return new, self.positions.get(node, node)


@dataclass(frozen=True, slots=True)
class RawCursor:
    """A position read from records of an older flow version: the state as plain JSON.

    ``items`` are finished ``Map``/``Parallel`` calls in their snapshot form; ``sub`` is the
    child's position as a snapshot (a fork or a snapshot taken inside a ``Subflow``) and
    ``sub_records`` the ``sub`` records since (each the child's record with its attempt).
    """

    state: dict[str, Any]
    node: str
    status: Status
    version: int
    error: dict[str, Any] | None = None
    items: dict[int, dict[str, Any]] | None = None
    sub: dict[str, Any] | None = None
    sub_records: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What migrating one thread does (or did): versions, position, fields changed.

    ``record`` is the version of the ``patch`` record written, ``None`` for a dry run or a
    thread already at the flow's version (``from_version == to_version``).
    """

    thread_id: str
    from_version: int
    to_version: int
    node_before: str
    node_after: str
    status: str
    changed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    steps: tuple[str, ...] = field(default=())
    record: int | None = None

    @property
    def affected(self) -> bool:
        """Whether the thread needs (or needed) a migration."""
        return self.from_version != self.to_version

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "node_before": self.node_before,
            "node_after": self.node_after,
            "status": self.status,
            "changed": list(self.changed),
            "dropped": list(self.dropped),
            "steps": list(self.steps),
            "record": self.record,
        }


def migration_problems(flow: Flow) -> list[str]:
    """What is wrong with a flow's version and migrations (empty when nothing)."""
    version = flow.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return [f"version must be a whole number >= 1, not {version!r}."]
    problems: list[str] = []
    seen: set[int] = set()
    for each in flow.migrations:
        if not isinstance(each, Migration):
            problems.append(f"{each!r} is not a Migration; pass Migration(to=..., ...).")
            continue
        if isinstance(each.to, bool) or not isinstance(each.to, int) or not 2 <= each.to <= version:
            problems.append(
                f"Migration to version {each.to!r} is outside 2..{version}; a migration "
                "upgrades threads to a version up to the flow's own."
            )
        elif each.to in seen:
            problems.append(f"Two migrations upgrade to version {each.to}; merge them.")
        seen.add(each.to if isinstance(each.to, int) else -1)
        for name in each.fields:
            if name not in flow.schema:
                problems.append(
                    f"Migration to version {each.to} sets `{name}`, which "
                    f"{flow.state.__name__} has no field for; add the field or fix the name."
                )
        if each.state is not None and not callable(each.state):
            problems.append(f"Migration to version {each.to}: `state` must be a function.")
    chain = sorted((m for m in flow.migrations if isinstance(m, Migration)), key=_order)
    for each in chain:
        for old, new in each.positions.items():
            final = new
            for later in chain:
                if _order(later) > _order(each):
                    final = later.positions.get(final, final)
            if final not in flow.states:
                problems.append(
                    f"Migration to version {each.to} moves `{old}` to `{new}`, which is not a "
                    f"state of this flow{' after later migrations' if final != new else ''}; "
                    "fix the name."
                )
    return problems


def _order(migration: Migration) -> int:
    return migration.to if isinstance(migration.to, int) else 0


def upgrade(
    flow: Flow, thread_id: str, raw: RawCursor, from_version: int, *, strict: bool = True
) -> tuple[Cursor, MigrationReport]:
    """``raw`` (a position of version ``from_version``) as a cursor of the current flow.

    ``strict=False`` (history's older checkpoints) lets the position be a state the flow no
    longer has; the state must fit either way.

    Raises:
        IncompatibleThreadError: a migration failed, or the result does not fit the flow.
    """
    state, node = dict(raw.state), raw.node
    steps: list[str] = []
    by_version = {m.to: m for m in flow.migrations}
    for version in range(from_version + 1, flow.version + 1):
        step = by_version.get(version)
        if step is None:
            continue
        try:
            state, node = step.apply(state, node)
        except Exception as exc:  # the user's function: any failure is the migration's
            raise IncompatibleThreadError(
                f"Thread `{thread_id}`: the migration to version {version} failed on its state "
                f"at record {raw.version} ({type(exc).__name__}: {exc}). Fix the migration; "
                f"{_DOCS}.",
                thread_id=thread_id,
                version=raw.version,
                flow_version=from_version,
                problems=[str(exc)],
            ) from exc
        steps.append(f"v{version}: {step.describe()}")
    what = f"after migrating from version {from_version}" if steps else ""
    try:
        model = flow.schema.load_state(state)
    except ValidationError as exc:
        raise state_error(flow, thread_id, raw.version, from_version, exc, what) from exc
    status = raw.status
    if status in ("pending", "waiting") and node in flow.states:
        # A gate mapped to a node runs it; a node mapped to a gate waits there. A thread
        # waiting at a Parallel's gate branches or inside a Subflow keeps waiting.
        inside = isinstance(flow.nodes.get(node), Parallel | Subflow)
        if not (status == "waiting" and inside):
            status = status_of(flow, node)
    error = NodeError.model_validate(raw.error) if raw.error else None
    cursor = Cursor(model, node, status, raw.version, error, _items(raw), None)
    if strict:
        check_position(flow, thread_id, cursor, raw.version, from_version, what)
    if raw.sub is not None or raw.sub_records:
        cursor = _with_child(flow, thread_id, cursor, raw, strict)
    before = raw.state
    after = flow.schema.dump_state(model)
    changed = tuple(k for k, v in after.items() if k not in before or before[k] != v)
    dropped = tuple(k for k in before if k not in after)
    report = MigrationReport(
        thread_id,
        from_version,
        flow.version,
        raw.node,
        node,
        cursor.status,
        changed,
        dropped,
        tuple(steps),
    )
    return cursor, report


def _items(raw: RawCursor) -> Any:
    from ._batch_journal import items_from_snapshot

    return items_from_snapshot(raw.items)


def _with_child(flow: Flow, thread_id: str, cursor: Cursor, raw: RawCursor, strict: bool) -> Cursor:
    """The child's cursor of a thread inside a ``Subflow``, replayed with the child flow as it
    is now (a parent's migrations do not reach into its children)."""
    from ._execution import replay_record
    from ._subflow_journal import child_error, sub_from_snapshot

    node = flow.nodes.get(cursor.node)
    if not isinstance(node, Subflow):
        if not strict:
            return cursor
        raise IncompatibleThreadError(
            f"Thread `{thread_id}` is inside the subflow at `{raw.node}` (record {raw.version}), "
            f"and `{cursor.node}` is not a Subflow node of flow `{flow.name}` any more. Let the "
            f"thread leave the subflow with the old flow, or map `{raw.node}` to the Subflow "
            f"node that replaces it; {_DOCS}.",
            thread_id=thread_id,
            version=raw.version,
        )
    try:
        child = sub_from_snapshot(flow, cursor.node, raw.sub) if raw.sub is not None else None
        for record in raw.sub_records:
            inner = record.record
            child = replay_record(node.flow, None if inner.kind == "start" else child, inner)
            child = child._replace(attempts=record.attempts)
    except (ValidationError, LookupError, ValueError, TypeError) as exc:
        raise IncompatibleThreadError(
            f"Thread `{thread_id}` is inside the subflow at `{cursor.node}` (record "
            f"{raw.version}), whose child flow `{node.flow.name}` no longer fits its records "
            f"({type(exc).__name__}: {str(exc).splitlines()[0]}). Migrations change the parent "
            f"only; let the child finish with the old flow first; {_DOCS}.",
            thread_id=thread_id,
            version=raw.version,
        ) from exc
    error = cursor.error
    if child is not None and cursor.status == "failed":
        error = child_error(cursor.node, child)
    return cursor._replace(sub=child, error=error)


def check_position(
    flow: Flow,
    thread_id: str,
    cursor: Cursor,
    record: int,
    flow_version: int,
    what: str = "",
) -> None:
    """Raise if a thread that can still move stands where the flow has no such state."""
    status, node = cursor.status, cursor.node
    if status == "waiting":
        fits = node in flow.gates or isinstance(flow.nodes.get(node), Parallel | Subflow)
        kind = "waits at gate"
    elif status == "pending" or (status == "failed" and node not in flow.finals):
        fits = node in flow.nodes
        kind = "is at node" if status == "pending" else "failed at node"
    else:
        return  # finished (a failed final state too): it never moves again, wherever it ended
    if fits:
        return
    there = "" if not what else f" {what}"
    other = (
        "a gate"
        if status == "waiting" and node in flow.nodes
        else "a node"
        if node in flow.gates
        else None
    )
    why = (
        f"which is now {other} of flow `{flow.name}`"
        if other
        else f"which flow `{flow.name}` (version {flow.version}) no longer has"
    )
    raise IncompatibleThreadError(
        f"Thread `{thread_id}` {kind} `{node}` (record {record}){there}, {why}. Add a "
        f"migration that moves it: Flow(..., version={max(flow.version, flow_version + 1)}, "
        f'migrations=[Migration(to=..., positions={{"{node}": "<new name>"}})]), then resume '
        f"it or run `flowkit migrate`; {_DOCS}.",
        thread_id=thread_id,
        version=record,
        flow_version=flow_version,
        problems=[f"{kind} `{node}`, {why}"],
    )


def state_error(
    flow: Flow,
    thread_id: str,
    record: int,
    flow_version: int,
    exc: ValidationError,
    what: str = "",
) -> IncompatibleThreadError:
    """The error for a stored state the state model rejects."""
    problems = [state_problem(e) for e in exc.errors(include_url=False, include_input=False)]
    missing = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing" and e["loc"]]
    hint = (
        f'fields={{"{missing[0]}": lambda old: ...}}'
        if missing
        else "fields={...} or state=fn to convert the old values"
    )
    there = "" if not what else f" {what}"
    return IncompatibleThreadError(
        f"Thread `{thread_id}`: its state at record {record}{there} does not fit "
        f"{flow.state.__name__}: {'; '.join(problems[:3])}"
        f"{f' (and {len(problems) - 3} more)' if len(problems) > 3 else ''}. Add a migration "
        f"that fills it in: Flow(..., version={max(flow.version, flow_version + 1)}, "
        f"migrations=[Migration(to=..., {hint})]), then resume it or run `flowkit migrate`; "
        f"{_DOCS}.",
        thread_id=thread_id,
        version=record,
        flow_version=flow_version,
        problems=problems,
    )


def state_problem(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ())) or "(state)"
    return f"{where}: {error.get('msg', '')}"
