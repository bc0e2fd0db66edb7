"""Pauses of a ``Map`` or ``Parallel`` node, answered one by one or several at once.

Once a batch's calls have finished or asked, its gate branches (a ``Parallel``'s) and the calls
that asked (``ctx.ask`` in a ``Map``'s function) wait together (the run commits a ``pause``
record). Each answer is validated against its gate's (or the asking function's) model and
checkpointed like a finished call (an ``item`` record carrying the input); the answer that
closes the last open pause leaves the thread pending, and the run goes on to the join.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from pydantic import BaseModel

from ...definition._gate import Gate
from ...definition._node import check_update
from ...definition._parallel import Batched, Call, Map, Parallel
from ...definition._subflow import Subflow
from ...errors import SubflowError
from ...records._node_error import NodeError
from .._cursor import CallNode, Cursor, Instruction
from .._journal import raw_apply
from .._open import open_pauses
from .._outside_steps import dump_input, refused_by_gate, validate_gate_input
from .._port import RunPort
from .._steps import check_writes
from ._checkpoints import checkpoint_call, checkpoint_pauses, label_of
from ._children import child_answer, child_output, child_pauses

__all__ = ["ChildAnswers", "answer_batch", "answer_child_call", "answer_children", "pause_spec"]


def pause_spec(node: Batched, cursor: Cursor, pause: str) -> tuple[Call, Gate]:
    """The call an open pause of the batch at ``cursor`` stands for, and what its answer
    looks like (a gate branch's gate; the ``asks`` of a call that asked)."""
    calls = node.calls(cursor.state)
    entry = (cursor.pauses or {}).get(pause)
    if entry is not None and "index" in entry:
        call = calls[int(entry["index"])]
        assert call.node.asks is not None, "only a call that declares its answer asks"
        return call, call.node.asks
    call = next(c for c in calls if c.label == pause and c.gate is not None)
    assert call.gate is not None
    return call, call.gate


def answer_batch(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    answers: Mapping[str, Any],
    actor: str | None = None,
) -> tuple[Cursor, ChildAnswers]:
    """Answer open pauses of the batch node the thread waits at (``answers``: pause id ->
    input, every id open). Every input is validated before any is saved; each answer is then
    checkpointed on its own (naming ``actor``), so a crash between them loses none that was
    saved.

    Answers for the children of ``Subflow`` calls run those children on: they are returned
    (call key -> the child's answers) for ``answer_children`` to give as the run's first
    steps, through the driver, like any node call."""
    flow = runner.flow
    node = flow.nodes[cursor.node]
    assert isinstance(node, Map | Parallel)
    kept = cursor.pauses or {}
    own: dict[str, Any] = {}
    children: dict[str, dict[str, Any]] = {}  # a Subflow call's key -> its child's answers
    for pause, value in answers.items():
        key = _child_key(kept, pause)
        if key is None:
            own[pause] = value
        else:
            children.setdefault(key, {})[pause[len(key) + 1 :]] = value
    specs = {pause: pause_spec(node, cursor, pause) for pause in own}
    validated = {
        pause: validate_gate_input(flow, thread_id, pause, value, specs[pause][1])
        for pause, value in own.items()
    }
    calls = node.calls(cursor.state)
    for key, given in children.items():  # a child's own gates are checked here too
        child_flow = _child_of(calls, kept[key]).flow
        for pause, value in given.items():
            gate = child_flow.gates.get(pause)
            if gate is not None:
                validate_gate_input(child_flow, thread_id, f"{key}/{pause}", value, gate)
    prepared = {
        pause: _prepare_answer(runner, thread_id, cursor, pause, *specs[pause], model)
        for pause, model in validated.items()
    }  # every answer's update is made and checked before any is saved
    for pause, made in prepared.items():
        call = specs[pause][0]
        cursor = _commit_answer(
            runner, thread_id, run_id, cursor, pause, call, made, len(calls), actor
        )
    return cursor, children


#: Answers for the children of a batch's ``Subflow`` calls: call key -> child pause -> input.
ChildAnswers = dict[str, dict[str, Any]]


def answer_children(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    children: ChildAnswers,
    actor: str | None = None,
) -> Generator[Instruction, Any, Cursor]:
    """Give each ``Subflow`` call's child its answers (a node call the driver carries out;
    the child's history names ``actor``), then checkpoint where the call stands."""
    for key, given in children.items():
        cursor = yield from answer_child_call(runner, thread_id, run_id, cursor, key, given, actor)
    return cursor


def _child_key(kept: Mapping[str, Any], pause: str) -> str | None:
    """The Subflow call (its key in the cursor's pauses) whose child pause ``pause`` is."""
    for key, entry in kept.items():
        if (
            "pauses" in entry
            and pause.startswith(f"{key}/")
            and pause[len(key) + 1 :] in entry["pauses"]
        ):
            return key
    return None


def _child_of(calls: list[Call], entry: Mapping[str, Any]) -> Subflow:
    sub = calls[int(entry["index"])].node
    assert isinstance(sub, Subflow)
    return sub


def answer_child_call(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    key: str,
    given: dict[str, Any],
    actor: str | None = None,
) -> Generator[Instruction, Any, Cursor]:
    """Answer the child thread of Subflow call ``key``, then checkpoint where the call stands:
    finished (its output, kept for the join), failed, or waiting at its child's next pauses.
    An answer its child took already (a crash came before the parent's checkpoint) is not
    given twice: the call is brought up to where its child stands."""
    node = runner.flow.nodes[cursor.node]
    assert isinstance(node, Map | Parallel)
    calls = node.calls(cursor.state)
    entry = (cursor.pauses or {})[key]
    call = calls[int(entry["index"])]
    sub = _child_of(calls, entry)
    tid = str(entry["thread"])
    owner = runner.store if runner.store is not None else runner
    answering = child_answer(runner, sub, tid, given, actor)
    outcome = yield CallNode(answering, key, cursor.state, None, thread_id, owner)
    assert outcome is not None
    if outcome.error is not None:
        raise outcome.error  # an answer the child refused: nothing of the parent changed
    result = outcome.value
    if result.status == "waiting":
        added = {key: {**entry, "pauses": child_pauses(result), "version": result.version}}
        return checkpoint_pauses(runner, thread_id, run_id, cursor, added)
    name = cursor.node
    label = label_of(name, call)
    error: NodeError | None = None
    update: Mapping[str, Any] = {}
    try:
        raw = dict(check_update(child_output(sub, label, cursor.state, result), label))
        check_writes(label, sub.writes, raw)
        _, update = runner.flow.schema.apply(cursor.state, raw, node=label)
    except SubflowError as exc:
        assert isinstance(exc.error, NodeError), "child_output raises with a NodeError"
        error = exc.error
    ids = open_pauses(runner.flow, cursor)
    still = [p for p in ids if p != key and not p.startswith(f"{key}/")]
    return checkpoint_call(
        runner,
        thread_id,
        run_id,
        cursor,
        call,
        len(calls),
        update,
        error=error,
        status="waiting" if still else "pending",
    )


def _prepare_answer(
    runner: RunPort,
    thread_id: str,
    cursor: Cursor,
    pause: str,
    call: Call,
    spec: Gate,
    model: BaseModel,
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """The update an answer to ``pause`` makes and the input as the journal keeps it, each
    checked to be storable: made for every answer of a call before any is saved."""
    label = label_of(cursor.node, call)
    try:
        raw = dict(spec.to_update(cursor.state, model, thread_id=thread_id))
    except (ValueError, TypeError, LookupError) as exc:
        raise refused_by_gate(pause, thread_id, exc, runner.error_text) from exc
    check_writes(label, spec.writes, raw)
    entry = (cursor.pauses or {}).get(pause) or {}
    saved = entry.get("update")
    if saved:  # what the call saved with its question, then the answer, through reducers
        raw = raw_apply(runner.flow.schema, dict(saved), raw)
    _, update = runner.flow.schema.apply(cursor.state, raw, node=label)
    runner._threads.dump(update, thread_id=thread_id, who=label)  # refused here, not midway
    return update, dump_input(thread_id, label, model)


def _commit_answer(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    pause: str,
    call: Call,
    prepared: tuple[Mapping[str, Any], dict[str, Any]],
    of: int,
    actor: str | None,
) -> Cursor:
    update, given = prepared
    still = [p for p in open_pauses(runner.flow, cursor) if p != pause]
    return checkpoint_call(
        runner,
        thread_id,
        run_id,
        cursor,
        call,
        of,
        update,
        status="waiting" if still else "pending",
        given=given,
        actor=actor,
    )
