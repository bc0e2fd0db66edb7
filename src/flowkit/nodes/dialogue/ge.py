"""Goal Executor (GE): moves a step-by-step goal (next, back, repeat) and runs a goal's action
when its slots are filled or its last step is done.

The action's call is recorded in ``tool_calls`` (personal slot values masked) and
``exec_trace`` (the ``action_history``); its result goes to ``tool_result``, or, when larger
than the domain's ``result_inline_bytes``, to the artifact store with only ``tool_result_ref``
kept in the state. Events the action schedules (reminders, see ``flowkit.dialogue.events``)
go to ``exec_trace`` as ``schedule`` entries. A failing handler becomes ``error`` and a
failed goal, not a crash; a handler's ``ActionRefused`` keeps the goal active with the
refusal for GP to explain.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ...definition._node import Context, Node, node
from ...dialogue.actions import ActionCall, ActionRefused, as_result
from ...dialogue.events import schedule_entries
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, GoalState, Refusal, ToolCall, TraceEntry
from ...foundation._logging import mask_text
from ...records._node_error import ErrorText, NodeError, is_retryable

__all__ = ["make_ge"]

MASK = "***"


def make_ge(services: Services) -> Node:
    domain = services.domain

    @node(
        reads=["goal_state", "slots", "entities"],
        writes=[
            "goal_state",
            "exec_trace",
            "tool_calls",
            "tool_result",
            "tool_result_ref",
            "error",
        ],
    )
    def goal_executor(state: DialogueState, ctx: Context) -> dict[str, Any]:
        goal = state.goal_state
        spec = domain.goals[goal.goal or ""]
        if spec.mode == "SLOT_FILLING":
            return _finish(services, goal, state.slots, ctx, [])
        total = len(spec.steps)
        step = goal.current_step or 0
        if goal.command == "next":
            step += 1
        elif goal.command == "back":
            step = max(0, step - 1)
        trace = TraceEntry(
            node="GE",
            kind="step",
            detail={"command": goal.command, "step": min(step + 1, total), "total": total},
        )
        if step < total:
            moved = goal.model_copy(update={"current_step": step, "fresh": False})
            return {"goal_state": moved, "exec_trace": [trace], "error": None}
        done = goal.model_copy(update={"current_step": total - 1})
        return _finish(services, done, state.slots, ctx, [trace])

    return goal_executor


def _finish(
    services: Services,
    goal: GoalState,
    slots: dict[str, Any],
    ctx: Context,
    trace: list[TraceEntry],
) -> dict[str, Any]:
    """Run the goal's action (if any) and complete the goal with its result."""
    domain = services.domain
    spec = domain.goals[goal.goal or ""]
    update: dict[str, Any] = {"error": None}
    if spec.action is None:
        update["goal_state"] = goal.model_copy(
            update={
                "status": "completed",
                "result": {},
                "history": [*goal.history, "completed"],
                "refusal": None,
            }
        )
        update["exec_trace"] = trace
        return update
    values = {name: slots[name] for name in spec.slots if name in slots}
    pii = domain.pii_slots()
    started = time.perf_counter()
    error: NodeError | None = None
    refusal: Refusal | None = None
    scheduled: list[TraceEntry] = []
    try:
        result = as_result(
            services.handlers[spec.action](
                ActionCall(
                    action=spec.action,
                    goal=goal.goal or "",
                    slots=values,
                    thread_id=ctx.thread_id,
                    ledger=services.ledger,
                )
            )
        )
        scheduled = schedule_entries(domain, result, ctx.clock())
    except ActionRefused as exc:
        result = None
        if exc.slot is not None and exc.slot not in spec.slots:
            error = NodeError(
                type="ActionRefused",
                message=f"the handler asked again for `{exc.slot}`, which is not a slot of "
                f"goal `{goal.goal}`; name one of {spec.slots} or None",
                node="GE",
                retryable=False,
            )
        else:
            refusal = Refusal(response=exc.response, slot=exc.slot, params=dict(exc.params))
            error = NodeError(
                type="ActionRefused",
                message=_mask(str(exc), values, pii, ctx.error_text),
                node="GE",
                retryable=False,
            )
    except Exception as exc:  # a failing handler is the goal's failure, not the turn's
        error = NodeError(
            type=type(exc).__name__,
            message=_mask(str(exc) or type(exc).__name__, values, pii, ctx.error_text),
            node="GE",
            retryable=is_retryable(exc),
        )
        result = None
    latency = round((time.perf_counter() - started) * 1000, 3)
    ref: str | None = None
    inline: dict[str, Any] | None = None
    if result is not None:
        data = json.dumps(result.data, ensure_ascii=False, default=str).encode()
        if result.data is not None and len(data) > domain.result_inline_bytes:
            ref = services.artifacts.put(data)
            inline = {"summary": result.summary, "bytes": len(data)}
        else:
            inline = {"summary": result.summary, "data": json.loads(data)}
    status = "active" if refusal else "failed" if error else "completed"
    call = ToolCall(
        name=spec.action,
        args={k: MASK if k in pii else v for k, v in values.items()},
        status="refused" if refusal else "error" if error else "ok",
        latency_ms=latency,
        result_ref=ref,
        error_type=error.type if error else None,
    )
    entry = TraceEntry(
        node="GE",
        kind="action",
        detail={
            "action": spec.action,
            "goal": goal.goal,
            "status": call.status,
            "ref": ref,
            "error_type": call.error_type,
            "response": refusal.response if refusal else None,
        },
    )
    update.update(
        goal_state=goal.model_copy(
            update={
                "status": status,
                "fresh": False,
                "result": result.summary if result else {},
                "history": [*goal.history, "refused" if refusal else status],
                "refusal": refusal,
            }
        ),
        exec_trace=[*trace, entry, *scheduled],
        tool_calls=[call],
        tool_result=inline,
        tool_result_ref=ref,
        error=error,
    )
    return update


def _mask(message: str, values: dict[str, Any], pii: frozenset[str], text: ErrorText) -> str:
    """A handler's error text without the personal slots' values (always) nor, unless the
    runner keeps error text raw, e-mail addresses, phone numbers and secrets."""
    for name in pii:
        value = values.get(name)
        if isinstance(value, str) and value:
            message = message.replace(value, MASK)
    return message if text == "raw" else mask_text(message)
