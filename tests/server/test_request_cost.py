"""What one request costs the server beyond its run (issue 25: a start+resume pair cost ~5 ms
more than a plain FastAPI app doing the same file syncs), and that answers built for speed
still say exactly what the document promises.

Costs are counted (reads of the thread, schemas built), never timed.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, start

from flowkit.examples.review import ReviewInput
from flowkit.server._models import ThreadState
from flowkit.stores import Store


@pytest.fixture
def loads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads ``store.load`` is asked for, in order (the server reads through it)."""
    asked: list[str] = []
    real = store.load

    def load(thread_id: str, *, after: int | None = None) -> Any:
        asked.append(thread_id)
        return real(thread_id, after=after)

    monkeypatch.setattr(store, "load", load)
    return asked


def test_answering_a_thread_reads_it_no_more_than_the_run_itself_does(
    client: TestClient, loads: list[str]
) -> None:
    start(client, "doc")
    start(client, "other")
    del loads[:]
    answered = client.post("/threads/doc/resume", json={"input": {"approved": True}}, headers=AUTH)
    assert answered.status_code == 200 and answered.json()["status"] == "done"
    over_http, loads[:] = list(loads), []
    server: Any = client.app.state.flowkit  # type: ignore[attr-defined]
    server.served.runners["review"].resume("other", {"approved": True})
    # Finding the thread's flow and reading its state before the run read it twice more.
    assert over_http == ["doc"] * len(loads) and loads == ["other"] * len(loads)


def test_a_gates_input_schema_is_built_once_per_model(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[type[BaseModel]] = []
    real = ReviewInput.model_json_schema

    def counted(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        built.append(cls)
        return real(*args, **kwargs)

    monkeypatch.setattr(ReviewInput, "model_json_schema", classmethod(counted))
    shown = [start(client, f"doc-{n}")["gates"][0]["input_schema"] for n in range(3)]
    assert len(built) <= 1  # once per process (none if an earlier test built it)
    assert shown[0] == shown[1] == shown[2] == real()
    shown[0]["required"].append("changed")  # each answer has a copy of its own
    assert start(client, "doc-3")["gates"][0]["input_schema"] == real()


def test_every_thread_answer_is_exactly_a_thread_state(client: TestClient) -> None:
    def exact(body: dict[str, Any]) -> dict[str, Any]:
        assert ThreadState.model_validate(body).model_dump(mode="json") == body
        return body

    made = client.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH)
    assert made.status_code == 201
    assert exact(made.json())["status"] == "waiting"
    assert exact(client.get("/threads/doc", headers=AUTH).json())["gates"]
    forked = client.post("/threads/doc/fork", json={"new_thread_id": "copy"}, headers=AUTH)
    assert forked.status_code == 201 and exact(forked.json())["thread_id"] == "copy"
    patched = client.patch(
        "/threads/copy/state", json={"values": {"topic": "other"}, "reason": "r"}, headers=AUTH
    )
    assert patched.status_code == 200 and exact(patched.json())["state"]["topic"] == "other"
    done = client.post("/threads/doc/resume", json={"input": {"approved": True}}, headers=AUTH)
    assert done.status_code == 200 and exact(done.json())["status"] == "done"
    for response in (made, forked, patched, done):
        assert response.headers["content-type"] == "application/json"
