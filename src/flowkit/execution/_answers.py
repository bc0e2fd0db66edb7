"""Answering a waiting thread: which open pause(s) an answer is for, validated, committed.

``resume(thread_id, input, gate=id)`` answers pause ``id``; ``resume(thread_id, {id: input,
...})`` answers several at once (each checkpointed on its own); a bare ``input`` answers the
one open pause, and is refused, naming the open ids, when several are open (as LangGraph
refuses a resume without ids when several interrupts are pending).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from ..definition._parallel import BatchNode
from ..errors import NotWaitingError, UnknownGateError
from ._cursor import Cursor
from ._open import known_pause, open_pauses
from ._outside_steps import gate_input_step, validate_gate_input
from ._port import RunPort
from ._timers import asleep, sleeping
from .batch._gates import ChildAnswers, answer_batch

__all__ = ["answer", "answers_for", "named_answer"]


def answer(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    value: Any,
    gate: str | None,
    actor: str | None = None,
) -> tuple[Cursor, ChildAnswers]:
    """Answer the open pause(s) of a thread waiting in this flow (not inside a child); with
    the answers for children of a batch's ``Subflow`` calls, which the run gives first
    (``answer_children``). Each record an answer writes names ``actor`` (who answered)."""
    flow = runner.flow
    if sleeping(cursor):  # ctx.sleep_until: its timer, not an answer, moves it on
        raise asleep(thread_id, cursor)
    waiting = tuple(open_pauses(flow, cursor))
    node = flow.nodes.get(cursor.node)
    several = isinstance(node, BatchNode)
    answers = answers_for(
        thread_id,
        cursor.node,
        waiting,
        value,
        gate,
        several=several,
        known=lambda pause: known_pause(flow, pause, cursor),
    )
    if isinstance(node, BatchNode):
        return answer_batch(runner, thread_id, run_id, cursor, answers, actor)
    ((pause, given),) = answers.items()
    spec = flow.gates[pause] if node is None else node.asks
    assert spec is not None, "a node waits only when it asked"
    if gate is None:
        given = named_answer(pause, given, spec.input)
    model = validate_gate_input(flow, thread_id, pause, given, spec)
    return gate_input_step(runner, thread_id, run_id, cursor, model, spec, actor), {}


def named_answer(pause: str, value: Any, model: type[BaseModel]) -> Any:
    """The answer in ``value`` for the one open ``pause``: ``{pause: answer}`` (as a
    mapping of answers by id is given where several are open, and as LangGraph's
    ``Command(resume={interrupt_id: value})`` names an interrupt) is ``answer``, unless the
    answer's model has a field named like the pause (then the mapping is the answer)."""
    if (
        isinstance(value, Mapping)
        and len(value) == 1
        and pause in value
        and pause not in model.model_fields
    ):
        return value[pause]
    return value


def answers_for(
    thread_id: str,
    node: str,
    waiting: tuple[str, ...],
    value: Any,
    gate: str | None,
    *,
    several: bool = True,
    inside: str | None = None,
    known: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """The answers ``value`` gives, by pause id: ``gate=`` names one; a mapping whose keys are
    open ids answers those (where ``several`` pauses can be open: a ``Map``'s or
    ``Parallel``'s); otherwise ``value`` answers the one open pause. ``inside`` names the
    ``Subflow`` node whose child waits (the ids are paths then). A mapping that names some
    open ids and others that are not is refused whole: ``UnknownGateError`` for an id the
    flow cannot have (``known`` says which it can), ``NotWaitingError`` for one not open."""
    if gate is not None:
        if gate not in waiting:
            where = "" if inside is None else f" (inside subflow `{inside}`)"
            raise NotWaitingError(
                f"Thread `{thread_id}` waits at {_names(waiting)}{where}, not at `{gate}`; "
                "resume with gate= " + ("that one." if len(waiting) == 1 else "one of those."),
                thread_id=thread_id,
                status="waiting",
                node=node,
            )
        return {gate: value}
    if several and isinstance(value, Mapping) and value and set(value) <= set(waiting):
        return dict(value)
    if several and isinstance(value, Mapping) and set(value) & set(waiting):
        for key in value:
            if key in waiting:
                continue
            if known is not None and not (isinstance(key, str) and known(key)):
                raise UnknownGateError(str(key), thread_id=thread_id, gates=list(waiting))
            raise NotWaitingError(
                f"Thread `{thread_id}` waits at {_names(waiting)}, not at `{key}`; answer only "
                "those (nothing was saved).",
                thread_id=thread_id,
                status="waiting",
                node=node,
            )
    if len(waiting) == 1:
        return {waiting[0]: value}
    if inside is not None:
        raise NotWaitingError(
            f"Thread `{thread_id}` waits at {len(waiting)} gates inside subflow `{inside}` "
            f"({_names(waiting)}); pass gate='<path>' with its input, or a mapping "
            "{path: input} to answer several.",
            thread_id=thread_id,
            status="waiting",
            node=node,
        )
    raise NotWaitingError(
        f"Thread `{thread_id}` waits at {len(waiting)} gates of `{node}` ({_names(waiting)}); "
        "pass gate='<name>' with its input, or a mapping {gate name: input} to answer several.",
        thread_id=thread_id,
        status="waiting",
        node=node,
    )


def _names(pauses: tuple[str, ...]) -> str:
    return ", ".join(f"`{p}`" for p in pauses)
