"""A thread's checkpoints, as the Runner reads, reuses and adds to them: its history (whole or
a page), the cursor a fork starts from, a patch (``update_state``) and a rewind of the thread
to an earlier checkpoint.

The Runner's methods of the same names take the thread's lock where they need one and turn
the cursors into results; the rules live here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from ..definition._flow import Flow
from ..definition._parallel import Map, Parallel
from ..definition._subflow import Subflow
from ..errors import CheckpointNotFoundError, ConflictError, InvalidStateError, RunError
from ..execution._cursor import Cursor
from ..execution._outside_steps import patch_step, rewind_step
from ..execution._pages import check_page, replay_page
from ..execution._port import RunPort
from ..execution._threads import Threads
from ..execution.batch._children import forked_child_id
from ..execution.subflows._journal import unwrap
from ..execution.subflows._run import patch_child
from ._result import Checkpoint, Pause

__all__ = [
    "check_version",
    "fork_children",
    "fork_cursor",
    "history_of",
    "patch_thread",
    "rewind_thread",
]


def check_version(thread_id: str, actual: int, expected: int) -> None:
    """``ConflictError`` unless the thread is still at the version the caller looked at."""
    if actual != expected:
        raise ConflictError(
            f"Thread `{thread_id}` is at version {actual}, not {expected}; someone moved "
            "it first. Reload it and decide again.",
            thread_id=thread_id,
            expected=expected,
            actual=actual,
        )


def history_of(
    flow: Flow,
    threads: Threads,
    thread_id: str,
    limit: int | None,
    before: int | None,
    pause_list: Callable[[Cursor], tuple[Pause, ...]],
) -> list[Checkpoint[Any]]:
    """The thread's checkpoints, oldest first; a page with ``limit``/``before`` (see
    ``Runner.history``)."""
    found: list[Checkpoint[Any]] = []
    if limit is None and before is None:
        pairs = threads.replay(thread_id)
    else:
        check_page(thread_id, limit, before)
        store = threads.require_store("history and fork")
        pairs = replay_page(flow, store, thread_id, limit=limit, before=before)
    for record, cursor in pairs:
        shown, node, next_, child, error = record, None, record.next, None, cursor.error
        if record.kind == "sub":  # a child flow's step: shown as the child's, by path
            shown, node, next_, child, error = unwrap(record, cursor)
        found.append(
            Checkpoint(
                thread_id=thread_id,
                version=record.version,
                kind=shown.kind,
                node=node
                or getattr(shown, "node", None)
                or getattr(shown, "gate", None)
                or getattr(shown, "as_node", None),
                next=next_,
                status=record.status,
                state=cursor.state,
                update=getattr(shown, "update", {}),
                ts=record.ts,
                run_id=record.run_id,
                error=error,
                reason=getattr(shown, "reason", ""),
                actor=getattr(shown, "actor", None),
                child_state=child,
                cached=getattr(shown, "cached", False),
                attempts=getattr(shown, "attempts", 1),
                pauses=pause_list(cursor),
            )
        )
    return found


def _check_texts(thread_id: str, what: str, reason: object, actor: object) -> None:
    """``reason`` and ``actor`` are text kept in the history: ``InvalidStateError`` if not."""
    for name, text in (("reason", reason), ("actor", actor)):
        if not isinstance(text, str):
            raise InvalidStateError(
                f"Cannot {what} thread `{thread_id}` with a {type(text).__name__} as `{name}`: "
                f"`{name}` is text, kept in the thread's history; pass a str.",
                thread_id=thread_id,
            )


def _checked_version(thread_id: str, at: object, what: str, latest: str = "") -> None:
    if not isinstance(at, int) or isinstance(at, bool):
        raise RunError(
            f"Cannot {what} thread `{thread_id}` {'at' if latest else 'to'} {at!r:.40}: `at` "
            f"is a checkpoint version, a whole number (see `history()`){latest}.",
            thread_id=thread_id,
        )


def fork_cursor(threads: Threads, thread_id: str, at: int | None) -> tuple[Cursor, int]:
    """Where a fork of ``thread_id`` at checkpoint ``at`` (``None``: the latest) starts: that
    checkpoint's position, at version 0; and the checkpoint's version."""
    if at is not None:
        _checked_version(thread_id, at, "fork", ", or None for the latest")
        if at < 0:
            raise CheckpointNotFoundError(thread_id, at, threads.load(thread_id).version)
    last = deque(threads.replay(thread_id, upto=at), maxlen=1)
    if not last:  # `at` is older than a compacted thread's first checkpoint
        first = next(iter(threads.replay(thread_id)))[1].version
        latest = threads.load(thread_id).version
        raise CheckpointNotFoundError(thread_id, at if at is not None else -1, latest, first=first)
    cursor = last[0][1]
    if at is not None and cursor.version != at:
        raise CheckpointNotFoundError(thread_id, at, cursor.version)
    fresh = Cursor(
        cursor.state,
        cursor.node,
        cursor.status,
        0,
        cursor.error,
        cursor.items,
        sub=cursor.sub,
        pauses=cursor.pauses,
        due=cursor.due,
    )
    return fresh, cursor.version


def fork_children(
    flow: Flow,
    cursor: Cursor,
    thread_id: str,
    new_thread_id: str,
    child_runner: Callable[[Flow], Any],
    taken: Callable[[str], bool],
) -> Cursor:
    """``cursor``, a fork's start, with the child thread of each waiting ``Subflow`` call of
    a batch (at any depth of plain ``Subflow`` nodes) forked too, at the version the child
    stood at then, so that the fork answers children of its own and never moves the
    original's. Nothing is copied when ``new_thread_id`` is ``taken`` (the fork is then
    refused as it would be anyway)."""
    if not _has_children(cursor) or taken(new_thread_id):
        return cursor
    return _with_forked_children(flow, cursor, thread_id, new_thread_id, child_runner)


def _has_children(cursor: Cursor) -> bool:
    """Whether a batch's ``Subflow`` call waits in a child thread at ``cursor``."""
    at: Cursor | None = cursor
    while at is not None:
        if any(isinstance(e, Mapping) and "thread" in e for e in (at.pauses or {}).values()):
            return True
        at = at.sub
    return False


