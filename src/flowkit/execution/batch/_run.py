"""The execution core's part for ``Map`` and ``Parallel`` nodes: fan out, checkpoint, join.

The node's calls all see the state as it was when the run reached the node. Each finished call
is committed as an ``item`` record (its update, not yet applied), the calls that finish
together in one append (``_checkpoints.Group``), so a crash loses only the calls still running
and the few finished ones not saved yet; once every call has finished, a ``join`` record
merges their updates in index order. Live runs and journal replay merge through the same
function, so a resumed or replayed thread has exactly the state an uninterrupted run would
have had.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from functools import partial
from typing import Any

from ...definition._ask import Ask
from ...definition._jsonform import dump_payload
from ...definition._node import check_update
from ...definition._parallel import Batched, BatchNode, Call, Map
from ...errors import RunError
from ...records._events import Failed, NodeFinished, NodeStarted, Waiting
from ...records._node_error import NodeError
from ...records._records import JoinRecord
from .._cache import NO_ITEM, cached_update, remember_update, usable
from .._cursor import Batch, Cursor, Finished, Instruction, ItemDone, Job, Outcome
from .._open import arrive, gate_payload, open_pauses
from .._port import RunPort
from .._steps import attempts as _attempts
from .._steps import check_ask, check_writes, log_node_finished, move, status_of
from ._checkpoints import Group, checkpoint_pauses, finished_call, label_of
from ._children import ChildPaused, child_call
from ._journal import combined_update, field_values, merge_items

__all__ = ["asked_calls", "run_batch"]

#: ``NodeError.type`` of a join where some calls failed; the message lists which and why.
ITEMS_FAILED = "ItemsFailed"


def run_batch(
    runner: RunPort, thread_id: str, run_id: str, cursor: Cursor, name: str, node: Batched
) -> Generator[Instruction, Any, Cursor]:
    """Run the calls of batch node ``name`` that have not finished yet, then join them."""
    started = time.perf_counter()
    if runner._subscribers:  # the map as a whole; each call then reports its own start
        runner._emit(NodeStarted(thread_id, run_id, name, 1))
    try:
        calls = _calls(thread_id, name, node, cursor)
    except RunError:
        raise
    except Exception as exc:  # `over` or `key` raised: the node fails, like a failing call
        error = _broke(runner, name, exc)
        return _join(runner, thread_id, run_id, cursor, name, node, 0, 0.0, error)
    todo = _todo(calls, cursor)
    if todo:
        by_index = {call.index: call for call in todo}
        hits, keys = _from_cache(runner, thread_id, name, node, cursor, todo)
        todo = [call for call in todo if call.index not in hits]
        try:
            limit = node.limit(cursor.state)
        except Exception as exc:  # a `concurrency` function that raised or gave junk
            error = _broke(runner, name, exc)
            return _join(runner, thread_id, run_id, cursor, name, node, len(calls), 0.0, error)
        batch = Batch(name, _jobs(runner, thread_id, run_id, cursor, name, todo), limit)
        group = Group(runner, thread_id, cursor)
        try:
            for index, hit in hits.items():  # the calls the cache answers: none runs
                _commit_item(
                    runner,
                    thread_id,
                    run_id,
                    group,
                    by_index[index],
                    _reused(index, hit),
                    len(calls),
                )
            left = len(todo)
            while left:
                batch.hold = group.hold()
                finished: Finished | None = yield batch
                if finished is None:  # none at hand: save the group before waiting on
                    group.save()
                    continue
                left -= 1
                call = by_index[finished.index]
                if isinstance(finished.outcome.error, Ask):
                    group.cursor = _commit_ask(
                        runner, thread_id, run_id, group.save(), name, call, finished
                    )
                    continue
                update = _commit_item(runner, thread_id, run_id, group, call, finished, len(calls))
                if call.index in keys and finished.outcome.error is None:
                    remember_update(runner, thread_id, *keys[call.index], update)
            cursor = group.save()
        except BaseException as exc:
            group.save_on_exit(exc)
            raise
        finally:
            batch.close()
    latency = time.perf_counter() - started
    done = cursor.items or {}
    branches = [c for c in calls if c.gate is not None and c.index not in done]
    if branches or cursor.pauses:
        return _pause(runner, thread_id, run_id, cursor, name, branches)
    return _join(runner, thread_id, run_id, cursor, name, node, len(calls), latency)


def _todo(calls: list[Call], cursor: Cursor) -> list[Call]:
    """The calls to run: neither finished, nor asked and waiting, nor a gate branch."""
    asked = asked_calls(cursor)
    return [
        call
        for call in calls
        if call.gate is None
        and (cursor.items is None or call.index not in cursor.items)
        and call.index not in asked
    ]


def _jobs(
    runner: RunPort, thread_id: str, run_id: str, cursor: Cursor, name: str, calls: list[Call]
) -> list[Job]:
    """The driver's jobs for ``calls``: each its attempts (a ``Subflow`` call: its child)."""
    return [
        Job(
            call.index,
            partial(
                _attempts,
                runner,
                thread_id,
                run_id,
                label_of(name, call),
                cursor,
                child_call(runner, name, call, cursor.step_version)
                if call.node.runs_child
                else call.node,
                call.index,
            ),
        )
        for call in calls
    ]


