"""``flowkit show`` and ``history``: one stored thread's state and checkpoints, without running
anything.

Showing a state replays the journal with the thread's flow when it is registered (exact);
otherwise it folds the stored updates over the start state or latest snapshot and says so.
Nothing here creates a thread or a store.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from ..terminal.inputs import positive_int, whole_number
from ..terminal.output import iso, table, when, write_json
from ..terminal.store import add_store_option, open_for_reading, store_location
from ._pauses import pauses_json, write_pauses

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..stores import Store
    from ..stores._protocol import AnyRecord

__all__ = ["register"]

_FLOW_HELP = "replay with this flow TARGET (default: the registered workflow the thread names)"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    show = commands.add_parser(
        "show", parents=[common], help="show a stored thread's state (personal slots masked)"
    )
    show.add_argument("thread", metavar="THREAD", help="the thread id")
    add_store_option(show)
    show.add_argument("--history", action="store_true", help="also list every checkpoint")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--flow", metavar="TARGET", help=_FLOW_HELP)
    show.set_defaults(run=_cmd_show)

    history = commands.add_parser(
        "history", parents=[common], help="list a thread's checkpoints (fork from any of them)"
    )
    history.add_argument("thread", metavar="THREAD", help="the thread id")
    add_store_option(history)
    history.add_argument("--json", action="store_true", help="print JSON")
    history.add_argument(
        "--limit", metavar="N", type=positive_int,
        help="only the N checkpoints before --before (default: the latest N), oldest first",
    )  # fmt: skip
    history.add_argument(
        "--before", metavar="V", type=whole_number,
        help="only checkpoints before version V (the next page back: the first version shown)",
    )  # fmt: skip
    history.set_defaults(run=_cmd_history)


def _changed(record: AnyRecord) -> list[str]:
    while record.kind == "sub":  # a child flow's record: what the child changed
        record = record.record
    if record.kind == "start":
        return sorted(record.state)
    if record.kind == "pause":
        return []
    return sorted(record.update)


def _actor(record: AnyRecord) -> str:
    if record.kind == "sub":
        return f"{record.node}/{_actor(record.record)}".rstrip("/")
    if record.kind in ("step", "pause", "join", "timer"):
        return record.node
    if record.kind == "item":
        return f"{record.node}[{record.label or record.index}]" + _by(record.actor)
    if record.kind == "input":
        return record.gate + _by(record.actor)
    if record.kind == "patch":
        return f"({record.actor})"
    return ""


def _by(actor: str | None) -> str:
    """Who answered, after the pause's name: `` (rita)``; nothing when not said."""
    return "" if actor is None else f" ({actor})"


