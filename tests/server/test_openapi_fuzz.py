"""schemathesis over the OpenAPI document: generated requests, valid and not, never get a 5xx,
and every response matches what the document says (status, media type, body schema).

Bounded: a few dozen examples per operation, well under a minute. The events stream is left
out of the in-process runs (a stream of a real thread never ends); the last test runs the
schemathesis command over the whole document, the stream too, against `flowkit serve`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import schemathesis
from _live import free_port, serve_command
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

# The LangGraph routes at the root are those under /langgraph (the same handlers): the
# in-process runs take them once, the run against `flowkit serve` both.
schema = (
    schemathesis.openapi.from_asgi("/openapi.json", app)
    .exclude(path="/threads/{thread_id}/events")
    .exclude(tag="langgraph", path_regex="^/(?!langgraph/)")
)


def not_a_server_error_but_unsupported(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """No 5xx, but the 501 a LangGraph route answers for a feature flowkit does not serve
    (``langgraph_unsupported``: documented, and saying what to do instead)."""
    if response.status_code == 501 and response.json().get("code") == "langgraph_unsupported":
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [
    not_a_server_error_but_unsupported,
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


#: Bodies whose fields are the flow's (a start state, a gate's input, a patch): the document
#: gives their shape, the thread's own flow and gate decide what fits, and a 422 says why.
#: So are a listing's ``cursor`` (only one a listing gave is valid: ``/threads``, ``/timers``)
#: and a history page's ``before`` with ``offset`` (one way to page at a time).
_FLOW_BODIES = (
    r"^/(flows/\{flow\}/threads|threads|timers|threads/\{thread_id\}/(resume|state|history))$"
)
_CONFIG = f"""
continue-on-failure = true
max-stream-events = 1
request-timeout = 10
workers = 1

[generation]
max-examples = 15

# The LangGraph client API: bodies name an assistant (a flow), a thread and the flow's input;
# a feature flowkit does not serve is a documented 501 (`langgraph_unsupported`).
[[operations]]
include-tag = "langgraph"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "501"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409",
                                                     "422", "429", "501"]

[[operations]]
include-path-regex = '{_FLOW_BODIES}'
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409",
                                                     "422", "429"]
"""


@pytest.mark.slow
def test_schemathesis_finds_no_mismatch_against_a_real_flowkit_serve(tmp_path: Path) -> None:
    """Every operation of the served document, events included, against `flowkit serve` on
    loopback: all of schemathesis's checks and phases (coverage, fuzzing, stateful links), no
    server error and no response that differs from the document."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(_CONFIG)
    flows = Path(__file__).parent / "serve_flows.py"
    process, base = serve_command(
        str(tmp_path / "store"), free_port(), TOKEN,
        targets=("review", f"{flows}:chat", f"{flows}:owned"),
    )  # fmt: skip
    try:
        paths = httpx.get(f"{base}/openapi.json", timeout=30).json()["paths"]
        operations = sum(len(methods) for methods in paths.values())
        done = subprocess.run(
            [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(config),
             "run", f"{base}/openapi.json", "-H", f"Authorization: Bearer {TOKEN}",
             "--seed", "1", "--no-color"],
            check=False, capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert f"Tested: {operations}" in done.stdout  # the whole document, the event streams too
