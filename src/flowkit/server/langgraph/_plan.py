"""What a LangGraph run does on a flowkit thread, decided before it runs.

A run on a thread no flow ran on starts the assistant's flow with ``input``; a run with
``command={"resume": ...}`` answers the thread's open pause (``{pause id: answer}`` names one
of several, or answers several at once); a run with neither continues a failed or
interrupted run. ``command["update"]`` patches the state first. What the thread cannot take
is refused before anything runs (409 / 422), as flowkit's own resume route does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import NotWaitingError, ThreadNotFoundError
from ...runner._result import RunResult
from ...runner._runner import Runner
from .._api import _prevalidate
from .._context import Server
from .._models import ResumeRequest
from .._problems import Problem
from .._roles import stamp_starter
from .._security import Access
from ._context import find_thread
from ._models import RunCreate, unsupported
from ._registry import Registry

__all__ = ["Plan", "execute", "plan_run"]


@dataclass(frozen=True)
class Plan:
    """One run, decided: start the flow, or resume the thread (``gate``: the pause named)."""

    runner: Runner[Any]
    thread_id: str
    new: bool
    input: Any
    gate: str | None
    update: Mapping[str, Any] | None
    principal: str | None


def _refuse_unsupported(body: RunCreate) -> None:
    for name in ("interrupt_before", "interrupt_after", "webhook", "after_seconds"):
        if getattr(body, name) not in (None, [], ""):
            raise unsupported(
                f"`{name}` on runs",
                "A flow pauses at its gates and where its nodes ask (`ctx.ask`).",
            )
    if body.multitask_strategy in ("interrupt", "rollback"):
        raise unsupported(
            f"multitask_strategy={body.multitask_strategy!r}",
            "A flowkit run finishes its step; use 'reject' or 'enqueue'.",
        )
    if body.command and body.command.get("goto") is not None:
        raise unsupported(
            "Command(goto=...)", "Move a thread with flowkit's PATCH /threads/{id}/state `goto`."
        )
    if body.checkpoint_id is not None or body.checkpoint is not None:
        raise unsupported(
            "running from a checkpoint",
            "Copy the thread (threads.copy, or flowkit's POST /threads/{id}/fork with `at`).",
        )


def plan_run(
    server: Server, registry: Registry, principal: str | None, thread_id: str, body: RunCreate
) -> Plan:
    """Decide the run ``body`` asks for on ``thread_id``; refuse what cannot run."""
    _refuse_unsupported(body)
    runner = server.served.runner(body.assistant_id)
    flow = runner.flow.name
    command = body.command or {}
    update = command.get("update")
    if update is not None and not isinstance(update, Mapping):
        raise unsupported("a list of updates in Command(update=...)", "Send one mapping.")
    try:
        server.served.flow_name(thread_id)  # a thread a flow ran on: continued, so "resume"
    except ThreadNotFoundError:  # new, or created empty: started, so "start" (below)
        info, opened = registry.thread(thread_id), None
        if info is None:
            if body.if_not_exists != "create":
                raise
            info = registry.add_thread(thread_id, {}, flow)
    else:
        info, opened = find_thread(server, registry, principal, "resume", thread_id)
    if info is not None and info.assistant_id not in (None, flow):
        raise _other_flow(thread_id, info.assistant_id, flow)
    if opened is None:
        server.guard.require(principal, "start")
        start_input = stamp_starter(runner.flow, body.input, principal)
        server.guard.check(Access(principal, "start", thread_id, flow, _mapping(start_input)))
        if "resume" in command:
            raise NotWaitingError(
                f"Thread `{thread_id}` has not started, so there is nothing to resume; send "
                "`input` to start it.",
                thread_id=thread_id,
                status="new",
                node="",
            )
        if update is not None:
            raise unsupported("Command(update=...) on a new thread", "Send it as `input`.")
        return Plan(runner, thread_id, True, start_input, None, None, principal)
    found, current = opened
    if found is not runner:
        raise _other_flow(thread_id, found.flow.name, flow)
    if "resume" in command:
        value, gate = _answer(current, command["resume"])
        _prevalidate(runner, current, ResumeRequest(input=value, gate=gate))
        return Plan(runner, thread_id, False, value, gate, update, principal)
    _refuse_restart(current, body.input is not None)
    return Plan(runner, thread_id, False, None, None, update, principal)


def _answer(current: RunResult[Any], resume: Any) -> tuple[Any, str | None]:
    """The answer and the pause it names: ``{id: answer}`` with one open id names it."""
    if (
        isinstance(resume, Mapping)
        and len(resume) == 1
        and len(current.gates) > 1
        and set(resume) <= set(current.gates)
    ):
        ((gate, value),) = resume.items()
        return value, str(gate)
    return resume, None


def _refuse_restart(current: RunResult[Any], has_input: bool) -> None:
    """A run without ``resume``: only a failed or interrupted (pending) run continues."""
    thread_id = current.thread_id
    if current.status == "waiting":
        names = ", ".join(f"`{gate}`" for gate in current.gates) or f"`{current.node}`"
        detail = (
            f"Thread `{thread_id}` waits at {names}; answer with command={{'resume': ...}} "
            "(an interrupt's id maps to its answer when several are open)."
        )
    elif current.status == "done":
        detail = (
            f"Thread `{thread_id}` is done at `{current.node}`; copy it (threads.copy) or start "
            "a new thread to run again."
        )
    elif has_input:
        detail = (
            f"Thread `{thread_id}` has started; a run on it continues with no `input` "
            f"(it stands at `{current.node}`, {current.status})."
        )
    else:
        return
    raise NotWaitingError(detail, thread_id=thread_id, status=current.status, node=current.node)


def _other_flow(thread_id: str, owner: str, asked: str) -> Problem:
    return Problem(
        409,
        "wrong_assistant",
        f"Thread `{thread_id}` runs flow `{owner}`, not `{asked}`; run `{owner}` on it.",
        extra={"thread_id": thread_id},
    )


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def execute(plan: Plan) -> RunResult[Any]:
    """Run ``plan`` to its end: until the thread waits, finishes or fails."""
    runner, thread_id = plan.runner, plan.thread_id
    apply_update(plan)
    if plan.new:
        return runner.start(thread_id, plan.input)
    return runner.resume(thread_id, plan.input, gate=plan.gate)


def apply_update(plan: Plan) -> None:
    """``Command(update=...)``: an audited patch before the run goes on."""
    if plan.update is not None:
        plan.runner.update_state(
            plan.thread_id,
            plan.update,
            reason="Command(update=...) (LangGraph API)",
            actor=plan.principal or "anonymous",
        )