def _history_json(records: Sequence[AnyRecord]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for record in records:
        data = record.model_dump(mode="json")
        data["changed"] = _changed(record)
        data["updated"] = iso(record.ts)
        rows.append(data)
    return rows


def _history_table(records: Sequence[AnyRecord], out: TextIO) -> None:
    rows = [["VERSION", "KIND", "NODE", "NEXT", "STATUS", "CHANGED", "TIME"]]
    errors: list[str] = []
    for r in records:
        changed = "(initial state)" if r.kind == "start" else ",".join(_changed(r)) or "-"
        rows.append([str(r.version), r.kind, _actor(r), r.next, r.status, changed, when(r.ts)])
        error = getattr(r, "error", None)
        if error:
            errors.append(f"version {r.version} `{_actor(r)}`: {_error_text(error)}")
    table(rows, out)
    if errors:
        out.write("\nerrors:\n")
        out.writelines(f"  {line}\n" for line in errors)


def _error_text(error: Mapping[str, Any]) -> str:
    from ..foundation._plain import shorten

    return shorten(f"{error.get('type')}: {error.get('message')}", 300)


def _resolve_flow(flow_name: str, explicit: str | None) -> tuple[Flow | None, str]:
    """The flow to replay with and a note on where it came from (or why there is none)."""
    from ..errors import FlowDefinitionError
    from ..terminal.inputs import load_target
    from ..workflows import WorkflowLoadError, load_flow, registered

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


def _naive_state(store: Store, thread_id: str) -> tuple[dict[str, Any], list[str]]:
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
        state = dict(first.state) if first.kind == "start" else {}
        records = log.records[1:]
    doubtful: set[str] = set()
    for record in records:
        update: Mapping[str, Any] = getattr(record, "update", {})
        for key, value in update.items():
            if isinstance(value, list) and isinstance(state.get(key), list):
                doubtful.add(key)
            state[key] = value
    return state, sorted(doubtful)


class _Replayed(NamedTuple):
    state: dict[str, Any]
    exact: bool  # replayed with the flow (else folded from the stored updates)
    note: str  # how the state was made
    pauses: list[tuple[str, Any]] | None  # the open pauses (id, payload); None: not replayed


def _state_of(store: Store, thread_id: str, flow_name: str, explicit: str | None) -> _Replayed:
    """The thread's latest state, whether it is exact, a note on how it was made, and (when
    replayed with its flow) its open pauses with their payloads."""
    from ..errors import FlowkitError
    from ..runner._result import RunResult
    from ..runner._runner import Runner

    found, note = _resolve_flow(flow_name, explicit)
    if found is not None:
        try:
            result: RunResult[Any] = Runner(found, store=store).get_state(thread_id)
            pauses = [(pause.id, pause.payload) for pause in result.pauses]
            return _Replayed(found.schema.dump_state(result.state), True, note, pauses)
        except FlowkitError as exc:
            note = f"replaying with flow `{found.name}` failed ({exc}); state folded naively"
    state, doubtful = _naive_state(store, thread_id)
    if doubtful:
        note += f"; list fields that may be appended, not replaced: {', '.join(doubtful)}"
    return _Replayed(state, False, note, None)


def _masked(flow_name: str, state: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Personal values hidden the way ``chat``'s ``/state`` hides them."""
    if flow_name != "dialogue":
        return state, ""
    from ..dialogue.privacy import mask_dialogue_state

    return mask_dialogue_state(state)


def _masked_history(flow_name: str, history: Any, state: dict[str, Any]) -> Any:
    if flow_name != "dialogue":
        return history
    from ..dialogue.privacy import mask_like

    return mask_like(history, state)


def _records(
    args: argparse.Namespace, *, limit: int | None = None, before: int | None = None
) -> tuple[Store, list[AnyRecord]]:
    """The thread's records, or with ``limit``/``before`` a page of them (read alone)."""
    from ..errors import ThreadNotFoundError

    store = open_for_reading(store_location(args))
    if store is None:
        from ..stores._ids import check_thread_id

        raise ThreadNotFoundError(check_thread_id(args.thread))
    if limit is None and before is None:
        return store, store.records(args.thread)
    from ..stores._record_pages import record_page

    return store, list(record_page(store, args.thread, limit=limit, before=before).records)


def _unwrapped(record: Any) -> tuple[str, Any]:
    """A child flow's record and its path (``review/``); any other record as it is."""
    prefix = ""
    while record.kind == "sub":
        prefix, record = f"{prefix}{record.node}/", record.record
    return prefix, record


def _open_pauses(records: list[AnyRecord]) -> list[tuple[str, Any]]:
    """The open pauses of a waiting thread with their payloads, from its records alone."""
    from ._pauses import carried

    prefix, last = _unwrapped(records[-1])
    payloads: dict[str, Any] = {}
    for record in reversed(records):  # the records of this position, newest first
        where, inner = _unwrapped(record)
        if where != prefix or inner.next != last.next:
            break
        for pause, payload in carried(inner.pauses, prefix).items():
            payloads.setdefault(pause, payload)
    return [(pause, payloads.get(pause)) for pause in _open_gates(records)]


def _open_gates(records: list[AnyRecord]) -> list[str]:
    """The pauses a waiting thread waits at, from its records alone: inside a subflow by path
    (``review/approve``); at a ``Parallel``, its gate branches not answered yet; at a ``Map``,
    its calls that asked and are not answered yet (``node[label]``)."""
    unwrapped = _unwrapped
    records = list(records)
    while len(records) > 1 and records[-1].kind == "patch" and records[-1].next == records[-2].next:
        records.pop()  # a patch that did not move the thread: it still waits where it did
    prefix, last = unwrapped(records[-1])
    answered: set[str] = set()
    for record in reversed(records):
        where, inner = unwrapped(record)
        if inner.kind == "patch" and inner is not last:
            continue
        if where != prefix or getattr(inner, "node", None) != last.next:
            break
        if inner.kind == "pause":
            return [f"{prefix}{g}" for g in inner.gates if not _closed(g, answered)]
        if inner.kind == "item":
            answered |= {inner.label, f"{inner.node}[{inner.label}]"}
    entry = (last.pauses or {}).get(last.next) or {}
    if "wake" in entry:  # a node asleep (ctx.sleep_until): no pause to answer
        return []
    return [f"{prefix}{last.next}"]


def _closed(pause: str, answered: set[str]) -> bool:
    """Whether ``pause`` is a call that finished (``answered``: their labels and ids), or a
    pause inside one (``check[2]/approve``)."""
    return pause in answered or any(pause.startswith(f"{call}/") for call in answered)


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    """Print a thread's latest state (and, with ``--history``, every checkpoint)."""
    store, records = _records(args)
    thread_id = args.thread
    start = records[0]
    flow_name = start.flow if start.kind == "start" else "?"
    raw, exact, note, replayed = _state_of(store, thread_id, flow_name, args.flow)
    state, masking = _masked(flow_name, raw)
    if masking:
        note += f"; {masking}"
    last = records[-1]
    error = getattr(last, "error", None)
    pauses: list[tuple[str, Any]] = []
    if last.status == "waiting":
        pauses = replayed if replayed is not None else _open_pauses(records)
        pauses = [(pause, _masked_history(flow_name, payload, raw)) for pause, payload in pauses]
    if args.json:
        doc: dict[str, Any] = {
            "thread_id": thread_id,
            "flow": flow_name,
            "status": last.status,
            "next": last.next,
            "version": last.version,
            "updated": iso(last.ts),
            "exact": exact,
            "note": note,
            "error": error,
            "pauses": pauses_json(pauses),
            "due": None if last.due is None else iso(last.due),
            "state": state,
        }
        if args.history:
            doc["history"] = _masked_history(flow_name, _history_json(records), raw)
        write_json(doc, out)
        return 0
    where = "at gate" if last.status == "waiting" else "next:" if last.status == "pending" else "at"
    at = last.next
    if last.status == "waiting" and pauses:
        gates = [pause for pause, _ in pauses]
        where, at = ("at gate" if len(gates) == 1 else "at gates"), ", ".join(gates)
    elif last.status == "waiting":  # a node asleep (ctx.sleep_until): no pause to answer
        where = "(asleep) at node"
    out.write(f"thread   {thread_id}\nflow     {flow_name}\n")
    out.write(f"status   {last.status} {where} {at}\n")
    write_pauses(pauses, out)
    if last.due is not None:  # a gate's deadline or a node's wake-up
        out.write(f"due      {when(last.due)} (its timer fires then: `flowkit worker`/`serve`)\n")
    out.write(f"version  {last.version}\nupdated  {when(last.ts)}\n")
    if error:
        out.write(f"error    {_error_text(error)}\n")
    if args.history:
        out.write("\n")
        _history_table(records, out)
    else:
        import json

        out.write(f"state    ({note})\n")
        out.write(json.dumps(state, indent=2, ensure_ascii=False, default=str) + "\n")
    return 0


def _cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    """Every checkpoint of a thread: what changed, who changed it, and any error. With
    ``--limit``/``--before``, a page of them (oldest first), read without the rest."""
    store, records = _records(args, limit=args.limit, before=args.before)
    if args.json:
        history: Any = _history_json(records)
        start = records[0] if records else None
        if start is not None and start.kind == "start":
            flow_name = start.flow
        else:  # a page further on: its thread's flow, from where the thread stands
            from ._resolve import flow_name_of

            flow_name = flow_name_of(store, args.thread)
        if flow_name == "dialogue":
            raw = _state_of(store, args.thread, flow_name, None).state
            history = _masked_history(flow_name, history, raw)
        write_json(history, out)
    else:
        _history_table(records, out)
    return 0
