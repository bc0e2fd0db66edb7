"""Pauses of a ``Map`` or ``Parallel`` node, answered one by one or several at once.

Once a batch's calls have finished or asked, its gate branches (a ``Parallel``'s) and the calls
that asked (``ctx.ask`` in a ``Map``'s function) wait together (the run commits a ``pause``
record). Each answer is validated against its gate's (or the asking function's) model and
checkpointed like a finished call (an ``item`` record carrying the input); the answer that
closes the last open pause leaves the thread pending, and the run goes on to the join.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ...definition._gate import Gate
from ...definition._parallel import Batched, Call, Map, Parallel
from .._cursor import Cursor
from .._open import open_pauses
from .._outside_steps import dump_input, refused_by_gate, validate_gate_input
from .._port import RunPort
from .._steps import check_writes
from ._run import checkpoint_call, label_of

__all__ = ["answer_batch", "pause_spec"]


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
) -> Cursor:
    """Answer open pauses of the batch node the thread waits at (``answers``: pause id ->
    input, every id open). Every input is validated before any is saved; each answer is then
    checkpointed on its own, so a crash between them loses none that was saved."""
    flow = runner.flow
    node = flow.nodes[cursor.node]
    assert isinstance(node, Map | Parallel)
    specs = {pause: pause_spec(node, cursor, pause) for pause in answers}
    validated = {
        pause: validate_gate_input(flow, thread_id, pause, value, specs[pause][1])
        for pause, value in answers.items()
    }
    of = len(node.calls(cursor.state))
    for pause, model in validated.items():
        call, spec = specs[pause]
        cursor = _commit_answer(runner, thread_id, run_id, cursor, pause, call, spec, model, of)
    return cursor


def _commit_answer(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    pause: str,
    call: Call,
    spec: Gate,
    model: BaseModel,
    of: int,
) -> Cursor:
    name = cursor.node
    label = label_of(name, call)
    try:
        raw = dict(spec.to_update(cursor.state, model, thread_id=thread_id))
    except (ValueError, TypeError, LookupError) as exc:
        raise refused_by_gate(pause, thread_id, exc) from exc
    check_writes(label, spec.writes, raw)
    entry = (cursor.pauses or {}).get(pause) or {}
    saved = entry.get("update")
    if saved:  # what the call saved with its question, under the answer
        raw = {**saved, **raw}
    _, update = runner.flow.schema.apply(cursor.state, raw, node=label)
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
        given=dump_input(thread_id, label, model),
        answered=pause,
    )
