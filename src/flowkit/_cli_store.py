"""``flowkit threads`` and ``flowkit show``: read a JSON-file store without running anything.

Listing needs no flow: every record names its version, next state and status. Showing a
state replays the journal with the thread's flow when it is registered (exact); otherwise it
folds the stored updates over the start state or latest snapshot and says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ._flow import Flow
from ._records import StartRecord
from .errors import FlowDefinitionError, FlowkitError
from .stores._protocol import AnyRecord
from .stores.jsonfile import JsonFileStore

__all__ = ["list_threads", "show_thread"]


def _open_store(directory: str) -> JsonFileStore | None:
    """The store at ``directory``, or None when it holds no threads yet. Never creates it."""
    from .cli import CommandError

    root = Path(directory)
    if not root.is_dir():
        raise CommandError(f"No store at `{directory}`: it is not a folder.", code=2)
    if not (root / "threads").is_dir():
        return None
    return JsonFileStore(root)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


@dataclass(frozen=True, slots=True)
class _Summary:
    thread_id: str
    flow: str
    status: str
    next: str
    version: int
    ts: float
    warnings: Sequence[str] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "flow": self.flow,
            "status": self.status,
            "next": self.next,
            "version": self.version,
            "updated": _iso(self.ts),
            "warnings": list(self.warnings),
        }


def _summarise(store: JsonFileStore, thread_id: str) -> _Summary:
    log = store.load(thread_id)
    if log.snapshot is not None:
        flow_name = log.snapshot.flow
    else:
        first = log.records[0]
        flow_name = first.flow if isinstance(first, StartRecord) else "?"
    last = log.records[-1] if log.records else log.snapshot
    assert last is not None, "a loaded thread has a snapshot or records"
    return _Summary(
        thread_id, flow_name, last.status, last.next, last.version, last.ts, log.warnings
    )


def list_threads(directory: str, out: TextIO, *, as_json: bool = False) -> int:
    """Print one line per thread; a thread that cannot be read is reported, the rest listed."""
    import sys

    store = _open_store(directory)
    summaries: list[_Summary] = []
    broken: dict[str, str] = {}
    for thread_id in store.threads() if store is not None else []:
        assert store is not None
        try:
            summaries.append(_summarise(store, thread_id))
        except (FlowkitError, OSError) as exc:  # one bad thread must not hide the others
            broken[thread_id] = str(exc)
    if as_json:
        data = [s.to_json() for s in summaries]
        data += [{"thread_id": t, "status": "unreadable", "error": e} for t, e in broken.items()]
        out.write(json.dumps(sorted(data, key=lambda d: d["thread_id"]), indent=2) + "\n")
    elif not summaries and not broken:
        out.write(f"No threads in {directory}\n")
    else:
        rows = [["THREAD", "FLOW", "STATUS", "NEXT", "VERSION", "UPDATED"]]
        rows += [
            [s.thread_id, s.flow, s.status, s.next, str(s.version), _when(s.ts)] for s in summaries
        ]
        rows += [[t, "?", "unreadable", "", "", ""] for t in broken]
        _table([rows[0], *sorted(rows[1:])], out)
    for summary in summaries:
        for warning in summary.warnings:
            print(f"flowkit: warning: thread `{summary.thread_id}`: {warning}", file=sys.stderr)
    for thread_id, message in broken.items():
        print(f"flowkit: error: thread `{thread_id}`: {message}", file=sys.stderr)
    return 1 if broken else 0


def _changed(record: AnyRecord) -> list[str]:
    if isinstance(record, StartRecord):
        return sorted(record.state)
    return sorted(record.update)


def _actor(record: AnyRecord) -> str:
    if record.kind == "step":
        return record.node
    if record.kind == "input":
        return record.gate
    if record.kind == "patch":
        return f"({record.actor})"
    return ""


def _history_json(records: Sequence[AnyRecord]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for record in records:
        data = record.model_dump(mode="json")
        data["changed"] = _changed(record)
        data["updated"] = _iso(record.ts)
        rows.append(data)
    return rows


def _resolve_flow(flow_name: str, explicit: str | None) -> tuple[Flow | None, str]:
    """The flow to replay with and a note on where it came from (or why there is none)."""
    from .cli import load_target
    from .workflows import WorkflowLoadError, load_flow, registered

    if explicit is not None:
        flow = load_target(explicit)
        return flow, f"replayed with flow `{flow.name}` from {explicit}"
    if flow_name not in registered():
        return None, (
            f"flow `{flow_name}` is not registered: state folded from stored updates without "
            "its reducers; pass --flow TARGET for the exact state"
        )
    try:
        flow = load_flow(flow_name)
    except (WorkflowLoadError, FlowDefinitionError) as exc:
        first = str(exc).splitlines()[0]
        return None, f"registered flow `{flow_name}` does not load ({first}); state folded naively"
    return flow, f"replayed with registered flow `{flow_name}`"


def _naive_state(store: JsonFileStore, thread_id: str) -> tuple[dict[str, Any], list[str]]:
    """The latest state folded without the flow: every update overwrites its keys.

    Returns the state and the list fields whose updates may have been appends (their
    reducer is unknown here), so the caller can say which values to distrust.
    """
    log = store.load(thread_id)
    if log.snapshot is not None:
        state = dict(log.snapshot.state)
        records: Sequence[AnyRecord] = log.records
    else:
        first = log.records[0]
        state = dict(first.state) if isinstance(first, StartRecord) else {}
        records = log.records[1:]
    doubtful: set[str] = set()
    for record in records:
        update: Mapping[str, Any] = getattr(record, "update", {})
        for key, value in update.items():
            if isinstance(value, list) and isinstance(state.get(key), list):
                doubtful.add(key)
            state[key] = value
    return state, sorted(doubtful)


def show_thread(
    directory: str,
    thread_id: str,
    out: TextIO,
    *,
    history: bool = False,
    as_json: bool = False,
    flow: str | None = None,
) -> int:
    """Print a thread's latest state (or, with ``history``, every checkpoint)."""
    from ._result import RunResult
    from ._runner import Runner
    from .errors import ThreadNotFoundError

    store = _open_store(directory)
    if store is None:
        raise ThreadNotFoundError(thread_id)
    records = store.records(thread_id)
    start = records[0]
    flow_name = start.flow if isinstance(start, StartRecord) else "?"
    found, note = _resolve_flow(flow_name, flow)
    state: dict[str, Any] | None = None
    exact = False
    if found is not None:
        try:
            result: RunResult[Any] = Runner(found, store=store).get_state(thread_id)
            state, exact = found.schema.dump_state(result.state), True
        except FlowkitError as exc:
            note = f"replaying with flow `{found.name}` failed ({exc}); state folded naively"
    if state is None:
        state, doubtful = _naive_state(store, thread_id)
        if doubtful:
            note += f"; list fields that may be appended, not replaced: {', '.join(doubtful)}"
    last = records[-1]
    error = getattr(last, "error", None)
    if as_json:
        doc: dict[str, Any] = {
            "thread_id": thread_id,
            "flow": flow_name,
            "status": last.status,
            "next": last.next,
            "version": last.version,
            "updated": _iso(last.ts),
            "exact": exact,
            "note": note,
            "error": error,
            "state": state,
        }
        if history:
            doc["history"] = _history_json(records)
        out.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    where = "at gate" if last.status == "waiting" else "next:" if last.status == "pending" else "at"
    out.write(f"thread   {thread_id}\nflow     {flow_name}\n")
    out.write(f"status   {last.status} {where} {last.next}\n")
    out.write(f"version  {last.version}\nupdated  {_when(last.ts)}\n")
    if error:
        out.write(f"error    {error.get('type')}: {error.get('message')}\n")
    if history:
        rows = [["VERSION", "KIND", "NODE", "NEXT", "STATUS", "CHANGED", "TIME"]]
        rows += [
            [
                str(r.version),
                r.kind,
                _actor(r),
                r.next,
                r.status,
                "(initial state)" if r.kind == "start" else ",".join(_changed(r)) or "-",
                _when(r.ts),
            ]
            for r in records
        ]
        out.write("\n")
        _table(rows, out)
    else:
        out.write(f"state    ({note})\n")
        out.write(json.dumps(state, indent=2, ensure_ascii=False) + "\n")
    return 0