def _with_forked_children(
    flow: Flow,
    cursor: Cursor,
    thread_id: str,
    new_thread_id: str,
    child_runner: Callable[[Flow], Any],
) -> Cursor:
    node = flow.nodes[cursor.node]
    if cursor.sub is not None and isinstance(node, Subflow):  # the child's own batch
        inner = _with_forked_children(node.flow, cursor.sub, thread_id, new_thread_id, child_runner)
        cursor = cursor._replace(sub=inner)
    waiting = {
        key: entry
        for key, entry in (cursor.pauses or {}).items()
        if isinstance(entry, Mapping) and "thread" in entry
    }
    if not waiting:
        return cursor
    assert isinstance(node, Map | Parallel), "only a batch's calls run child threads"
    calls = node.calls(cursor.state)
    pauses = dict(cursor.pauses or {})
    for key, entry in waiting.items():
        sub = calls[int(entry["index"])].node
        assert isinstance(sub, Subflow)
        tid = str(entry["thread"])
        copy = forked_child_id(tid, thread_id, new_thread_id)
        # A record made before children's versions were kept forks the child as it stands.
        forked = child_runner(sub.flow).fork(tid, copy, at=entry.get("version"))
        pauses[key] = {**entry, "thread": copy, "version": forked.version}
    return cursor._replace(pauses=pauses)


def rewind_thread(
    runner: RunPort,
    threads: Threads,
    thread_id: str,
    at: int,
    reason: str,
    actor: str,
    expected_version: int | None,
) -> Cursor:
    """Put the thread back where it stood at checkpoint ``at``, under its lock (see
    ``Runner.rewind``); the cursor after the rewind."""
    _checked_version(thread_id, at, "rewind")
    _check_texts(thread_id, "rewind", reason, actor)
    with threads.lock(thread_id):
        cursor = threads.load(thread_id, migrate=True)
        if expected_version is not None:
            check_version(thread_id, cursor.version, expected_version)
        found = threads.replay(thread_id, upto=at) if 0 <= at <= cursor.version else ()
        last = deque(found, maxlen=1)
        if not last or last[0][1].version != at:
            first = next(iter(threads.replay(thread_id)))[1].version
            raise CheckpointNotFoundError(thread_id, at, cursor.version, first=first)
        return rewind_step(runner, threads, thread_id, cursor, last[0][1], reason, actor)


def patch_thread(
    runner: RunPort,
    threads: Threads,
    thread_id: str,
    values: Mapping[str, Any] | None,
    goto: str | None,
    reason: str,
    actor: str,
    expected_version: int | None,
    child: str | None,
    as_node: str | None = None,
) -> Cursor:
    """Patch the thread's state (or, with ``child``, the subflow's running there), under its
    lock (see ``Runner.update_state``); the cursor after the patch."""
    if values is not None and not isinstance(values, Mapping):
        raise InvalidStateError(
            f"Cannot patch thread `{thread_id}` with a {type(values).__name__}: `values` maps "
            "state fields to new values, e.g. {'count': 3}.",
            thread_id=thread_id,
        )
    _check_texts(thread_id, "patch", reason, actor)
    flow = runner.flow
    if child is None and goto is not None and goto not in flow.states:
        raise InvalidStateError(
            f"Cannot move thread `{thread_id}` to `{goto}`: not a state of flow "
            f"`{flow.name}` ({', '.join(flow.states)}).",
            thread_id=thread_id,
        )
    if as_node is not None:
        _check_as_node(flow, thread_id, as_node, goto, child)
    with threads.lock(thread_id):
        cursor = threads.load(thread_id, migrate=True)
        if expected_version is not None:
            check_version(thread_id, cursor.version, expected_version)
        if child is None:
            return patch_step(runner, thread_id, cursor, values or {}, goto, reason, actor, as_node)
        return patch_child(runner, thread_id, cursor, child, values or {}, goto, reason, actor)


def _check_as_node(
    flow: Flow, thread_id: str, as_node: str, goto: str | None, child: str | None
) -> None:
    """``as_node`` names a node or gate of the flow that has a route, and comes alone."""
    if goto is not None or child is not None:
        raise InvalidStateError(
            f"Cannot patch thread `{thread_id}` as `{as_node:.200}` and also "
            f"{'move it' if goto is not None else 'patch a child'}: `as_node` moves the thread "
            "where that node's route sends the new state. Give one of them.",
            thread_id=thread_id,
        )
    if not isinstance(as_node, str) or as_node not in flow.routes:
        raise InvalidStateError(
            f"Cannot patch thread `{thread_id}` as `{as_node!s:.200}`: not a node or gate of flow "
            f"`{flow.name}` ({', '.join(flow.routes)}).",
            thread_id=thread_id,
        )
