"""What the LangGraph routes answer, as ``/openapi.json`` documents it (LangGraph's own
``Assistant``, ``Thread``, ``ThreadState`` and ``Run``, as far as flowkit fills them).

Documentation only: the routes build their answers in ``_shapes`` and these models never
touch them (``responses``, not ``response_model``); the fuzz test checks that the two agree.
Open to fields a later version adds (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AssistantDoc",
    "GraphDoc",
    "RunDoc",
    "SchemasDoc",
    "StateUpdatedDoc",
    "ThreadDoc",
    "ThreadStateDoc",
    "answer",
]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class AssistantDoc(_Open):
    """A flow the server runs: its id, graph id and name are the flow's name."""

    assistant_id: str
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    metadata: dict[str, Any]
    version: int
    created_at: str
    updated_at: str


class SchemasDoc(_Open):
    graph_id: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    state_schema: dict[str, Any]
    config_schema: dict[str, Any] | None
    context_schema: dict[str, Any] | None


class GraphDoc(_Open):
    """The flow's states and routes, ``__start__`` and ``__end__`` included."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class Interrupt(_Open):
    """An open pause: its payload and id."""

    value: Any
    id: str


class ThreadDoc(_Open):
    thread_id: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    status: Literal["idle", "busy", "interrupted", "error"]
    values: dict[str, Any] | None
    interrupts: dict[str, list[Interrupt]]


class CheckpointRef(_Open):
    """A checkpoint: its id is the thread's version, as text."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    checkpoint_map: dict[str, Any] | None


class ThreadStateDoc(_Open):
    """A checkpoint of the thread: its values, what runs next, the open interrupts."""

    values: dict[str, Any]
    next: list[str | None]
    checkpoint: CheckpointRef
    metadata: dict[str, Any]
    created_at: str | None
    parent_checkpoint: CheckpointRef | None
    tasks: list[dict[str, Any]]
    interrupts: list[Interrupt]


class StateUpdatedDoc(_Open):
    checkpoint: CheckpointRef


class RunDoc(_Open):
    run_id: str
    thread_id: str
    assistant_id: str
    created_at: str
    updated_at: str
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"]
    metadata: dict[str, Any]
    multitask_strategy: str


def answer(model: type[BaseModel] | Any, description: str) -> dict[int | str, dict[str, Any]]:
    """A route's ``responses`` for a 200 documented as ``model``."""
    return {200: {"model": model, "description": description}}