def asked_calls(cursor: Cursor) -> set[int]:
    """The indexes of the calls that asked (``ctx.ask``) and wait for their answer."""
    if not cursor.pauses:
        return set()
    return {int(entry["index"]) for entry in cursor.pauses.values() if "index" in entry}


def _pause(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    branches: list[Call],
) -> Cursor:
    """Every call has finished or asked; the gate branches and the calls that asked wait for
    their input."""
    added: dict[str, Any] = {}
    for call in branches:
        assert call.gate is not None
        entry = gate_payload(runner, thread_id, call.label, call.gate, cursor.state)
        if entry is not None:
            added[call.label] = entry
    after = checkpoint_pauses(runner, thread_id, run_id, cursor, added, status="waiting")
    if runner._subscribers:
        for gate, payload in open_pauses(runner.flow, after).items():
            runner._emit(Waiting(thread_id, run_id, gate, after.version, payload))
    return after


def _commit_ask(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    call: Call,
    finished: Finished,
) -> Cursor:
    """A call asked (``ctx.ask``): checkpoint its question (and what it saved with it) as an
    open pause; the other calls go on, and the node waits once all have finished or asked."""
    label = label_of(name, call)
    ask = finished.outcome.error
    assert isinstance(ask, Ask)
    entry: dict[str, Any]
    if isinstance(ask, ChildPaused):  # a Subflow call whose child waits
        entry = {
            "index": call.index,
            "thread": ask.thread,
            "pauses": ask.pauses,
            "version": ask.version,
        }
    else:
        check_ask(label, call.node.asks, ask)
        raw = check_update(ask.update, label)
        check_writes(label, call.node.writes, raw)
        _, update = runner.flow.schema.apply(cursor.state, raw, node=label)
        entry = {
            "payload": dump_payload(ask.payload, thread_id=thread_id, who=label),
            "index": call.index,
        }
        if update:
            entry["update"] = runner._threads.dump(update, thread_id=thread_id, who=label)
    after = checkpoint_pauses(runner, thread_id, run_id, cursor, {label: entry}, finished.llm_calls)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, label, finished.latency_s, finished.attempts))
    return after


def _calls(thread_id: str, name: str, node: Batched, cursor: Cursor) -> list[Call]:
    calls = node.calls(cursor.state)
    if cursor.items:
        known = {done.of for done in cursor.items.values()}
        if known != {len(calls)}:
            raise RunError(
                f"`{name}` now has {len(calls)} calls, but {len(cursor.items)} of "
                f"{', '.join(map(str, sorted(known)))} had finished before: a Map's `over` must "
                "give the same items for the same state. Fix it and resume, or patch the "
                "thread with update_state to start the map again.",
                thread_id=thread_id,
            )
    return calls


