"""flowkit's threads, checkpoints, pauses and flows in the shapes LangGraph clients read.

A flow is an assistant (its id and graph id are the flow's name); a pause is an interrupt
``{"value": payload, "id": pause id}``; a checkpoint's id is its version, as text. Values and
payloads go through the server's redaction exactly as in flowkit's own API (``thread_state``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_jsonable_python

from ...definition._flow import Flow
from ...runner._result import Checkpoint, RunResult
from ...runner._runner import Runner
from .._api import thread_state
from .._context import Server
from .._redact import mask_free_text, mask_free_values, redact_with_pauses
from ._registry import Registry, RunInfo, ThreadInfo

__all__ = [
    "assistant_json",
    "checkpoint_ref",
    "history_state_json",
    "interrupts_of",
    "iso",
    "run_json",
    "state_json",
    "thread_json",
    "thread_status",
    "values_output",
]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def checkpoint_ref(thread_id: str, version: int) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": str(version),
        "checkpoint_map": None,
    }


def interrupts_of(pauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Shown pauses (``{"id", "payload"}``) as LangGraph interrupts."""
    return [{"value": pause["payload"], "id": pause["id"]} for pause in pauses]


def thread_status(flowkit_status: str | None, busy: bool) -> str:
    """A thread's LangGraph status: busy while a run goes on, interrupted at a pause."""
    if busy:
        return "busy"
    return {"waiting": "interrupted", "failed": "error"}.get(flowkit_status or "", "idle")


def assistant_json(flow: Flow, created: float) -> dict[str, Any]:
    when = iso(created)
    return {
        "assistant_id": flow.name,
        "graph_id": flow.name,
        "name": flow.name,
        "description": flow.description or None,
        "config": {},
        "context": {},
        "metadata": {"created_by": "flowkit"},
        "version": 1,
        "created_at": when,
        "updated_at": when,
    }


def _tasks(node: str, interrupts: list[dict[str, Any]], error: str | None) -> list[dict[str, Any]]:
    tasks = [
        {
            "id": item["id"],
            "name": item["id"],
            "path": [item["id"]],
            "error": None,
            "interrupts": [item],
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for item in interrupts
    ]
    if error is not None and not tasks:
        tasks.append(
            {
                "id": node,
                "name": node,
                "path": [node],
                "error": error,
                "interrupts": [],
                "checkpoint": None,
                "state": None,
                "result": None,
            }
        )
    return tasks


def state_json(
    server: Server, runner: Runner[Any], result: RunResult[Any], principal: str | None
) -> dict[str, Any]:
    """The thread's latest checkpoint as a LangGraph ``ThreadState``."""
    shown = thread_state(server, runner, result, principal)
    interrupts = interrupts_of(shown["pauses"])
    error = shown["error"]
    error_text = None if error is None else f"{error['type']}: {error['message'] or ''}"
    version = result.version
    return {
        "values": shown["state"],
        "next": [] if result.status == "done" else [result.node],
        "checkpoint": checkpoint_ref(result.thread_id, version),
        "metadata": {"flow": runner.flow.name, "step": version, "status": result.status},
        "created_at": None,
        "parent_checkpoint": checkpoint_ref(result.thread_id, version - 1) if version else None,
        "tasks": _tasks(result.node, interrupts, error_text),
        "interrupts": interrupts,
    }


def history_state_json(
    server: Server, runner: Runner[Any], point: Checkpoint[Any], principal: str | None
) -> dict[str, Any]:
    """One checkpoint of the thread's history as a LangGraph ``ThreadState``."""
    flow = runner.flow
    raw = flow.schema.dump_state(point.state)
    pauses = [(pause.id, pause.payload) for pause in point.pauses]
    values, shown = redact_with_pauses(server.redact, flow.name, raw, pauses, principal)
    interrupts = interrupts_of(shown)
    error = None if point.error is None else point.error.type
    version = point.version
    return {
        "values": values,
        "next": [] if point.status == "done" else [point.next],
        "checkpoint": checkpoint_ref(point.thread_id, version),
        "metadata": {
            "flow": flow.name,
            "step": version,
            "source": point.kind,
            "writes": {point.node: _masked_update(server, flow, point, principal)}
            if point.node
            else None,
            "actor": mask_free_text(point.actor, principal),
            "reason": mask_free_text(point.reason, principal) or None,
        },
        "created_at": iso(point.ts),
        "parent_checkpoint": checkpoint_ref(point.thread_id, version - 1) if version else None,
        "tasks": _tasks(point.next, interrupts, error),
        "interrupts": interrupts,
    }


def _masked_update(
    server: Server, flow: Flow, point: Checkpoint[Any], principal: str | None
) -> Any:
    """The checkpoint's update masked as the state is (and as flowkit's own history masks
    it): a secret a node wrote or a person answered is never shown."""
    update = to_jsonable_python(point.update, fallback=str)
    return dict(server.redact(flow.name, update, principal)) if isinstance(update, dict) else update


def thread_json(
    server: Server,
    registry: Registry,
    thread_id: str,
    info: ThreadInfo | None,
    opened: tuple[Runner[Any], RunResult[Any]] | None,
    principal: str | None,
    times: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """A LangGraph ``Thread``: ``opened`` is its runner and state once a flow ran on it."""
    created = info.created_at if info is not None else registry.started
    updated = info.updated_at if info is not None else created
    if times is not None:
        created, updated = (min(created, times[0]) if info else times[0]), times[1]
    values: Any = None
    interrupts: dict[str, list[dict[str, Any]]] = {}
    flowkit_status = None
    metadata = dict(info.metadata) if info is not None else {}
    if opened is not None:
        runner, result = opened
        shown = thread_state(server, runner, result, principal)
        values = shown["state"]
        interrupts = {item["id"]: [item] for item in interrupts_of(shown["pauses"])}
        flowkit_status = result.status
        metadata.setdefault("graph_id", runner.flow.name)
        metadata.setdefault("assistant_id", runner.flow.name)
    elif info is not None and info.assistant_id is not None:
        metadata.setdefault("graph_id", info.assistant_id)
        metadata.setdefault("assistant_id", info.assistant_id)
    return {
        "thread_id": thread_id,
        "created_at": iso(created),
        "updated_at": iso(updated),
        "metadata": mask_free_values(metadata, principal),
        "status": thread_status(flowkit_status, registry.busy(thread_id)),
        "values": values,
        "interrupts": interrupts,
    }


def run_json(run: RunInfo) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
        "status": run.status,
        "metadata": run.metadata,
        "multitask_strategy": run.multitask_strategy,
        "kwargs": {},
    }


def values_output(
    server: Server, runner: Runner[Any], result: RunResult[Any], principal: str | None
) -> dict[str, Any]:
    """What ``runs.wait`` and ``runs.join`` answer: the values, with ``__interrupt__`` at a
    pause and ``__error__`` after a failure."""
    shown = thread_state(server, runner, result, principal)
    output: dict[str, Any] = dict(shown["state"])
    if result.status == "waiting":
        output["__interrupt__"] = interrupts_of(shown["pauses"])
    if shown["error"] is not None:
        output["__error__"] = {
            "error": shown["error"]["type"],
            "message": shown["error"]["message"] or "",
        }
    return output
