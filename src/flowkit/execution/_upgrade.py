"""Flow versions and migrations: what a ``Migration`` changes, and how a thread that ran under
an older version of its flow is brought up to the current one.

A thread's journal records the flow version it ran under. When that is older than the flow,
its records are read as plain JSON (``_journal``), and the migrations from that version on
upgrade the last state and position; the result is validated against the current flow and
recorded as a ``patch`` (``actor="migration"``) holding the whole new position, so nothing
before it is ever read with the new flow again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..definition._migration import DOCS as _DOCS
from ..definition._parallel import BatchNode
from ..definition._subflow import Subflow
from ..errors import IncompatibleThreadError
from ..records._node_error import NodeError
from ._cursor import Cursor
from ._replay import replay_record
from ._steps import status_of
from .batch._journal import items_from_snapshot
from .subflows._journal import child_error, sub_from_snapshot

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..records._records import Status

__all__ = [
    "MigrationReport",
    "RawCursor",
    "check_position",
    "state_error",
    "state_problem",
    "upgrade",
]


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
    #: The open pauses with payloads or made at run time, and the timer (as records keep them).
    pauses: dict[str, Any] | None = None
    due: float | None = None


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
        at = flow.nodes.get(node)
        inside = isinstance(at, BatchNode | Subflow) or (at is not None and at.asks is not None)
        if not (status == "waiting" and inside):
            status = status_of(flow, node)
    error = NodeError.model_validate(raw.error) if raw.error else None
    cursor = Cursor(
        model, node, status, raw.version, error, _items(raw), None, pauses=raw.pauses, due=raw.due
    )
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

    return items_from_snapshot(raw.items)


def _with_child(flow: Flow, thread_id: str, cursor: Cursor, raw: RawCursor, strict: bool) -> Cursor:
    """The child's cursor of a thread inside a ``Subflow``, replayed with the child flow as it
    is now (a parent's migrations do not reach into its children)."""

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
        at = flow.nodes.get(node)
        fits = (
            node in flow.gates
            or isinstance(at, BatchNode | Subflow)
            or (at is not None and at.asks is not None)  # a node that asks
            or (at is not None and cursor.due is not None)  # a node asleep (ctx.sleep_until)
        )
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
