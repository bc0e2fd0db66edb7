"""What the review page shows of a thread beyond its raw state: a view per kind of flow, and
the files a finished thread offers for download.

``sas``: the task list and each task's module steps as readable text, with what the reviewer
can do. A conversation-like flow (a ``messages`` list and a gate that takes text): the chat.
Anything else: the generic view (state and a form per gate). Files are served only when a
node of the flow produced their path, never a path a person patched into the state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..foundation._untrusted import read_regular_file
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..stores._protocol import Store
from ._problems import Problem
from ._served import gate_spec, text_field

__all__ = ["MAX_DOWNLOAD_BYTES", "download", "view_of"]

MAX_DOWNLOAD_BYTES = 16 * 1024 * 1024

#: State fields a conversation is kept in (the roundtable's is ``conversation_log``).
_CHAT_FIELDS = ("messages", "conversation_log", "transcript", "conversation")

#: Downloadable files per flow: name -> (state field holding its path, node that writes it).
_FILES: Mapping[str, Mapping[str, tuple[str, str]]] = {
    "sas": {"flow.xml": ("final_flow_xml_path", "merge_xml")},
}


def view_of(runner: Runner[Any], result: RunResult[Any], store: Store) -> dict[str, Any]:
    """The page's view of a thread (before redaction)."""
    flow = runner.flow
    if flow.name == "sas":
        return _sas_view(result, store)
    chat = _chat_view(runner, result)
    if chat is not None:
        return chat
    return {"kind": "generic"}


def _sas_view(result: RunResult[Any], store: Store) -> dict[str, Any]:
    from ..robot.text import render

    state = result.state
    stage = {
        "sas_awaiting_task_list_review": "tasks",
        "sas_awaiting_module_steps_review": "steps",
    }.get(result.node, "done" if result.status == "done" else "working")
    tasks = [
        {
            "name": task.name,
            "type": str(task.type),
            "description": task.description,
            "calls": list(task.sub_tasks),
        }
        for task in state.sas_step1_generated_tasks
    ]
    steps = []
    for task in state.sas_step1_generated_tasks:
        generated = state.sas_step2_module_steps.get(task.name)
        if generated is not None:
            text, failed = render(generated.steps).rstrip(), None
        else:
            text, failed = "", state.module_step_failures.get(task.name)
        if generated is not None or failed is not None:
            steps.append(
                {"task": task.name, "type": str(task.type), "text": text, "failed": failed}
            )
    view: dict[str, Any] = {
        "kind": "sas",
        "stage": stage,
        "request": state.current_user_request or state.user_input,
        "tasks": tasks,
        "module_steps": steps,
        "feedback": [{"stage": f.stage, "text": f.text, "task": f.task} for f in state.feedback],
        "error": state.error_message if state.is_error else None,
        "warnings": list(state.warnings[-5:]),
        "files": [],
    }
    if result.status == "done":
        view["files"] = [
            {"name": name, "bytes": len(data)}
            for name in _FILES["sas"]
            if (data := _file_bytes(result, store, "sas", name)) is not None
        ]
    return view


def _chat_view(runner: Runner[Any], result: RunResult[Any]) -> dict[str, Any] | None:
    messages = None
    for name in _CHAT_FIELDS:
        found = getattr(result.state, name, None)
        if isinstance(found, Sequence) and not isinstance(found, str):
            messages = found
            break
    if messages is None:
        return None
    field = None
    if result.status == "waiting" and len(result.gates) == 1:
        spec = gate_spec(runner.flow, result.gates[0])
        if spec is not None:
            field = text_field(spec.input)
            required = {n for n, info in spec.input.model_fields.items() if info.is_required()}
            if field is not None and not required <= {field}:
                field = None  # the gate needs more than a line of text: not a chat
    if field is None and result.status == "waiting":
        return None
    shown = []
    for item in messages:
        message = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
        if isinstance(message, Mapping):
            speaker = message.get("speaker") or message.get("role") or "?"
            text = message.get("text") or message.get("content") or ""
        else:
            speaker, _, text = str(message).partition(": ")
        shown.append({"speaker": str(speaker), "text": str(text)})
    return {"kind": "chat", "messages": shown, "input_field": field}


def download(runner: Runner[Any], result: RunResult[Any], store: Store, name: str) -> bytes:
    """The bytes of file ``name`` of a finished thread; a 404 problem when there is none."""
    data = _file_bytes(result, store, runner.flow.name, name)
    if data is None:
        raise Problem(
            404,
            "file_not_found",
            f"Thread `{result.thread_id}` offers no file `{name}` (a finished sas thread offers "
            "flow.xml).",
        )
    return data


def _file_bytes(result: RunResult[Any], store: Store, flow: str, name: str) -> bytes | None:
    spec = _FILES.get(flow, {}).get(name)
    if spec is None or result.status != "done":
        return None
    field, node = spec
    path = getattr(result.state, field, None)
    if not isinstance(path, str) or Path(path).name != name:
        return None
    if _written_by(store, result.thread_id, field) != node:
        return None  # patched in by a person, not produced by the flow: never served
    try:
        return read_regular_file(path, what="program", max_bytes=MAX_DOWNLOAD_BYTES)
    except (OSError, ValueError):
        return None


def _written_by(store: Store, thread_id: str, field: str) -> str | None:
    """The node of the last journal record that set ``field``; ``None`` for any other kind."""
    for record in reversed(store.records(thread_id)):
        inner: Any = record
        while inner.kind == "sub":
            inner = inner.record
        if field in (getattr(inner, "update", None) or {}):
            return inner.node if inner.kind == "step" else None
    return None
