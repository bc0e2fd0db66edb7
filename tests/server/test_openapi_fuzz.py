"""schemathesis over the OpenAPI document: generated requests, valid and not, never get a 5xx,
and every response matches what the document says (status, media type, body schema).

Bounded: a few dozen examples per operation, well under a minute. The events stream is left
out (a stream of a real thread never ends); tests/server/test_events.py covers it.
"""

from __future__ import annotations

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from serve_common import AUTH, TOKEN
from serve_flows import chat, desk, owned

from flowkit.examples.review import flow as review
from flowkit.server import create_app
from flowkit.stores import MemoryStore

app = create_app([review, chat, owned, desk()], store=MemoryStore(), token=TOKEN)
with TestClient(app) as _client:  # threads for the generated ids to meet now and then
    for thread_id in ("doc", "a"):
        _client.post("/flows/review/threads", json={"thread_id": thread_id}, headers=AUTH)
    # a subflow retried: its history's checkpoints have attempts and paths (`research#2/...`)
    _client.post("/flows/desk/threads", json={"thread_id": "0"}, headers=AUTH)

schema = schemathesis.openapi.from_asgi("/openapi.json", app).exclude(
    path="/threads/{thread_id}/events"
)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_the_api_keeps_to_its_openapi_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=AUTH, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_without_a_token_every_operation_keeps_to_it_too(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)
