"""Gate branches of a ``Parallel``: several gates open at once, answered one by one.

Once a ``Parallel``'s node branches have finished, its gate branches wait together (the run
commits a ``pause`` record). Each answer is validated against its gate's model and
checkpointed like a finished call (an ``item`` record carrying the input); the answer that
closes the last open gate leaves the thread pending, and the run goes on to the join.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...definition._parallel import Call, Parallel
from ...errors import NotWaitingError
from .._cursor import Cursor
from .._outside_steps import dump_input, refused_by_gate, validate_gate_input
from .._port import RunPort
from .._steps import check_writes
from ._run import checkpoint_call, label_of

if TYPE_CHECKING:
    from ...definition._flow import Flow

__all__ = ["answer_gates", "open_gates"]


def open_gates(flow: Flow, cursor: Cursor) -> tuple[str, ...]:
    """The gates a waiting cursor waits at: its gate, or a ``Parallel``'s open gate branches."""
    if cursor.status != "waiting":
        return ()
    if cursor.node in flow.gates:
        return (cursor.node,)
    node = flow.nodes.get(cursor.node)
    if not isinstance(node, Parallel):
        return ()
    done = cursor.items or {}
    return tuple(c.label for c in node.calls(cursor.state) if c.gate and c.index not in done)


def answer_gates(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    value: Any,
    gate: str | None,
) -> Cursor:
    """Input for the open gate branches of a ``Parallel``: ``gate=`` names one; otherwise
    ``value`` maps gate names to their inputs. Each answer is checkpointed like a finished call;
    once none is open, the thread is pending and the run goes on to the join."""
    flow = runner.flow
    node = flow.nodes[cursor.node]
    assert isinstance(node, Parallel)
    waiting = open_gates(flow, cursor)
    answers = _answers(thread_id, cursor.node, waiting, value, gate)
    calls = node.calls(cursor.state)
    by_label = {call.label: call for call in calls}
    validated = {
        name: validate_gate_input(flow, thread_id, name, answer, by_label[name].gate)
        for name, answer in answers.items()
    }  # every input is checked before any is saved
    for name, model in validated.items():
        cursor = _commit_answer(runner, thread_id, run_id, cursor, by_label[name], model, calls)
    return cursor


def _answers(
    thread_id: str, node: str, waiting: tuple[str, ...], value: Any, gate: str | None
) -> dict[str, Any]:
    if gate is not None:
        if gate not in waiting:
            raise NotWaitingError(
                f"Thread `{thread_id}` waits at {_names(waiting)} of `{node}`, not at `{gate}`; "
                "resume with one of those.",
                thread_id=thread_id,
                status="waiting",
                node=node,
            )
        return {gate: value}
    if isinstance(value, Mapping) and value and set(value) <= set(waiting):
        return dict(value)
    raise NotWaitingError(
        f"Thread `{thread_id}` waits at {len(waiting)} gates of `{node}` ({_names(waiting)}); "
        "pass gate='<name>' with its input, or a mapping {gate name: input} to answer several.",
        thread_id=thread_id,
        status="waiting",
        node=node,
    )


def _names(gates: tuple[str, ...]) -> str:
    return ", ".join(f"`{g}`" for g in gates)


def _commit_answer(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    call: Call,
    model: BaseModel,
    calls: list[Call],
) -> Cursor:
    assert call.gate is not None
    name = cursor.node
    label = label_of(name, call)
    try:
        raw = call.gate.to_update(cursor.state, model, thread_id=thread_id)
    except (ValueError, TypeError, LookupError) as exc:
        raise refused_by_gate(call.label, thread_id, exc) from exc
    check_writes(label, call.gate.writes, raw)
    _, update = runner.flow.schema.apply(cursor.state, raw, node=label)
    done = cursor.items or {}
    still = any(c.gate and c.index not in done and c.index != call.index for c in calls)
    return checkpoint_call(
        runner,
        thread_id,
        run_id,
        cursor,
        call,
        len(calls),
        update,
        status="waiting" if still else "pending",
        given=dump_input(thread_id, label, model),
    )
