"""Reading a thread's journal with its flow as it is now, whatever version wrote it.

Records of the flow's own version replay as always. Records of an older version are read as
plain JSON (``RawCursor``): their states may lack a field the model now requires, or name a
gate that was renamed, so they are folded without validation and upgraded by the flow's
migrations when a typed position is needed. Records that fit neither give an
``IncompatibleThreadError`` naming the thread, the record and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..definition._reducers import AppendedList
from ..errors import IncompatibleThreadError, InvalidUpdateError
from ..records._node_error import NodeError
from ..records._records import JoinRecord, Snapshot, StartRecord
from ._cursor import Cursor
from ._open import merged, without_call
from ._replay import replay_record
from ._upgrade import MigrationReport, RawCursor, check_position, state_error, upgrade
from .batch._journal import items_from_snapshot
from .subflows._journal import sub_from_snapshot

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..definition._state import StateSchema

__all__ = ["JournalReader", "cursor_from_snapshot", "version_of"]

_DOCS = "see docs/migrations.md"


def version_of(value: int | None) -> int:
    """A stored ``flow_version``: ``None`` (journals from before versions) is version 1."""
    return 1 if value is None else value


class JournalReader:
    """Folds a thread's records, oldest first, into its position under ``flow``."""

    __slots__ = ("cursor", "flow", "flow_version", "raw", "record", "thread_id")

    def __init__(self, flow: Flow, thread_id: str, cursor: Cursor | None = None) -> None:
        self.flow = flow
        self.thread_id = thread_id
        #: The typed position, while the records read so far are of the flow's version.
        self.cursor = cursor
        #: The JSON position, while they are of an older version.
        self.raw: RawCursor | None = None
        #: The flow version the records read so far were written under.
        self.flow_version = flow.version
        self.record = cursor.version if cursor is not None else 0

    @property
    def behind(self) -> bool:
        """Whether the thread stands at an older flow version (a migration is due)."""
        return self.raw is not None

    def begin_snapshot(self, snap: Snapshot) -> None:
        self.record = snap.version
        self._position(snap, version_of(snap.flow_version))

    def feed(self, record: Any) -> None:
        self.record = record.version
        if isinstance(record, StartRecord):
            self._check_version(version_of(record.flow_version))
            if self.flow_version != self.flow.version:
                self.cursor = None
                self.raw = RawCursor(
                    dict(record.state),
                    record.next,
                    record.status,
                    record.version,
                    record.error,
                    None,
                    record.sub,
                    pauses=record.pauses,
                    due=record.due,
                )
                return
            self.raw = None
        elif record.kind == "patch" and record.migration is not None:
            migration: Mapping[str, Any] = record.migration
            self._position(Snapshot.model_validate(migration["position"]), int(migration["to"]))
            return
        if self.raw is not None:
            self.raw = self._raw(self.raw, record)
        else:
            self.cursor = self._replay(self.cursor, record)

    def position(self, *, strict: bool = True) -> tuple[Cursor, MigrationReport | None]:
        """The typed position; for an older version, upgraded by the migrations (with what
        they changed). ``strict`` also checks that a thread that can move stands somewhere
        the flow has."""
        if self.raw is not None:
            return upgrade(self.flow, self.thread_id, self.raw, self.flow_version, strict=strict)
        assert self.cursor is not None, "a journal starts with a start record or a snapshot"
        if strict:
            check_position(self.flow, self.thread_id, self.cursor, self.record, self.flow_version)
        return self.cursor, None

    # -- reading ------------------------------------------------------------------------------

    def _check_version(self, version: int) -> None:
        self.flow_version = version
        if version > self.flow.version:
            raise IncompatibleThreadError(
                f"Thread `{self.thread_id}` ran under version {version} of flow "
                f"`{self.flow.name}` (record {self.record}), newer than this flow's version "
                f"{self.flow.version}; open it with the newer flow. A thread is never migrated "
                "backwards.",
                thread_id=self.thread_id,
                version=self.record,
                flow_version=version,
            )

    def _position(self, snap: Snapshot, version: int) -> None:
        self._check_version(version)
        if version == self.flow.version:
            self.raw = None
            self.cursor = cursor_from_snapshot(self.flow, self.thread_id, snap)
            return
        self.cursor = None
        self.raw = RawCursor(
            dict(snap.state),
            snap.next,
            snap.status,
            snap.version,
            snap.error,
            {int(k): dict(v) for k, v in snap.items.items()} if snap.items else None,
            snap.sub,
            pauses=snap.pauses,
            due=snap.due,
        )

    def _replay(self, cursor: Cursor | None, record: Any) -> Cursor:
        try:
            return replay_record(self.flow, cursor, record)
        except ValidationError as exc:
            raise state_error(
                self.flow, self.thread_id, record.version, self.flow_version, exc
            ) from exc
        except InvalidUpdateError as exc:
            raise self._misfit(record, str(exc)) from exc
        except LookupError as exc:
            raise self._misfit(record, f"it names {exc}, which the flow no longer has") from exc

    def _raw(self, raw: RawCursor, record: Any) -> RawCursor:
        try:
            return raw_replay(self.flow.schema, raw, record)
        except (LookupError, TypeError, ValueError) as exc:
            raise self._misfit(
                record, f"its update cannot be folded as JSON ({type(exc).__name__}: {exc})"
            ) from exc

    def _misfit(self, record: Any, why: str) -> IncompatibleThreadError:
        who = getattr(record, "node", None) or getattr(record, "gate", None)
        kind = f"{record.kind} of `{who}`" if who else record.kind
        return IncompatibleThreadError(
            f"Thread `{self.thread_id}`: record {record.version} ({kind}) no longer fits flow "
            f"`{self.flow.name}`: {why}. If the flow changed on purpose, raise its version and "
            f"add a migration; {_DOCS}.",
            thread_id=self.thread_id,
            version=record.version,
            flow_version=self.flow_version,
            problems=[why],
        )


