"""What the review page reads: the page and its files, a thread's view, its diagram, and the
files a finished thread offers (only those a node of the flow produced)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, FLOWS, TOKEN, problem

from flowkit import END, Flow, Route, RouteTable, field, node
from flowkit.llm import ReplayLLM
from flowkit.sas.demo import FEEDBACK, REQUEST, demo_file
from flowkit.sas.workflow import flow as sas
from flowkit.server import create_app
from flowkit.server._svg import flow_svg
from flowkit.stores import JsonFileStore

SVG = "{http://www.w3.org/2000/svg}"


def test_the_page_is_static_strict_and_has_no_inline_script(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script>" not in page.text and 'src="/static/app.js"' in page.text
    assert 'src="/static/common.js"' in page.text  # its helpers, shared with the chat page
    for name in ("common.js", "app.js"):
        script = client.get(f"/static/{name}")
        assert script.headers["content-type"].startswith("text/javascript")
        assert ".innerHTML" not in script.text and "insertAdjacentHTML" not in script.text
        assert "eval(" not in script.text and "http" not in script.text.replace("http_", "")
    assert client.get("/static/app.css").status_code == 200
    problem(client.get("/static/passwd"), 404, "not_found")
    problem(client.get("/static/..%2f..%2fpyproject.toml"), 404, "not_found")


def test_views_by_kind_of_flow(client: TestClient) -> None:
    client.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH)
    assert client.get("/threads/doc/view", headers=AUTH).json() == {"kind": "generic"}
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    client.post("/threads/talk/resume", json={"input": {"text": "hi"}}, headers=AUTH)
    chat = client.get("/threads/talk/view", headers=AUTH).json()
    assert chat == {
        "kind": "chat",
        "messages": [
            {"speaker": "USER", "text": "hi"},
            {"speaker": "LUMINA", "text": "you said: hi"},
        ],
        "input_field": "text",
    }
    problem(client.get("/threads/ghost/view", headers=AUTH), 404, "thread_not_found")
    problem(client.get("/threads/doc/view"), 401, "unauthorized")


# -- the diagram -----------------------------------------------------------------------------


def test_the_diagram_is_svg_with_the_current_state_marked(client: TestClient) -> None:
    client.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH)
    response = client.get("/threads/doc/diagram.svg", headers=AUTH)
    assert response.headers["content-type"] == "image/svg+xml"
    root = ET.fromstring(response.text)
    states = {g.get("data-state"): g for g in root.iter(f"{SVG}g")}
    assert set(states) == {"draft", "review", "publish", "__end__"}
    assert states["review"].get("data-current") == "true"
    assert [s for s, g in states.items() if g.get("data-current")] == ["review"]
    assert root.find(f"{SVG}script") is None
    problem(client.get("/threads/doc/diagram.svg"), 401, "unauthorized")


class Odd(BaseModel):
    topic: str = ""


def test_names_and_conditions_are_escaped_in_the_svg() -> None:
    table = RouteTable("after", [Route(field("topic").eq("</text><script>x</script>"), END)],
                       default="b")  # fmt: skip
    flow = Flow(
        name='odd "<flow>" & co',
        state=Odd,
        start="a",
        nodes={"a": node(lambda s: None), "b": node(lambda s: None)},
        routes={"a": table, "b": END},
    )
    svg = flow_svg(flow, "a", "pending")
    root = ET.fromstring(svg)  # well-formed: nothing broke out
    assert root.find(f".//{SVG}script") is None
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert 'odd "<flow>" & co' in titles
    assert any("</text><script>x</script>" in t for t in titles)


# -- a finished sas thread: view and download ---------------------------------------------------


@pytest.fixture(scope="module")
def sas_done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    tmp = tmp_path_factory.mktemp("sas")
    store = JsonFileStore(tmp / "store", fsync=False)
    llm = ReplayLLM.from_file(demo_file("cassette.json"))
    app = create_app([*FLOWS, sas], store=store, token=TOKEN, llm={"sas": llm})
    with TestClient(app) as client:
        config = {"output_dir": str(tmp / "out"), "teaching_file": str(demo_file("teaching.yaml"))}
        body: dict[str, Any] = {"user_input": REQUEST, "config": config}
        made = client.post(
            "/flows/sas/threads", json={"thread_id": "cell", "input": body}, headers=AUTH
        )
        assert made.status_code == 201, made.text
        view = client.get("/threads/cell/view", headers=AUTH).json()
        assert (view["kind"], view["stage"], len(view["tasks"])) == ("sas", "tasks", 13)
        assert view["module_steps"] == [] and view["files"] == []
        for answer in (
            {"action": "feedback", "message": FEEDBACK},
            {"action": "approve"},
            {"action": "approve"},
        ):
            done = client.post("/threads/cell/resume", json={"input": answer}, headers=AUTH)
            assert done.status_code == 200, done.text
        assert done.json()["status"] == "done"
        yield client, tmp


def test_a_finished_sas_thread_shows_its_plan_and_offers_the_program(
    sas_done: tuple[TestClient, Path],
) -> None:
    client, tmp = sas_done
    view = client.get("/threads/cell/view", headers=AUTH).json()
    assert view["stage"] == "done" and len(view["tasks"]) == 14
    main = next(s for s in view["module_steps"] if s["task"] == "Main_Task")
    assert main["text"].startswith("1. select_robot") and main["failed"] is None
    assert [f["name"] for f in view["files"]] == ["flow.xml"]
    assert view["feedback"] == [{"stage": "tasks", "text": FEEDBACK, "task": None}]
    response = client.get("/threads/cell/files/flow.xml", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/xml")
    assert response.headers["content-disposition"] == 'attachment; filename="cell-flow.xml"'
    assert response.content == (tmp / "out" / "flow.xml").read_bytes()
    problem(client.get("/threads/cell/files/other.xml", headers=AUTH), 404, "file_not_found")
    problem(client.get("/threads/cell/files/a%20b", headers=AUTH), 422, "invalid_request")
    problem(client.get("/threads/cell/files/flow.xml"), 401, "unauthorized")


def test_a_path_patched_into_the_state_is_never_served(
    sas_done: tuple[TestClient, Path], tmp_path: Path
) -> None:
    client, _ = sas_done
    secret = tmp_path / "flow.xml"
    secret.write_text("<not-yours/>")
    forked = client.post("/threads/cell/fork", json={"new_thread_id": "cell-2"}, headers=AUTH)
    assert forked.status_code == 201
    patched = client.patch(
        "/threads/cell-2/state",
        json={"values": {"final_flow_xml_path": str(secret)}, "reason": "try"},
        headers=AUTH,
    )
    assert patched.status_code == 200, patched.text
    problem(client.get("/threads/cell-2/files/flow.xml", headers=AUTH), 404, "file_not_found")
    assert client.get("/threads/cell-2/view", headers=AUTH).json()["files"] == []
