"""Assistants: every served flow is one, its id and graph id the flow's name (read-only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from ...definition._flow import Flow
from .._context import Principal, server_of
from .._listing_api import state_schema
from .._served import gate_spec, input_schema
from ._context import registry_of
from ._documents import AssistantDoc, GraphDoc, SchemasDoc, answer
from ._models import AssistantSearch
from ._shapes import assistant_json

__all__ = ["flow_of", "router"]

router = APIRouter(tags=["langgraph"])

AssistantId = Annotated[str, Path(max_length=200, description="A flow's name")]
_END = "__end__"
_START = "__start__"


def flow_of(request: Request, assistant_id: str) -> Flow:
    """The flow an assistant id or graph id names (404 ``flow_not_served`` otherwise)."""
    return server_of(request).served.runner(assistant_id).flow


@router.post(
    "/assistants/search",
    response_model=None,
    responses=answer(list[AssistantDoc], "The served flows that match, by name"),
)
def search_assistants(
    request: Request, body: AssistantSearch, principal: Principal
) -> list[dict[str, Any]]:
    server = server_of(request)
    server.guard.require(principal, "read")
    created = registry_of(request).started
    found = [
        assistant_json(flow, created)
        for flow in server.served.flows.values()
        if (body.graph_id is None or flow.name == body.graph_id)
        and (body.name is None or body.name.lower() in flow.name.lower())
        and not body.metadata
    ]
    return found[body.offset : body.offset + body.limit]


@router.post("/assistants/count")
def count_assistants(request: Request, body: AssistantSearch, principal: Principal) -> int:
    return len(search_assistants(request, body.model_copy(update={"limit": 1000}), principal))


@router.get(
    "/assistants/{assistant_id}",
    response_model=None,
    responses=answer(AssistantDoc, "The flow as an assistant"),
)
def get_assistant(
    request: Request, assistant_id: AssistantId, principal: Principal
) -> dict[str, Any]:
    server_of(request).guard.require(principal, "read")
    return assistant_json(flow_of(request, assistant_id), registry_of(request).started)


@router.get(
    "/assistants/{assistant_id}/schemas",
    response_model=None,
    responses=answer(SchemasDoc, "The flow's state schema"),
)
def get_schemas(
    request: Request, assistant_id: AssistantId, principal: Principal
) -> dict[str, Any]:
    """The flow's state schema as input, output and state schema; no config or context."""
    server_of(request).guard.require(principal, "read")
    flow = flow_of(request, assistant_id)
    state = state_schema(flow.state)
    return {
        "graph_id": flow.name,
        "input_schema": state,
        "output_schema": state,
        "state_schema": state,
        "config_schema": None,
        "context_schema": None,
    }


@router.get(
    "/assistants/{assistant_id}/graph",
    response_model=None,
    responses=answer(GraphDoc, "The flow's states and routes"),
)
def get_graph(
    request: Request,
    assistant_id: AssistantId,
    principal: Principal,
    xray: Annotated[str | None, Query(max_length=10)] = None,
) -> dict[str, Any]:
    """The flow's states and routes as LangGraph's drawable graph: each node and gate (a gate
    carries its input's JSON schema), ``__start__`` and ``__end__``; an edge out of a route
    table is ``conditional``."""
    server_of(request).guard.require(principal, "read")
    flow = flow_of(request, assistant_id)
    nodes: list[dict[str, Any]] = [{"id": _START, "type": "schema", "data": _START}]
    for state in flow.states:
        if state == _END:
            continue
        data: dict[str, Any] = {"id": [state], "name": state, "kind": flow.kind_of(state)}
        gate = gate_spec(flow, state) if flow.kind_of(state) == "gate" else None
        if gate is not None:
            data["input_schema"] = input_schema(gate.input)
        nodes.append({"id": state, "type": "runnable", "data": data})
    nodes.append({"id": _END, "type": "schema", "data": _END})
    edges = [{"source": _START, "target": flow.start, "conditional": False}]
    for source, target in sorted(flow.machine.edges):
        edges.append(
            {
                "source": source,
                "target": target,
                "conditional": flow.route_table(source) is not None,
            }
        )
    return {"nodes": nodes, "edges": edges}