def cursor_from_snapshot(flow: Flow, thread_id: str, snap: Snapshot) -> Cursor:
    """The typed position a snapshot (or a migration's position) holds."""
    try:
        state = flow.schema.load_state(snap.state)
    except ValidationError as exc:
        raise state_error(
            flow, thread_id, snap.version, version_of(snap.flow_version), exc
        ) from exc
    error = NodeError.model_validate(snap.error) if snap.error else None
    items = items_from_snapshot(snap.items)
    try:
        sub = sub_from_snapshot(flow, snap.next, snap.sub)
    except (LookupError, AssertionError) as exc:
        raise IncompatibleThreadError(
            f"Thread `{thread_id}` is inside a subflow at `{snap.next}` (record {snap.version}), "
            f"which flow `{flow.name}` no longer has as a Subflow node; {_DOCS}.",
            thread_id=thread_id,
            version=snap.version,
        ) from exc
    return Cursor(
        state,
        snap.next,
        snap.status,
        snap.version,
        error,
        items,
        sub,
        snap.entered,
        pauses=snap.pauses,
        due=snap.due,
    )


def raw_apply(
    schema: StateSchema, state: dict[str, Any], update: Mapping[str, Any]
) -> dict[str, Any]:
    """Fold a stored update into a JSON state: reducers of the current model still combine
    (``append`` extends a list); every other key overwrites, known to the model or not."""
    new = dict(state)
    for key, value in update.items():
        spec = schema.fields.get(key)
        if spec is not None and spec.reducer is not None and key in new:
            combined = spec.reducer(new[key], value)
            new[key] = combined.copy() if isinstance(combined, AppendedList) else combined
        else:
            new[key] = value
    return new


def raw_replay(schema: StateSchema, raw: RawCursor, record: Any) -> RawCursor:
    """The JSON position after one record of an older flow version."""
    kind = record.kind
    if kind == "item":
        item = {
            "update": dict(record.update),
            "error": record.error,
            "of": record.of,
            "label": record.label,
        }
        items = {**(raw.items or {}), record.index: item}
        return RawCursor(
            raw.state, record.next, record.status, record.version, None, items,
            pauses=without_call(raw.pauses, record.index, record.label), due=record.due,
        )  # fmt: skip
    if kind == "pause":
        moved = _moved(raw, record, raw.state, items=raw.items)
        return replace(moved, pauses=merged(raw.pauses, record.pauses))
    if isinstance(record, JoinRecord):
        items = dict(raw.items or {})
        if record.status == "failed" and record.next == record.node:
            kept = {i: each for i, each in items.items() if i not in record.failed}
            return _moved(raw, record, raw.state, items=kept or None)
        state = raw.state
        if record.folded:
            for index in record.merged:
                state = raw_apply(schema, state, items[index]["update"])
        return _moved(raw, record, raw_apply(schema, state, record.update))
    if kind == "sub":  # kept whole: the child's record and the attempt it belongs to
        if record.record.kind == "start":
            return _moved(raw, record, raw.state, sub_records=(record,))
        return _moved(raw, record, raw.state, sub=raw.sub, sub_records=(*raw.sub_records, record))
    state = raw_apply(schema, raw.state, record.update)
    if kind == "patch" and (record.next, record.status) == (raw.node, raw.status):
        # A patch that leaves the thread where it was keeps a running child (as replay does).
        return _moved(raw, record, state, sub=raw.sub, sub_records=raw.sub_records)
    return _moved(raw, record, state)


def _moved(
    raw: RawCursor,
    record: Any,
    state: dict[str, Any],
    *,
    items: dict[int, dict[str, Any]] | None = None,
    sub: dict[str, Any] | None = None,
    sub_records: tuple[Any, ...] = (),
) -> RawCursor:
    error = getattr(record, "error", None)
    return RawCursor(
        state, record.next, record.status, record.version, error, items, sub, sub_records,
        record.pauses, record.due,
    )  # fmt: skip
