"""``runs.stream``: a flowkit stream as LangGraph's server-sent events.

``metadata`` first (the run id), then an event per item of each mode asked for: ``values``
(the state after each step; at a pause with ``__interrupt__``), ``updates`` (``{node:
update}``; at a pause ``{"__interrupt__": [...]}``), ``custom`` (what nodes ``ctx.emit``),
``events`` (node start and end, tokens, custom values as LangChain-style events),
``messages-tuple`` / ``messages`` (LLM tokens as message chunks) and ``tasks`` (a node's run
starts; its result, error or interrupts); an ``error`` event if the run failed, and ``end``
last. Values and payloads are redacted as everywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json, to_jsonable_python

from ...errors import FlowkitError, RunCancelledError
from ...records._events import Emitted, Event, NodeFinished, NodeStarted, TokenStreamed
from ...runner._result import RunResult
from ...runner._stream import PAUSE, Paused
from .._context import Server
from .._problems import problem_of
from .._redact import redact_with_pauses
from ._models import unsupported
from ._plan import Plan, apply_update, audit_answer
from ._shapes import interrupts_of, values_output

__all__ = ["EVENTS", "flowkit_modes", "frame", "sse_events"]

#: LangGraph stream mode -> the events it sends.
EVENTS = {
    "values": ("values",),
    "updates": ("updates",),
    "custom": ("custom",),
    "events": ("events",),
    "messages": ("messages/partial", "messages/complete"),
    "messages-tuple": ("messages",),
    "tasks": ("tasks",),
}
#: LangGraph stream mode -> the flowkit stream modes it is drawn from.
_MODES = {
    "values": ("values",),
    "updates": ("updates",),
    "custom": ("custom",),
    "events": ("events",),
    "messages": ("tokens",),
    "messages-tuple": ("tokens",),
    "tasks": ("events", "updates"),
}


def flowkit_modes(stream_mode: str | list[str]) -> list[str]:
    """The LangGraph modes asked for, checked (501 for one flowkit does not stream)."""
    asked = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    for mode in asked:
        if mode not in _MODES:
            raise unsupported(
                f"stream_mode={mode!r}", f"Streamed modes: {', '.join(sorted(_MODES))}."
            )
    return list(dict.fromkeys(asked)) or ["values"]


def frame(event: str, data: Any) -> bytes:
    """One server-sent event: ``event``, and ``data`` as one line of JSON."""
    return b"event: " + event.encode() + b"\ndata: " + to_json(data, fallback=str) + b"\n\n"


class _Mapper:
    """Turns one run's flowkit items into LangGraph events."""

    def __init__(self, server: Server, plan: Plan, asked: list[str], run_id: str) -> None:
        self.server = server
        self.flow = plan.runner.flow
        self.principal = plan.principal
        self.asked = asked
        self.run_id = run_id
        self.raw: dict[str, Any] = {}
        self.messages: dict[tuple[str, int], str] = {}
        #: The task id of each node's latest run (``tasks``), and how many it had.
        self.tasks: dict[str, str] = {}
        self.started = 0

    def _shown(self, pauses: tuple[Any, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        found = [(pause.id, pause.payload) for pause in pauses]
        return redact_with_pauses(
            self.server.redact, self.flow.name, self.raw, found, self.principal
        )

    def frames(self, mode: str, item: Any) -> Iterator[bytes]:
        if mode == "values":
            if isinstance(item, Paused):
                values, shown = self._shown(item.pauses)
                yield frame("values", {**values, "__interrupt__": interrupts_of(shown)})
                return
            if isinstance(item, BaseModel):
                self.raw = self.flow.schema.dump_state(item)
            yield frame("values", self._shown(())[0])
        elif mode == "updates":
            if PAUSE in item:
                shown = interrupts_of(self._shown(item[PAUSE].pauses)[1])
                if "updates" in self.asked:
                    yield frame("updates", {"__interrupt__": shown})
                if "tasks" in self.asked:
                    for interrupt in shown:
                        yield self._task_result(interrupt["id"], interrupts=[interrupt])
                return
            for node, update in item.items():
                masked = dict(self.server.redact(
                    self.flow.name, to_jsonable_python(update, fallback=str), self.principal
                ))  # fmt: skip
                if "updates" in self.asked:
                    yield frame("updates", {node: masked})
                if "tasks" in self.asked:
                    yield self._task_result(node, result=[[k, v] for k, v in masked.items()])
        elif mode == "custom":
            yield frame("custom", to_jsonable_python(item, fallback=str))
        elif mode == "events":
            found = self._event(item) if "events" in self.asked else None
            if found is not None:
                yield frame("events", found)
            if "tasks" in self.asked:
                yield from self._task(item)
        elif mode == "tokens":
            yield from self._tokens(item)

    def _task(self, event: Event) -> Iterator[bytes]:
        """``tasks``: a node's run starts (its first attempt), or fails; its result comes
        with its update (``_task_result``)."""
        if isinstance(event, NodeStarted) and event.attempt == 1:
            self.started += 1
            task_id = self.tasks[event.node] = f"{self.run_id}:{self.started}"
            start: dict[str, Any] = {"id": task_id, "name": event.node, "input": None,
                                     "triggers": []}  # fmt: skip
            yield frame("tasks", start)
        elif isinstance(event, NodeFinished) and event.error is not None:
            yield self._task_result(event.node, error=event.error.type)

    def _task_result(
        self,
        node: str,
        *,
        result: list[Any] | None = None,
        error: str | None = None,
        interrupts: list[dict[str, Any]] | None = None,
    ) -> bytes:
        return frame("tasks", {
            "id": self.tasks.get(node, f"{self.run_id}:{node}"),
            "name": node,
            "error": error,
            "result": result or [],
            "interrupts": interrupts or [],
        })  # fmt: skip

    def _event(self, event: Event) -> dict[str, Any] | None:
        meta = {"langgraph_node": getattr(event, "node", None), "thread_id": event.thread_id}
        base = {"run_id": self.run_id, "metadata": meta, "tags": [], "parent_ids": []}
        if isinstance(event, NodeStarted):
            return {**base, "event": "on_chain_start", "name": event.node, "data": {}}
        if isinstance(event, NodeFinished):
            error = None if event.error is None else event.error.type
            data = {"output": None, "error": error, "latency_s": event.latency_s}
            return {**base, "event": "on_chain_end", "name": event.node, "data": data}
        if isinstance(event, TokenStreamed):
            chunk = {"content": event.text, "type": "AIMessageChunk"}
            return {**base, "event": "on_chat_model_stream", "name": event.node,
                    "data": {"chunk": chunk}}  # fmt: skip
        if isinstance(event, Emitted):
            value = to_jsonable_python(event.value, fallback=str)
            return {**base, "event": "on_custom_event", "name": event.node, "data": value}
        return None

    def _tokens(self, token: TokenStreamed) -> Iterator[bytes]:
        key = (token.node, token.call)
        text = self.messages.get(key, "") + token.text
        self.messages[key] = text
        message_id = f"run-{self.run_id}-{token.node}-{token.call}"
        meta = {"langgraph_node": token.node, "run_id": self.run_id}
        if "messages-tuple" in self.asked:
            chunk = {"type": "AIMessageChunk", "content": token.text, "id": message_id}
            yield frame("messages", [chunk, meta])
        if "messages" in self.asked:
            full = {"type": "ai", "content": text, "id": message_id}
            yield frame("messages/partial", [full])
            if token.done:
                yield frame("messages/complete", [full])


def _standing(
    server: Server, plan: Plan, asked: list[str], result: RunResult[Any]
) -> Iterator[bytes]:
    """The events of a run that ran nothing: the thread's values (at a pause with
    ``__interrupt__``), and its open interrupts as an update."""
    values = values_output(server, plan.runner, result, plan.principal)
    values.pop("__error__", None)
    if "values" in asked:
        yield frame("values", values)
    if "updates" in asked and "__interrupt__" in values:
        yield frame("updates", {"__interrupt__": values["__interrupt__"]})


def sse_events(
    server: Server,
    plan: Plan,
    asked: list[str],
    run_id: str,
    outcome: dict[str, Any] | None = None,
) -> Iterator[bytes]:
    """The run's events; the run happens as they are read (a client that leaves stops it
    after the step in progress, which stays saved). ``outcome`` gets the run's ``result``
    and, if it failed or was refused, its ``error`` (``{"error", "message"}``)."""
    outcome = {} if outcome is None else outcome
    yield frame("metadata", {"run_id": run_id, "attempt": 1})
    mapper = _Mapper(server, plan, asked, run_id)
    modes = list(dict.fromkeys(flowkit for mode in asked for flowkit in _MODES[mode]))
    status = "success"
    try:
        expected = apply_update(plan)
        if plan.idle:  # from a checkpoint where nothing runs: where the thread stands
            outcome["result"] = standing = plan.runner.get_state(plan.thread_id)
            yield from _standing(server, plan, asked, standing)
            yield frame("end", {"run_id": run_id, "status": status})
            return
        stream = plan.runner.stream(
            plan.thread_id,
            plan.input,
            mode=modes,  # type: ignore[arg-type]  # checked by flowkit_modes
            new=plan.new,
            gate=plan.gate,
            expected_version=expected,
            actor=plan.principal or "anonymous",
        )
        for mode, item in stream:
            yield from mapper.frames(mode, item)
        result: RunResult[Any] | None = stream.result
        outcome["result"] = result
        if not plan.new:
            audit_answer(plan, None if result is None else result.version)
        if result is not None and result.status == "failed" and result.error is not None:
            status = "error"
            message = result.error.message if plan.principal is not None else None
            outcome["error"] = {"error": result.error.type, "message": message or ""}
            yield frame("error", outcome["error"])
    except RunCancelledError:  # runs.cancel: stopped after its saved step, not failed
        status = "interrupted"
        outcome["cancelled"] = True
        outcome["result"] = plan.runner.get_state(plan.thread_id)
    except FlowkitError as exc:
        status = "error"
        problem = problem_of(exc)
        outcome["error"] = {"error": problem.code, "message": problem.detail}
        yield frame("error", outcome["error"])
    yield frame("end", {"run_id": run_id, "status": status})