def _commit_item(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    group: Group,
    call: Call,
    finished: Finished,
    of: int,
) -> Mapping[str, Any]:
    """Checkpoint one finished call in ``group``: its update is kept aside, the state does not
    change. Returns the update (normalised; empty for a call that failed)."""
    cursor = group.cursor
    name = cursor.node
    label = label_of(name, call)
    outcome = finished.outcome
    error: NodeError | None = None
    update: Mapping[str, Any] = {}
    if outcome.error is None:
        raw = check_update(outcome.value, label)
        check_writes(label, call.node.writes, raw)
        # Validated against the state the call saw; applied only at the join. A cached
        # update is stored in its JSON form, like the journal's.
        _, update = runner.flow.schema.apply(
            cursor.state, raw, node=label, strict_json=outcome.cached
        )
    else:
        error = NodeError.from_exception(
            outcome.error, node=label, attempts=finished.attempts, text=runner.error_text
        )
        runner._log.warning(
            "node_failed",
            thread_id=thread_id,
            run_id=run_id,
            node=label,
            error_type=error.type,
            attempts=finished.attempts,
        )
    done, record = finished_call(
        runner, thread_id, run_id, name, group.version, call, of, update,
        error=error, finished=finished,
    )  # fmt: skip
    event = None
    if runner._subscribers:
        event = NodeFinished(
            thread_id, run_id, label, finished.latency_s, finished.attempts, error, outcome.cached
        )
    group.add(call, done, record, event)
    return update


def _reused(index: int, update: Mapping[str, Any]) -> Finished:
    """Call ``index`` answered by the cache: its update (JSON form), no attempt, no time."""
    return Finished(index, Outcome(update, None, True), 0, [], 0.0)


def _from_cache(
    runner: RunPort, thread_id: str, name: str, node: Batched, cursor: Cursor, todo: list[Call]
) -> tuple[dict[int, Mapping[str, Any]], dict[int, tuple[str, str]]]:
    """The updates the cache holds for calls of ``todo`` (by index), and where the other calls
    that have a cache keep theirs (the name and key to ``remember_update`` under). A ``Map``
    call's key holds its item, under the Map's name; a ``Parallel`` branch's is its own
    (``node[branch]``)."""
    hits: dict[int, Mapping[str, Any]] = {}
    keys: dict[int, tuple[str, str]] = {}
    for call in todo:
        if call.node.cache is None or call.node.runs_child:
            continue
        if isinstance(node, Map):
            cache_name, item = name, call.item
        else:
            cache_name, item = label_of(name, call), NO_ITEM
        key, hit = cached_update(runner, thread_id, cache_name, call.node, cursor.state, item)
        if hit is not None and usable(runner, thread_id, cache_name, call.node, cursor.state, hit):
            hits[call.index] = hit
        elif key is not None:
            keys[call.index] = (cache_name, key)
    return hits, keys


