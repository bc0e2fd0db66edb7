"""``Subflow`` calls of a batch: a ``Parallel`` branch or a ``Map`` call that runs a flow.

Each such call runs its flow as a child thread of its own in the same store, named after the
parent's step (``<thread>:<node>@<version>:<index>``; ``.a2`` for a second attempt), through a
runner for the child flow that the parent's runner hands out (``RunPort._child_runner``). A
call is idempotent: run again after a crash, it finds its child where it stands and goes on
from there, so no step of the child runs twice.

A child that waits makes the call a pause of the batch: its open pauses are the batch's, by
path (``review[2]/approve``), with their payloads, answered like any other pause of the batch.
A child that finishes hands the parent its ``output`` (or its ``writes``), merged at the join
in call order; a child that fails is a failed call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ...definition._ask import Ask
from ...definition._node import Context, Node
from ...definition._parallel import Call
from ...definition._subflow import Subflow
from ...errors import NotWaitingError, SubflowError, ThreadNotFoundError
from ...records._node_error import NodeError
from ...stores._ids import MAX_THREAD_ID, is_thread_id
from .._port import RunPort

__all__ = [
    "ChildPaused",
    "child_answer",
    "child_call",
    "child_output",
    "child_pauses",
    "child_thread_id",
    "forked_child_id",
]


class ChildPaused(Ask):
    """A ``Subflow`` call's child waits: its open pauses, by the child's own ids, and the
    child's version then (a fork of the parent forks the child at that version)."""

    def __init__(self, thread: str, pauses: Mapping[str, Any], version: int) -> None:
        super().__init__(None)
        self.thread = thread
        self.pauses = dict(pauses)
        self.version = version


def child_thread_id(thread_id: str, version: int, node: str, index: int, attempt: int) -> str:
    """The id of the child thread of call ``index`` of ``node`` in the parent's step at
    ``version``: readable where the store's id rules allow, else a digest of the same."""
    name = f"{thread_id}:{node}@{version}:{index}" + ("" if attempt == 1 else f".a{attempt}")
    if len(name) <= MAX_THREAD_ID and is_thread_id(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return f"{thread_id[: MAX_THREAD_ID - 40]}:sub:{digest}"


def forked_child_id(tid: str, thread_id: str, new_thread_id: str) -> str:
    """The id of the copy of child thread ``tid`` (of ``thread_id``) that a fork of the parent
    into ``new_thread_id`` answers: named after the fork, and marked so that no call the fork
    runs later (``child_thread_id``) can ever take the same name."""
    rest = tid[len(thread_id) :] if tid.startswith(f"{thread_id}:") else f":{tid}"
    name = f"{new_thread_id}{rest}.fork"
    if len(name) <= MAX_THREAD_ID and is_thread_id(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return f"{new_thread_id[: MAX_THREAD_ID - 40]}:sub:{digest}"


def child_pauses(result: Any) -> dict[str, Any]:
    """A waiting child's open pauses, id -> payload."""
    return {pause.id: pause.payload for pause in result.pauses}


def child_output(sub: Subflow, name: str, state: Any, result: Any) -> Mapping[str, Any]:
    """What a finished child hands the parent; ``SubflowError`` for a child that failed."""
    if result.status == "failed":
        error = result.error
        raise SubflowError(
            NodeError(
                type=error.type if error is not None else "SubflowFailed",
                message=(
                    f"{name}/{error.node}: {error.message}"
                    if error is not None
                    else f"`{name}` ended at its failed final state `{result.node}`"
                ),
                node=name,
                retryable=error.retryable if error is not None else False,
                attempts=1,
            )
        )
    return sub.parent_update(state, result.state) or {}


def child_call(runner: RunPort, name: str, call: Call, version: int) -> Node:
    """The node a batch runs for ``Subflow`` call ``call`` of node ``name``: it starts the
    call's child thread (or goes on with it) and returns the parent's update, or raises
    ``ChildPaused`` while the child waits. Async when the child flow has async nodes (the
    async driver awaits it on its loop; the sync driver gives it a loop of its own)."""
    sub = call.node
    assert isinstance(sub, Subflow)
    is_item = call.gate is None and call.item is not None
    label = f"{name}[{call.label}]"

    def plan(state: Any, ctx: Context[Any]) -> tuple[Any, str, str, Any]:
        """The child's runner and thread, and what to do: start it (from the value), go on
        with it, or nothing (the value is where it stands)."""
        threads = runner._child_runner(sub.flow)
        tid = child_thread_id(ctx.thread_id, version, name, call.index, ctx.attempt)
        try:
            result = threads.get_state(tid)
        except ThreadNotFoundError:
            start = sub.item_start_state(state, call.item) if is_item else sub.start_state(state)
            return threads, tid, "start", start
        if result.status == "pending" or (
            result.status == "failed" and result.node in sub.flow.nodes
        ):
            return threads, tid, "resume", None  # a crash or a failure mid-child
        return threads, tid, "have", result

    def outcome(state: Any, tid: str, result: Any) -> Mapping[str, Any]:
        if result.status == "waiting":
            raise ChildPaused(tid, child_pauses(result), result.version)
        return child_output(sub, label, state, result)

    if sub.is_async:

        async def run_child_async(state: Any, ctx: Context[Any]) -> Mapping[str, Any]:
            threads, tid, action, value = plan(state, ctx)
            if action == "start":
                value = await threads.astart(tid, value, deps=ctx.deps)
            elif action == "resume":
                value = await threads.aresume(tid, deps=ctx.deps)
            return outcome(state, tid, value)

        run: Any = run_child_async
    else:

        def run_child(state: Any, ctx: Context[Any]) -> Mapping[str, Any]:
            threads, tid, action, value = plan(state, ctx)
            if action == "start":
                value = threads.start(tid, value, deps=ctx.deps)
            elif action == "resume":
                value = threads.resume(tid, deps=ctx.deps)
            return outcome(state, tid, value)

        run = run_child
    run.__name__ = label
    return Node(run, reads=sub.reads, writes=sub.writes, retry=sub.retry)


def child_answer(
    runner: RunPort, sub: Subflow, tid: str, given: Mapping[str, Any], actor: str | None = None
) -> Node:
    """A node that gives a waiting child thread its answers (``given``: the child's pause ids
    -> inputs; ``actor``: who gave them) and returns where the child then stands. An answer
    the child took already (a crash came before the parent's checkpoint) is not given twice:
    it returns where the child stands."""
    threads = runner._child_runner(sub.flow)
    if len(given) == 1:
        ((pause, value),) = given.items()
        args: tuple[Any, ...] = (value,)
        gate: str | None = pause
    else:
        args, gate = (dict(given),), None

    def stale(exc: NotWaitingError) -> Any:
        result = threads.get_state(tid)
        if result.status == "waiting" and all(p in child_pauses(result) for p in given):
            raise exc  # still waiting there: the refusal was about something else
        return result

    if sub.is_async:

        async def answer_async(state: Any) -> Any:
            try:
                return await threads.aresume(tid, *args, gate=gate, actor=actor)
            except NotWaitingError as exc:
                return stale(exc)

        return Node(answer_async)

    def answer(state: Any) -> Any:
        try:
            return threads.resume(tid, *args, gate=gate, actor=actor)
        except NotWaitingError as exc:
            return stale(exc)

    return Node(answer)
