"""What a LangGraph run does on a flowkit thread, decided before it runs.

A run on a thread no flow ran on starts the assistant's flow with ``input``; a run with
``command={"resume": ...}`` answers the thread's open pause (``{pause id: answer}`` names one
of several, or answers several at once); a run with neither continues a failed or
interrupted run, and on a finished thread, or one at a pause, runs nothing and answers where
it stands. ``command["update"]`` patches the state first; ``command["goto"]`` (a state of the
flow) moves the thread there with that patch, and the run goes on from it. What the thread
cannot take is refused before anything runs (409 / 422), as flowkit's own resume route does.

A run naming an earlier checkpoint (``checkpoint_id``, or ``checkpoint``) travels back in
time on the same thread: the thread is first put back where it stood then (``Runner.rewind``,
a new checkpoint; history keeps the old branch), ``input`` (values) and ``command["update"]``
patch that state, then it goes on from there: a node runs again, a pause waits again (or is
answered, with ``resume``), a finished thread stays finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...definition._parallel import BatchNode
from ...errors import (
    CheckpointNotFoundError,
    InvalidStateError,
    NotWaitingError,
    RunError,
    ThreadNotFoundError,
)
from ...runner._result import Checkpoint, RunResult
from ...runner._runner import Runner
from .._answers import prevalidate
from .._audit import answered
from .._context import Server
from .._models import ResumeRequest
from .._problems import Problem
from .._roles import stamp_starter
from .._security import Access
from ._context import asked_checkpoint, find_thread
from ._models import RunCreate, unsupported
from ._registry import Registry

__all__ = ["Plan", "apply_update", "audit_answer", "execute", "plan_run", "refuse_unsupported"]


@dataclass(frozen=True)
class Plan:
    """One run, decided: start the flow, or resume the thread (``gate``: the pause named).

    ``at``: the checkpoint it runs from, the thread first put back there unless that is
    ``expected``, where it stood when planned (and must stand still until it runs); ``idle``:
    nothing runs after that and the update (the thread waits at a pause, or is done);
    ``pause``: the pause answered, for the audit line (the one named, else the one open)."""

    runner: Runner[Any]
    thread_id: str
    new: bool
    input: Any
    gate: str | None
    update: Mapping[str, Any] | None
    principal: str | None
    at: int | None = None
    expected: int | None = None
    idle: bool = False
    pause: str | None = None
    goto: str | None = None


def refuse_unsupported(body: RunCreate) -> None:
    """Refuse (501) what a run asks that flowkit does not do, whether the thread is busy
    or idle: checked as the run comes, not once its turn comes."""
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


def _goto(runner: Runner[Any], thread_id: str, command: Mapping[str, Any]) -> str | None:
    """The state ``Command(goto=...)`` names (one, as a name or a list of one), checked
    against the flow; ``None`` without one."""
    goto = command.get("goto")
    if goto is None:
        return None
    if isinstance(goto, list) and len(goto) == 1:
        goto = goto[0]
    if not isinstance(goto, str):
        raise unsupported(
            "Command(goto=...) with several nodes or a Send",
            "A flowkit thread stands at one state: name one node or gate; a Map node fans out.",
        )
    if "resume" in command:
        raise unsupported(
            "Command(goto=...) with resume",
            "Answer the pause with resume, or move the thread with goto (then run again).",
        )
    flow = runner.flow
    if goto not in flow.states:
        raise InvalidStateError(
            f"Cannot move thread `{thread_id}` to `{goto:.200}`: not a state of flow "
            f"`{flow.name}` ({', '.join(flow.states)}).",
            thread_id=thread_id,
        )
    return goto


def plan_run(
    server: Server, registry: Registry, principal: str | None, thread_id: str, body: RunCreate
) -> Plan:
    """Decide the run ``body`` asks for on ``thread_id``; refuse what cannot run."""
    refuse_unsupported(body)
    runner = server.served.runner(body.assistant_id)
    flow = runner.flow.name
    command = body.command or {}
    update = command.get("update")
    if update is not None and not isinstance(update, Mapping):
        raise unsupported("a list of updates in Command(update=...)", "Send one mapping.")
    goto = _goto(runner, thread_id, command)
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
        if _named_checkpoint(thread_id, body) is not None:
            raise Problem(404, "checkpoint_not_found", f"Thread `{thread_id}` has no "
                          "checkpoints: no flow has run on it yet.")  # fmt: skip
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
        if update is not None or goto is not None:
            raise unsupported(
                "Command(update=...) or Command(goto=...) on a new thread",
                "Start it with `input`; then a run can move it with goto.",
            )
        return Plan(runner, thread_id, True, start_input, None, None, principal)
    found, current = opened
    if found is not runner:
        raise _other_flow(thread_id, found.flow.name, flow)
    version = _named_checkpoint(thread_id, body)
    if version is not None and goto is not None:
        raise unsupported(
            "Command(goto=...) from a checkpoint",
            "Run from the checkpoint first, then move the thread with goto.",
        )
    if version is not None:  # it moves the thread, as a patch does: "update" too
        find_thread(server, registry, principal, "update", thread_id)
        return _travel(runner, current, version, body, principal)
    base = Plan(runner, thread_id, False, None, None, update, principal, None, current.version)
    if goto is not None:  # a patch that moves the thread: "update" too; then it goes on
        find_thread(server, registry, principal, "update", thread_id)
        _refuse_restart(replace(current, status="pending"), body.input is not None)
        return replace(base, goto=goto, idle=runner.flow.kind_of(goto) != "node")
    if "resume" in command:
        value, gate = _answer(current, command["resume"])
        prevalidate(runner, current, ResumeRequest(input=value, gate=gate))
        return replace(base, input=value, gate=gate, pause=_paused_at(current, gate))
    _refuse_restart(current, body.input is not None)
    # Nothing to answer a pause with: as LangGraph's interrupted node interrupts again, the
    # run answers where the thread waits (after the update, if any), and runs nothing; on a
    # finished thread, as LangGraph's graph with no task left, it answers its values.
    return replace(base, idle=current.status in ("waiting", "done"))


def _named_checkpoint(thread_id: str, body: RunCreate) -> int | None:
    """The checkpoint a run names: ``checkpoint_id``, ``checkpoint`` or the config's
    ``configurable.checkpoint_id`` (``None``: none, the run goes on from the latest)."""
    configurable = (body.config or {}).get("configurable")
    configured = configurable if isinstance(configurable, dict) else None
    return asked_checkpoint(thread_id, body.checkpoint_id, body.checkpoint or configured)


def _travel(
    runner: Runner[Any], current: RunResult[Any], version: int, body: RunCreate, who: str | None
) -> Plan:
    """A run from checkpoint ``version`` of the thread standing at ``current``."""
    thread_id, command = current.thread_id, body.command or {}
    found = _checkpoint_at(runner, current, version)
    in_batch = isinstance(runner.flow.nodes.get(found.next), BatchNode)
    if found.kind in ("item", "pause") or (in_batch and found.status == "waiting"):
        raise RunError(  # as Runner.rewind would, once the run had begun (409)
            f"Cannot run thread `{thread_id}` from checkpoint {version}: it stands part-way "
            f"through the batch of `{found.next}`. Run from the checkpoint before that node.",
            thread_id=thread_id,
        )
    point = _as_result(found)
    if body.input is not None and not isinstance(body.input, Mapping):
        raise unsupported("`input` that is not a mapping on a run from a checkpoint",
                          "Send the state values to change there.")  # fmt: skip
    update = {**(body.input or {}), **(command.get("update") or {})} or None
    base = Plan(runner, thread_id, False, None, None, update, who, version, current.version)
    if "resume" in command:
        if point.status != "waiting":
            raise NotWaitingError(
                f"Thread `{thread_id}` was {point.status} at `{point.node}` at checkpoint "
                f"{version}, not waiting: run from it without `resume`.",
                thread_id=thread_id,
                status=point.status,
                node=point.node,
            )
        value, gate = _answer(point, command["resume"])
        prevalidate(runner, point, ResumeRequest(input=value, gate=gate))
        return replace(base, input=value, gate=gate, pause=_paused_at(point, gate))
    return replace(base, idle=point.status in ("waiting", "done"))


def _checkpoint_at(runner: Runner[Any], current: RunResult[Any], version: int) -> Checkpoint[Any]:
    """Checkpoint ``version`` of the thread standing at ``current`` (404 if it has none)."""
    thread_id = current.thread_id
    page = (
        runner.history(thread_id, limit=1, before=version + 1) if version <= current.version else []
    )
    if not page or page[-1].version != version:
        raise CheckpointNotFoundError(thread_id, version, current.version)
    return page[-1]


def _as_result(point: Checkpoint[Any]) -> RunResult[Any]:
    """Where the thread stood at ``point``, as a ``RunResult`` (what the resume checks read)."""
    return RunResult(
        thread_id=point.thread_id,
        status=point.status,
        node=point.next,
        state=point.state,
        version=point.version,
        error=point.error,
        gates=tuple(pause.id for pause in point.pauses),
        pauses=point.pauses,
    )


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
    # `Command(resume=None)` answers, as LangGraph's does (with the fields' defaults here); a
    # flowkit resume without input would be no answer at all.
    return ({} if resume is None else resume), None


def _paused_at(current: RunResult[Any], gate: str | None) -> str | None:
    """The pause an answer is for: the one named, else the one open (``None``: several)."""
    return gate or (current.gates[0] if len(current.gates) == 1 else None)


def _refuse_restart(current: RunResult[Any], has_input: bool) -> None:
    """A run without ``resume``: a failed or interrupted (pending) run continues, one at a
    pause answers where it waits, a finished one answers its values; ``input`` for a thread
    that has started is refused."""
    thread_id = current.thread_id
    if current.status == "waiting" and has_input:
        names = ", ".join(f"`{gate}`" for gate in current.gates) or f"`{current.node}`"
        detail = (
            f"Thread `{thread_id}` waits at {names}; answer with command={{'resume': ...}} "
            "(an interrupt's id maps to its answer when several are open)."
        )
    elif current.status == "done" and has_input:
        detail = (
            f"Thread `{thread_id}` is done at `{current.node}`; run it from an earlier "
            "checkpoint (`checkpoint_id`), copy it (threads.copy) or start a new thread."
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
    """Run ``plan`` to its end: until the thread waits, finishes or fails. A thread that
    moved since the plan was made is a ``ConflictError`` (409), nothing written."""
    runner, thread_id = plan.runner, plan.thread_id
    expected = apply_update(plan)
    if plan.idle:
        return runner.get_state(thread_id)
    if plan.new:
        return runner.start(thread_id, plan.input)
    result = runner.resume(
        thread_id,
        plan.input,
        gate=plan.gate,
        expected_version=expected,
        actor=plan.principal or "anonymous",
    )
    audit_answer(plan, result.version)
    return result


def audit_answer(plan: Plan, version: int | None = None) -> None:
    """The audit line of a run that answered (or continued) the thread, as flowkit's own
    resume route logs it (``version``: where the thread stands after)."""
    answered(plan.principal, "resume", plan.thread_id, flow=plan.runner.flow.name,
             pause=plan.pause, version=version)  # fmt: skip


def apply_update(plan: Plan) -> int | None:
    """What comes before the run goes on, each an audited checkpoint: the way back to the
    checkpoint it runs from, then ``Command(update=...)`` (and, from a checkpoint, ``input``).
    Each write expects the thread where the plan found it (then where the last write left
    it): a thread moved meanwhile is a ``ConflictError``. Answers the version to expect next."""
    at, expected, runner, flow = plan.at, plan.expected, plan.runner, plan.runner.flow.name
    if at is not None and at != expected:
        expected = runner.rewind(
            plan.thread_id,
            at,
            reason=f"time travel to checkpoint {at} (LangGraph API)",
            actor=plan.principal or "anonymous",
            expected_version=expected,
        ).version
        answered(plan.principal, "update", plan.thread_id, flow=flow, version=expected)
    if plan.update is not None or plan.goto is not None:
        if plan.goto is not None:
            reason = f"Command(goto={plan.goto!r}) (LangGraph API)"
        elif at is None:
            reason = "Command(update=...) (LangGraph API)"
        else:
            reason = f"input and Command(update=...) at checkpoint {at} (LangGraph API)"
        expected = runner.update_state(
            plan.thread_id,
            plan.update or {},
            goto=plan.goto,
            reason=reason,
            actor=plan.principal or "anonymous",
            expected_version=expected,
        ).version
        answered(plan.principal, "update", plan.thread_id, flow=flow, version=expected)
    return expected