def _join(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    node: BatchNode,
    count: int,
    latency: float,
    broken: NodeError | None = None,
) -> Cursor:
    """Merge the finished calls in index order and route on, or stop where calls failed.

    ``broken`` is the error of the node's own callback (``over``, ``key``, ``concurrency``,
    ``merge``): nothing merges, and the node fails or routes on it as on failed calls."""
    flow = runner.flow
    items = cursor.items or {}
    failed = sorted(i for i, done in items.items() if done.error is not None)
    merged = sorted(i for i in items if i not in failed)
    error = broken or (_summary(name, count, items, failed) if failed else None)
    if error is not None and (flow.error_field is None or flow.route_table(name) is None):
        failed = [] if broken else failed  # keep every finished call: only the callback reruns
        return _fail(runner, thread_id, run_id, cursor, name, failed, merged, error, latency)
    extra: dict[str, Any] = {}
    folded = node.merge is None and broken is None
    if broken is not None:
        state, merged = cursor.state, []
    elif node.merge is None:
        state = merge_items(flow.schema, cursor.state, items, merged, name)
    else:
        updates = [field_values(flow.schema, items[i].update) for i in merged]
        try:
            value = node.merge(cursor.state, updates)
        except Exception as exc:
            error = _broke(runner, name, exc)
            return _join(runner, thread_id, run_id, cursor, name, node, count, latency, error)
        raw = dict(check_update(value, name))
        check_writes(name, node.writes, raw)
        state, extra = flow.schema.apply(cursor.state, raw, node=name)
    if error is not None:
        assert flow.error_field is not None
        state, more = flow.schema.apply(state, {flow.error_field: error}, node=name)
        extra.update(more)
    target = flow.next_state(name, state)
    log_node_finished(runner, thread_id, run_id, name, target, latency, 1, error)
    state = move(flow, thread_id, name, target, state, extra, cursor.version)
    pauses, due = arrive(runner, thread_id, target, state)
    after = Cursor(
        state, target, status_of(flow, target), cursor.version + 1, error, pauses=pauses, due=due
    )
    record = None
    if runner.store is not None:
        record = JoinRecord.model_construct(
            version=after.version,
            ts=runner._threads.stamp(),
            run_id=run_id,
            next=target,
            status=after.status,
            pauses=pauses,
            due=due,
            node=name,
            merged=merged,
            folded=folded,
            failed=failed,
            update=runner._threads.dump(extra, thread_id=thread_id, who=name),
            latency_s=round(latency, 6),
            error=error.model_dump() if error else None,
        )
    runner._threads.commit(thread_id, cursor.version, after, record)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, name, latency, 1, error))
        # The node's update, as a plain node's: what it wrote, not the fields' new values.
        update = combined_update(flow.schema, items, merged) if folded else {}
        update.update(extra)
        runner._announce(thread_id, run_id, name, after, dict(sorted(update.items())))
    return after


def _fail(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    name: str,
    failed: list[int],
    merged: list[int],
    error: NodeError,
    latency: float,
) -> Cursor:
    """Some calls failed with nowhere to route: the thread stops at the node, keeping the calls
    that succeeded, so resuming it (once fixed) runs only the failed ones again."""
    items = {i: done for i, done in (cursor.items or {}).items() if i not in failed}
    after = Cursor(
        cursor.state,
        name,
        "failed",
        cursor.version + 1,
        error,
        items or None,
        entered=cursor.step_version,
    )
    record = JoinRecord.model_construct(
        version=after.version,
        ts=runner._threads.stamp(),
        run_id=run_id,
        next=name,
        status="failed",
        node=name,
        merged=[],
        failed=failed,
        update={},
        latency_s=round(latency, 6),
        error=error.model_dump(),
    )
    runner._threads.commit(thread_id, cursor.version, after, record)
    if runner._subscribers:
        runner._emit(NodeFinished(thread_id, run_id, name, latency, 1, error))
        runner._emit(Failed(thread_id, run_id, name, error, after.version))
    return after


def _broke(runner: RunPort, name: str, exc: Exception) -> NodeError:
    return NodeError.from_exception(exc, node=name, attempts=1, text=runner.error_text)


def _summary(name: str, count: int, items: Mapping[int, ItemDone], failed: list[int]) -> NodeError:
    errors = [items[i].error for i in failed]
    shown = ", ".join(
        f"{name}[{items[i].label or i}] ({e.type})"
        for i, e in zip(failed, errors, strict=True)
        if e is not None
    )
    return NodeError(
        type=ITEMS_FAILED,
        message=f"{len(failed)} of {count} calls of `{name}` failed: {shown}",
        node=name,
        retryable=all(e is not None and e.retryable for e in errors),
        attempts=max(e.attempts for e in errors if e is not None),
    )
