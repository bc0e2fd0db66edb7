"""The LangGraph client API, driven by the official ``langgraph-sdk`` client (sync and async)
against one real ``flowkit serve`` on loopback: assistants, threads, human-in-the-loop runs,
several open pauses answered by id, background runs, streaming, state and history."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _external import require
from _live import free_port, serve_command
from serve_common import TOKEN

from flowkit.server._problems import Problem
from flowkit.server.langgraph._models import RunCreate
from flowkit.server.langgraph._registry import (
    MAX_ACTIVE,
    MAX_QUEUED,
    Registry,
    RunInfo,
    RunStatus,
)
from flowkit.server.langgraph._runs import _admit

try:
    import langgraph_sdk
    from langgraph_sdk import errors as sdk_errors
except ImportError:  # the dev extra installs it
    langgraph_sdk = None  # type: ignore[assignment]

HERE = Path(__file__).parent
TARGETS = (
    "review",
    f"{HERE / 'pause_flows.py'}:drafts",
    f"{HERE / 'pause_flows.py'}:pairs",
    f"{HERE / 'serve_flows.py'}:chat",
    f"{HERE / 'langgraph_flows.py'}:slow",
    f"{HERE / 'langgraph_flows.py'}:jobs",
    f"{HERE / 'langgraph_flows.py'}:writer",
    f"{HERE / 'langgraph_flows.py'}:two_steps",
)
#: The LLM of the served flows (``writer`` streams its answer word by word).
RULES = {"rules": [], "default": "Pick and place, then report."}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``flowkit serve`` for the module (its URL)."""
    require(langgraph_sdk is not None, "langgraph-sdk (pip install -e '.[dev]')")
    folder = tmp_path_factory.mktemp("langgraph")
    rules = folder / "llm.json"
    rules.write_text(json.dumps(RULES))
    process, served = serve_command(
        str(folder / "store"), free_port(), TOKEN, "--llm", f"scripted:{rules}", targets=TARGETS
    )
    try:
        yield served
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.fixture(scope="module", params=["/langgraph", ""], ids=["prefixed", "root"])
def url(base: str, request: pytest.FixtureRequest) -> str:
    """The client's URL: the server's plus /langgraph, or the server's own."""
    return base + str(request.param)


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[Any]:
    with langgraph_sdk.get_sync_client(url=url, api_key=TOKEN) as sync_client:
        yield sync_client


def _status_error(exc: pytest.ExceptionInfo[Any], status: int, code: str) -> dict[str, Any]:
    """The problem a refused call got (``runs.wait`` raises httpx's own error, the other
    calls the SDK's typed subclasses of it)."""
    response = exc.value.response
    body: dict[str, Any] = response.json()
    assert response.status_code == status, body
    assert response.headers["content-type"] == "application/problem+json"
    assert body["code"] == code, body
    return body


def test_assistants_are_the_served_flows(client: Any) -> None:
    found = client.assistants.search(limit=20)
    assert [a["assistant_id"] for a in found] == [
        "review", "drafts", "pairs", "chat", "slow", "jobs", "writer", "two_steps",
    ]  # fmt: skip
    assert client.assistants.search(graph_id="pairs")[0]["graph_id"] == "pairs"
    review = client.assistants.get("review")
    assert review["graph_id"] == "review" and review["description"].startswith("Draft")
    schemas = client.assistants.get_schemas("review")
    assert "topic" in schemas["state_schema"]["properties"]
    assert schemas["input_schema"] == schemas["state_schema"]
    graph = client.assistants.get_graph("review")
    ids = [n["id"] for n in graph["nodes"]]
    assert ids[0] == "__start__" and ids[-1] == "__end__" and "review" in ids
    gate = next(n for n in graph["nodes"] if n["id"] == "review")
    assert gate["data"]["input_schema"]["required"] == ["approved"]
    assert {"source": "review", "target": "publish", "conditional": True} in graph["edges"]
    with pytest.raises(sdk_errors.NotFoundError) as missing:
        client.assistants.get("nope")
    _status_error(missing, 404, "flow_not_served")


def test_threads_are_created_found_searched_patched_and_deleted(client: Any) -> None:
    tag = uuid.uuid4().hex
    made = client.threads.create(metadata={"tag": tag, "user": "ann"})
    thread_id = made["thread_id"]
    assert (made["status"], made["values"], made["interrupts"]) == ("idle", None, {})
    again = client.threads.create(thread_id=thread_id, if_exists="do_nothing")
    assert again["metadata"]["tag"] == tag
    with pytest.raises(sdk_errors.ConflictError) as twice:
        client.threads.create(thread_id=thread_id)
    _status_error(twice, 409, "thread_exists")
    assert client.threads.get(thread_id)["metadata"]["user"] == "ann"
    assert client.threads.get_state(thread_id)["values"] == {}
    assert client.threads.get_history(thread_id) == []

    other = client.threads.create(metadata={"tag": tag, "user": "bob"})
    found = client.threads.search(metadata={"tag": tag}, limit=10)
    assert {t["thread_id"] for t in found} == {thread_id, other["thread_id"]}
    assert len(client.threads.search(metadata={"tag": tag}, limit=1, offset=1)) == 1
    assert [t["thread_id"] for t in client.threads.search(metadata={"user": "bob"})] == [
        other["thread_id"]
    ]
    client.threads.update(other["thread_id"], metadata={"user": "carol"})
    assert client.threads.get(other["thread_id"])["metadata"]["user"] == "carol"

    assert client.threads.count(metadata={"tag": tag}) == 2
    assert client.assistants.count(graph_id="review") == 1
    client.threads.delete(other["thread_id"])
    with pytest.raises(sdk_errors.NotFoundError):
        client.threads.get(other["thread_id"])


def test_threads_search_sorts_most_recently_updated_first_or_as_asked(client: Any) -> None:
    """Threads created empty among those a flow ran on, by when each was updated last (a
    run updates a thread created before another); sort_by and sort_order as LangGraph's."""
    tag = {"sort_tag": uuid.uuid4().hex}
    empty = client.threads.create(metadata=tag)["thread_id"]
    ran = client.threads.create(metadata=tag)["thread_id"]
    later = client.threads.create(metadata=tag)["thread_id"]
    client.runs.wait(ran, "jobs", input={})

    def search(**order: Any) -> list[str]:
        return [t["thread_id"] for t in client.threads.search(metadata=tag, **order)]

    assert search() == [ran, later, empty]
    assert search(sort_by="updated_at", sort_order="asc") == [empty, later, ran]
    assert search(sort_order="asc") == [empty, later, ran]
    assert search(sort_by="created_at", sort_order="desc") == [later, ran, empty]
    assert search(sort_by="created_at", sort_order="asc", limit=2, offset=1) == [ran, later]
    assert search(sort_by="thread_id", sort_order="asc") == sorted([empty, ran, later])
    assert search(sort_by="status") == sorted([empty, ran, later], reverse=True)  # all idle
    ids = [t["thread_id"] for t in client.threads.search(ids=[empty, ran, later])]
    assert ids == [ran, later, empty]
    for bad in ({"sort_by": "metadata"}, {"sort_order": "up"}):
        with pytest.raises(sdk_errors.UnprocessableEntityError) as refused:
            client.threads.search(metadata=tag, **bad)
        _status_error(refused, 422, "invalid_request")


def test_a_thread_created_empty_is_started_before_its_state_is_updated_or_copied(
    client: Any,
) -> None:
    """threads.get lists it (idle); update_state and copy say to start it first (409), not
    that it does not exist; then they work."""
    thread_id = client.threads.create()["thread_id"]
    assert client.threads.get(thread_id)["status"] == "idle"
    for call in (
        lambda: client.threads.update_state(thread_id, {"topic": "seeded"}),
        lambda: client.threads.update_state(thread_id, {"approved": True}, as_node="review"),
        lambda: client.threads.copy(thread_id),
    ):
        with pytest.raises(sdk_errors.ConflictError) as refused:
            call()
        _status_error(refused, 409, "thread_not_started")
    with pytest.raises(sdk_errors.NotFoundError) as unknown:  # never created: still a 404
        client.threads.update_state(str(uuid.uuid4()), {"topic": "x"})
    _status_error(unknown, 404, "thread_not_found")
    client.runs.wait(thread_id, "review", input={"topic": "cats"})
    client.threads.update_state(thread_id, {"topic": "dogs"})
    assert (
        client.threads.get_state(client.threads.copy(thread_id)["thread_id"])["values"]["topic"]
        == "dogs"
    )


def test_human_in_the_loop_interrupt_then_command_resume(client: Any) -> None:
    thread_id = client.threads.create(graph_id="drafts")["thread_id"]
    out = client.runs.wait(thread_id, "drafts", input={"text": "Notes"})
    (interrupt,) = out["__interrupt__"]
    assert interrupt["id"] == "review"
    assert interrupt["value"]["draft"] == "Notes (written)"
    assert interrupt["value"]["api_key"] != "sk-live-abcdefghijklmnop"  # redacted, as in the API
    thread = client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert thread["interrupts"]["review"][0]["value"]["draft"] == "Notes (written)"
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["review"] and state["interrupts"][0]["id"] == "review"
    assert state["tasks"][0]["interrupts"] == state["interrupts"]

    with pytest.raises(httpx.HTTPStatusError) as bad:
        client.runs.wait(thread_id, "drafts", command={"resume": {"approved": "maybe"}})
    _status_error(bad, 422, "invalid_gate_input")
    with pytest.raises(httpx.HTTPStatusError) as not_resume:
        client.runs.wait(thread_id, "drafts", input={"text": "again"})
    _status_error(not_resume, 409, "not_waiting")

    # A run with nothing to answer: the pause again (LangGraph's node interrupts again).
    history = client.threads.get_history(thread_id, limit=100)
    again = client.runs.wait(thread_id, "drafts")
    assert [item["id"] for item in again["__interrupt__"]] == ["review"]
    assert client.threads.get_history(thread_id, limit=100) == history  # nothing written

    done = client.runs.wait(thread_id, "drafts", command={"resume": {"approved": True}})
    assert done["approved"] is True and "__interrupt__" not in done
    assert client.threads.get(thread_id)["status"] == "idle"
    assert client.threads.get_state(thread_id)["next"] == []


def test_a_run_without_input_on_a_finished_thread_answers_its_values(client: Any) -> None:
    """Nothing is left to run: the run succeeds with the thread's values, writing nothing
    (streamed: those values, then the end); input is still refused."""
    thread_id = client.threads.create()["thread_id"]
    done = client.runs.wait(thread_id, "jobs", input={})
    history = client.threads.get_history(thread_id, limit=100)
    assert client.runs.wait(thread_id, "jobs") == done
    assert client.runs.list(thread_id, limit=1)[0]["status"] == "success"
    parts = list(client.runs.stream(thread_id, "jobs", stream_mode=["values", "updates"]))
    assert [p.event for p in parts] == ["metadata", "values", "end"]
    assert parts[1].data == done and parts[-1].data["status"] == "success"
    assert client.threads.get_history(thread_id, limit=100) == history  # nothing written
    assert client.threads.get(thread_id)["status"] == "idle"
    with pytest.raises(httpx.HTTPStatusError) as again:
        client.runs.wait(thread_id, "jobs", input={"fail": False})
    _status_error(again, 409, "not_waiting")


def test_several_open_pauses_are_answered_by_interrupt_id(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    out = client.runs.wait(thread_id, "pairs")
    assert out["__interrupt__"] == [
        {"value": {"clause": "7.2"}, "id": "legal"}, {"value": None, "id": "tech"},
    ]  # fmt: skip
    assert set(client.threads.get(thread_id)["interrupts"]) == {"legal", "tech"}
    with pytest.raises(httpx.HTTPStatusError) as bare:  # a bare answer while two are open
        client.runs.wait(thread_id, "pairs", command={"resume": True})
    _status_error(bare, 409, "not_waiting")
    with pytest.raises(httpx.HTTPStatusError) as invalid:  # `legal` named, its answer wrong
        client.runs.wait(thread_id, "pairs", command={"resume": {"legal": True}})
    assert _status_error(invalid, 422, "invalid_gate_input")["gate"] == "legal"
    one = client.runs.wait(thread_id, "pairs", command={"resume": {"legal": {"legal": True}}})
    assert [item["id"] for item in one["__interrupt__"]] == ["tech"]
    both = client.runs.wait(thread_id, "pairs", command={"resume": {"tech": {"tech": True}}})
    assert (both["legal"], both["tech"]) == (True, True)


def test_background_runs_join_get_list_and_reject_a_second(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    with pytest.raises(sdk_errors.NotFoundError):  # a thread nobody created
        client.runs.create(str(uuid.uuid4()), "slow")
    run = client.runs.create(thread_id, "slow", metadata={"why": "test"})
    assert run["status"] in ("pending", "running") and run["metadata"] == {"why": "test"}
    assert client.threads.get(thread_id)["status"] == "busy"
    with pytest.raises(sdk_errors.ConflictError) as busy:
        client.runs.create(thread_id, "slow", multitask_strategy="reject")
    _status_error(busy, 409, "thread_busy")
    dropped = client.runs.create(thread_id, "slow", command={"resume": {"ok": False}})
    client.runs.cancel(thread_id, dropped["run_id"])  # still queued: it never runs
    assert client.runs.get(thread_id, dropped["run_id"])["status"] == "interrupted"
    queued = client.runs.create(thread_id, "slow", command={"resume": {"ok": True}})
    joined = client.runs.join(thread_id, run["run_id"])
    assert joined["__interrupt__"] == [{"value": {"steps": 1}, "id": "confirm"}]
    assert client.runs.join(thread_id, queued["run_id"]) == {"steps": 1, "ok": True}
    assert client.runs.get(thread_id, queued["run_id"])["multitask_strategy"] == "enqueue"
    assert client.runs.get(thread_id, run["run_id"])["status"] == "success"
    listed = [r["run_id"] for r in client.runs.list(thread_id)]
    assert listed == [queued["run_id"], dropped["run_id"], run["run_id"]]
    with pytest.raises(sdk_errors.ConflictError) as late:
        client.runs.cancel(thread_id, run["run_id"])
    _status_error(late, 409, "run_not_cancellable")
    with pytest.raises(httpx.HTTPStatusError) as other:  # another flow's run on this thread
        client.runs.wait(thread_id, "review")
    _status_error(other, 409, "wrong_assistant")

    client.runs.delete(thread_id, run["run_id"])
    assert [r["run_id"] for r in client.runs.list(thread_id, limit=1)] == [queued["run_id"]]
    assert len(client.runs.list(thread_id)) == 2
    stateless = client.runs.create(None, "jobs", input={})
    assert client.runs.join(stateless["thread_id"], stateless["run_id"])["result"] == "done"

    fresh = str(uuid.uuid4())
    made = client.runs.wait(fresh, "jobs", input={}, if_not_exists="create")
    assert made["result"] == "done"
    assert client.threads.get(fresh)["status"] == "idle"


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_an_unsupported_multitask_strategy_is_a_501_on_a_busy_thread_too(
    client: Any, strategy: str
) -> None:
    """Refused as the run comes, as on an idle thread: never queued to fail later, and the
    run going on is left alone."""
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.create(thread_id, "slow")
    assert client.threads.get(thread_id)["status"] == "busy"
    for extra in ({"multitask_strategy": strategy}, {"interrupt_before": ["confirm"]}):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.create(thread_id, "slow", **extra)
        _status_error(refused, 501, "langgraph_unsupported")
    assert [r["run_id"] for r in client.runs.list(thread_id)] == [first["run_id"]]
    client.runs.join(thread_id, first["run_id"])
    assert client.runs.get(thread_id, first["run_id"])["status"] == "success"


def test_stream_values_and_updates_end_at_the_interrupt(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id, "drafts", input={"text": "T"}, stream_mode=["values", "updates"]
        )
    )
    events = [part.event for part in parts]
    assert events[0] == "metadata" and events[-1] == "end"
    assert parts[0].data["run_id"] == parts[-1].data["run_id"]
    assert events[1:-1] == ["values", "updates", "values", "values", "updates"]
    assert parts[1].data["text"] == "T"
    assert parts[2].data == {"write": {"text": "T (written)"}}
    assert parts[4].data["__interrupt__"][0]["id"] == "review"
    assert parts[5].data["__interrupt__"][0]["value"]["draft"] == "T (written)"
    resumed = list(
        client.runs.stream(thread_id, "drafts", command={"resume": {"approved": True}},
                           stream_mode="updates")
    )  # fmt: skip
    assert [p.data for p in resumed[1:-1]] == [{"review": {"approved": True}}]
    assert resumed[-1].data["status"] == "success"


def test_stream_custom_events_and_a_failing_run(client: Any) -> None:
    parts = list(client.runs.stream(None, "jobs", input={}, stream_mode=["custom", "events"]))
    custom = [p.data for p in parts if p.event == "custom"]
    assert custom == [{"progress": 50}, {"progress": 100}]
    kinds = [p.data["event"] for p in parts if p.event == "events"]
    assert kinds[0] == "on_chain_start" and "on_chain_end" in kinds
    assert kinds.count("on_custom_event") == 2

    failed = list(client.runs.stream(None, "jobs", input={"fail": True}, stream_mode="values"))
    assert failed[-2].event == "error" and failed[-2].data["error"] == "RuntimeError"
    assert failed[-1].data["status"] == "error"
    with pytest.raises(Exception, match="RuntimeError"):  # the SDK raises on __error__
        client.runs.wait(None, "jobs", input={"fail": True})
    output = client.runs.wait(None, "jobs", input={"fail": True}, raise_error=False)
    assert output["__error__"]["error"] == "RuntimeError"
    thread = client.threads.search(status="error", limit=1)[0]
    assert client.threads.get_state(thread["thread_id"])["tasks"][0]["error"].startswith(
        "RuntimeError"
    )


def test_stream_messages_carry_the_llm_tokens(client: Any) -> None:
    parts = list(
        client.runs.stream(None, "writer", input={}, stream_mode=["messages-tuple", "messages"])
    )
    chunks = [p.data for p in parts if p.event == "messages"]
    assert "".join(chunk["content"] for chunk, _ in chunks) == RULES["default"]
    assert {meta["langgraph_node"] for _, meta in chunks} == {"summarise"}
    assert len({chunk["id"] for chunk, _ in chunks}) == 1
    partial = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    assert partial[-1] == RULES["default"] and partial == sorted(partial, key=len)
    (complete,) = [p.data for p in parts if p.event == "messages/complete"]
    assert complete[0]["content"] == RULES["default"]


def test_state_history_update_and_time_travel(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "review", input={"topic": "cats"})
    client.runs.wait(thread_id, "review", command={"resume": {"approved": False, "feedback": "x"}})
    latest = client.threads.get_state(thread_id)
    assert latest["values"]["revision"] == 2

    history = client.threads.get_history(thread_id, limit=10)
    versions = [int(h["checkpoint"]["checkpoint_id"]) for h in history]
    assert versions == sorted(versions, reverse=True) and versions[-1] == 0
    assert history[0]["checkpoint"] == latest["checkpoint"]
    older = client.threads.get_history(thread_id, limit=2, before=history[1]["checkpoint"])
    assert [h["checkpoint"] for h in older] == [h["checkpoint"] for h in history[2:4]]
    config = {"configurable": {"checkpoint_id": history[1]["checkpoint"]["checkpoint_id"]}}
    same = client.threads.get_history(thread_id, limit=2, before=config)  # type: ignore[arg-type]
    assert [h["checkpoint"] for h in same] == [h["checkpoint"] for h in older]
    with pytest.raises(sdk_errors.UnprocessableEntityError) as nameless:
        client.threads.get_history(thread_id, before={"configurable": {"checkpoint_id": None}})  # type: ignore[arg-type, typeddict-item]
    _status_error(nameless, 422, "invalid_request")
    first_draft = next(h for h in reversed(history) if h["values"]["revision"] == 1)
    past = client.threads.get_state(
        thread_id, checkpoint_id=first_draft["checkpoint"]["checkpoint_id"]
    )
    assert past["values"]["text"] == "cats: draft 1"

    patched = client.threads.update_state(thread_id, {"topic": "dogs"})
    assert int(patched["checkpoint"]["checkpoint_id"]) == versions[0] + 1
    assert client.threads.get_state(thread_id)["values"]["topic"] == "dogs"
    assert client.threads.get_history(thread_id, limit=1)[0]["metadata"]["source"] == "patch"
    unchanged = client.threads.update_state(thread_id, None)  # nothing to change: no record
    assert unchanged["checkpoint"] == patched["checkpoint"]
    assert len(client.threads.get_history(thread_id, limit=100)) == len(versions) + 1

    # At an earlier checkpoint: the way back to it, then the patch (two audited checkpoints).
    forked = client.threads.update_state(
        thread_id, {"topic": "owls"}, checkpoint_id=first_draft["checkpoint"]["checkpoint_id"]
    )
    assert int(forked["checkpoint"]["checkpoint_id"]) == versions[0] + 3
    state = client.threads.get_state(thread_id)
    assert (state["values"]["topic"], state["values"]["text"]) == ("owls", "cats: draft 1")
    assert state["next"] == ["review"] and state["values"]["revision"] == 1
    back, patch = client.threads.get_history(thread_id, limit=2)[::-1]
    assert [back["metadata"]["source"], patch["metadata"]["source"]] == ["patch", "patch"]
    assert back["metadata"]["reason"].startswith("update_state at checkpoint 1")
    assert back["metadata"]["actor"] == patch["metadata"]["actor"] == "admin"

    copy = client.threads.copy(thread_id)
    assert copy["thread_id"] != thread_id and copy["status"] == "interrupted"
    done = client.runs.wait(copy["thread_id"], "review", command={"resume": {"approved": True}})
    assert done["published"] is True and done["topic"] == "owls"

    # as_node: the values go in as the review gate's answer would, and the run goes on from
    # where the review routes (publish), without the gate asking again.
    other = client.threads.copy(thread_id)["thread_id"]
    client.threads.update_state(other, {"approved": True}, as_node="review")
    state = client.threads.get_state(other)
    assert state["next"] == ["publish"] and state["values"]["approved"] is True
    stood_in = client.threads.get_history(other, limit=1)[0]["metadata"]
    assert stood_in["reason"].endswith("as review")
    assert stood_in["writes"] == {"review": {"approved": True}}  # as LangGraph: {node: values}
    published = client.runs.wait(other, "review", input=None)
    assert published["published"] is True
    with pytest.raises(sdk_errors.UnprocessableEntityError) as unknown:
        client.threads.update_state(other, {"approved": False}, as_node="nowhere")
    _status_error(unknown, 422, "invalid_state")
    assert client.threads.get(thread_id)["status"] == "interrupted"  # the original waits on


def _reviewed(client: Any) -> tuple[str, list[dict[str, Any]]]:
    """A review thread drafted, approved and published; its history, newest first."""
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "review", input={"topic": "cats"})
    done = client.runs.wait(thread_id, "review", command={"resume": {"approved": True}})
    assert done["published"] is True
    return thread_id, client.threads.get_history(thread_id, limit=100)


def test_time_travel_runs_again_from_a_checkpoint_on_the_same_thread(client: Any) -> None:
    thread_id, history = _reviewed(client)
    start, paused = history[-1], history[-2]
    assert (start["next"], paused["next"]) == (["draft"], ["review"])

    again = client.runs.wait(
        thread_id, "review", input=None, checkpoint_id=start["checkpoint"]["checkpoint_id"]
    )
    assert again["__interrupt__"] == [{"value": None, "id": "review"}]  # paused again
    assert (again["text"], again["published"]) == ("cats: draft 1", False)
    assert again["messages"] == ["draft 1 written"]  # the whole state put back, not reduced
    assert client.threads.get(thread_id)["status"] == "interrupted"
    after = client.threads.get_history(thread_id, limit=100)
    assert after[-len(history) :] == history  # the old branch is kept as it was
    rewound = after[1]
    assert rewound["metadata"]["source"] == "patch" and rewound["next"] == ["draft"]
    assert rewound["metadata"]["reason"] == "time travel to checkpoint 0 (LangGraph API)"

    # From the pause, answered another way; from the start, with other values.
    other = client.runs.wait(
        thread_id,
        "review",
        command={"resume": {"approved": False, "feedback": "shorter"}},
        checkpoint_id=paused["checkpoint"]["checkpoint_id"],
    )
    assert other["text"] == "cats: draft 2 (revised: shorter)" and "__interrupt__" in other
    dogs = client.runs.wait(
        thread_id, "review", input={"topic": "dogs"}, checkpoint=start["checkpoint"]
    )
    assert dogs["text"] == "dogs: draft 1" and dogs["messages"] == ["draft 1 written"]

    # To a pause: nothing runs, the thread waits there again (streamed, too).
    parts = list(
        client.runs.stream(
            thread_id,
            "review",
            checkpoint_id=paused["checkpoint"]["checkpoint_id"],
            stream_mode=["values", "updates"],
        )
    )
    assert [p.event for p in parts] == ["metadata", "values", "updates", "end"]
    assert parts[1].data["text"] == "cats: draft 1" and parts[1].data["__interrupt__"]
    assert parts[2].data == {"__interrupt__": [{"value": None, "id": "review"}]}
    done = client.runs.wait(thread_id, "review", command={"resume": {"approved": True}})
    assert done["published"] is True and done["topic"] == "cats"


def test_time_travel_to_a_checkpoint_the_thread_lacks_is_a_problem(client: Any) -> None:
    thread_id, history = _reviewed(client)
    latest = int(history[0]["checkpoint"]["checkpoint_id"])
    with pytest.raises(httpx.HTTPStatusError) as unknown:
        client.runs.wait(thread_id, "review", checkpoint_id=str(latest + 5))
    _status_error(unknown, 404, "checkpoint_not_found")
    with pytest.raises(httpx.HTTPStatusError) as foreign:
        client.runs.wait(thread_id, "review", checkpoint_id="1ef4a9b8-e6fb-67b1")
    _status_error(foreign, 422, "invalid_request")
    with pytest.raises(sdk_errors.NotFoundError) as patched:
        client.threads.update_state(thread_id, {"topic": "x"}, checkpoint_id=str(latest + 5))
    _status_error(patched, 404, "checkpoint_not_found")
    empty = client.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as none:
        client.runs.wait(empty, "review", checkpoint_id="0")
    _status_error(none, 404, "checkpoint_not_found")
    with pytest.raises(httpx.HTTPStatusError) as not_paused:  # `resume` where none waited
        client.runs.wait(
            thread_id, "review", command={"resume": {"approved": True}}, checkpoint_id="0"
        )
    _status_error(not_paused, 409, "not_waiting")
    assert client.threads.get_history(thread_id, limit=100) == history  # nothing written


def test_time_travel_into_a_batch_is_refused_and_before_it_runs_the_batch_again(
    client: Any,
) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "pairs")
    client.runs.wait(thread_id, "pairs", command={"resume": {"legal": {"legal": True}}})
    history = client.threads.get_history(thread_id, limit=100)
    inside = next(h for h in history[1:] if len(h["interrupts"]) == 2)  # both gates open
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(thread_id, "pairs", checkpoint_id=inside["checkpoint"]["checkpoint_id"])
    assert "before that node" in _status_error(refused, 409, "run_error")["detail"]
    again = client.runs.wait(thread_id, "pairs", checkpoint_id="0")
    assert [item["id"] for item in again["__interrupt__"]] == ["legal", "tech"]


def test_the_async_client_travels_back_in_time(url: str) -> None:
    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        client = langgraph_sdk.get_client(url=url, api_key=TOKEN)
        try:
            thread = await client.threads.create()
            thread_id = thread["thread_id"]
            await client.runs.wait(thread_id, "review", input={"topic": "async"})
            await client.runs.wait(thread_id, "review", command={"resume": {"approved": True}})
            history = await client.threads.get_history(thread_id, limit=100)
            start = history[-1]["checkpoint"]["checkpoint_id"]  # named in the config here
            again = await client.runs.wait(
                thread_id, "review", config={"configurable": {"checkpoint_id": start}}
            )
            after = await client.threads.get_history(thread_id, limit=100)
        finally:
            await client.aclose()
        return again, after[-len(history) :] == history

    again, kept = asyncio.run(scenario())
    assert again["__interrupt__"][0]["id"] == "review" and again["published"] is False
    assert kept


def test_a_copy_with_a_malformed_body_is_a_422(base: str) -> None:
    key = {"X-Api-Key": TOKEN, "Content-Type": "application/json"}
    made = httpx.post(f"{base}/langgraph/runs/wait", json={"assistant_id": "jobs"}, headers=key)
    thread_id = made.headers["content-location"].split("/")[2]
    for body in (b"{not json", b"[1, 2]", b'"text"'):
        copied = httpx.post(f"{base}/langgraph/threads/{thread_id}/copy", content=body, headers=key)
        assert copied.status_code == 422, copied.text
        assert copied.headers["content-type"].startswith("application/problem+json")
    for body in (b"", b"{}"):
        copied = httpx.post(f"{base}/langgraph/threads/{thread_id}/copy", content=body, headers=key)
        assert copied.status_code == 200, copied.text


def test_the_registry_is_bounded_and_keeps_what_live_threads_need() -> None:
    """Over a bound, the oldest finished runs go first, then the thread entries least
    recently updated; a run still going, and its thread's entry, stay."""
    registry = Registry(max_runs=3, max_threads=2, max_bytes=10_000)

    def run(thread_id: str, status: RunStatus = "success") -> RunInfo:
        made = RunInfo(str(uuid.uuid4()), thread_id, "jobs", 0.0, 0.0, {}, "enqueue", status)
        registry.add_run(made)
        return made

    live = run("a", "running")
    finished = [run("b") for _ in range(4)]
    assert registry.runs_of("a") == [live]  # the oldest, but running
    assert registry.runs_of("b") == finished[:1:-1]  # the two oldest finished went
    registry.add_thread("a", {"k": 1}, "jobs")
    registry.add_thread("b", {}, "jobs")
    registry.add_thread("c", {}, "jobs")
    assert [info.thread_id for info in registry.threads()] == ["a", "c"]  # a has a live run
    registry.set_status(live, "success", {"values": "x" * 20_000})  # over the bytes
    assert registry.runs_of("a") == [] and registry.thread("a") is not None
    tagged = registry.thread("c")
    assert tagged is not None
    registry.merge_metadata(tagged, {"big": "y" * 9_000})
    assert [info.thread_id for info in registry.threads()] == ["a", "c"]
    registry.add_thread("d", {"big": "z" * 2_000}, "jobs")
    assert [info.thread_id for info in registry.threads()] == ["d"]  # over the bytes: c, a


def test_threads_count_counts_past_a_thousand(client: Any) -> None:
    """threads.count is every match, not one page of a search (it stopped at 1,000)."""
    tag = str(uuid.uuid4())
    for _ in range(1_005):
        client.threads.create(metadata={"count_tag": tag})
    assert client.threads.count(metadata={"count_tag": tag}) == 1_005


def test_runs_pending_or_running_are_bounded_per_thread_and_in_all() -> None:
    """Each queued run holds a worker until its turn: past the bound a new one is a 429,
    decided before anything about the run is read."""
    registry = Registry()
    for _ in range(MAX_QUEUED):
        registry.add_run(RunInfo(str(uuid.uuid4()), "t", "jobs", 0.0, 0.0, {}, "enqueue"))
    body = RunCreate(assistant_id="jobs")
    with pytest.raises(Problem) as full:
        _admit(None, registry, None, "t", body)  # type: ignore[arg-type]
    assert (full.value.status, full.value.code) == (429, "too_many_runs")
    registry = Registry()
    for index in range(MAX_ACTIVE):
        registry.add_run(RunInfo(str(uuid.uuid4()), f"t{index}", "jobs", 0.0, 0.0, {}, "enqueue"))
    with pytest.raises(Problem) as busy:
        _admit(None, registry, None, "another", body)  # type: ignore[arg-type]
    assert busy.value.status == 429


def test_the_token_goes_as_x_api_key_or_bearer(url: str) -> None:
    with langgraph_sdk.get_sync_client(url=url, api_key=None) as anonymous:
        with pytest.raises(sdk_errors.AuthenticationError) as refused:
            anonymous.threads.create()
        _status_error(refused, 401, "unauthorized")
    wrong = langgraph_sdk.get_sync_client(url=url, api_key="not-the-token-0123456789")
    with wrong, pytest.raises(sdk_errors.AuthenticationError):
        wrong.assistants.search()
    base = url.removesuffix("/langgraph")  # flowkit's own API takes X-Api-Key as well
    assert httpx.get(base + "/threads", headers={"X-Api-Key": TOKEN}).status_code == 200
    refused_key = httpx.get(base + "/threads", headers={"X-Api-Key": "wrong-token-0123456789"})
    assert refused_key.status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with langgraph_sdk.get_sync_client(url=url, api_key=None, headers=bearer) as by_bearer:
        assert by_bearer.threads.create()["status"] == "idle"


def test_a_run_with_command_goto_moves_the_thread_and_goes_on_from_there(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    waiting = client.runs.wait(thread_id, "review", input={"topic": "owls"})
    assert waiting["revision"] == 1  # at the review gate
    done = client.runs.wait(
        thread_id, "review", command={"goto": "publish", "update": {"approved": True}}
    )
    assert done["published"] is True and done["approved"] is True
    patch = next(
        h
        for h in client.threads.get_history(thread_id, limit=10)
        if h["metadata"]["source"] == "patch"
    )
    assert patch["metadata"]["reason"].startswith("Command(goto='publish')")
    # to a gate: the thread waits there, nothing runs
    again = client.threads.copy(thread_id)["thread_id"]
    assert client.runs.wait(again, "review", command={"goto": ["review"]})["revision"] == 1
    assert client.threads.get_state(again)["next"] == ["review"]
    for bad, status, code in (
        ({"goto": "nowhere"}, 422, "invalid_state"),
        ({"goto": ["draft", "publish"]}, 501, "langgraph_unsupported"),
        ({"goto": {"node": "draft", "arg": {}}}, 501, "langgraph_unsupported"),
        ({"goto": "publish", "resume": {"approved": True}}, 501, "langgraph_unsupported"),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.wait(again, "review", command=bad)
        _status_error(refused, status, code)
    fresh = client.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(fresh, "review", command={"goto": "publish"})
    _status_error(refused, 501, "langgraph_unsupported")


def test_what_is_not_supported_is_a_clear_501(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    for call in (
        lambda: list(client.runs.stream(thread_id, "review", stream_mode="debug")),
        lambda: client.runs.create(thread_id, "review", interrupt_before=["review"]),
        client.crons.search,
        lambda: client.store.search_items(("docs",)),
        lambda: client.assistants.create("review"),
        lambda: client.assistants.get_subgraphs("review"),
        lambda: list(client.threads.join_stream(thread_id)),
        lambda: client.threads.prune([thread_id]),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            call()
        body = _status_error(refused, 501, "langgraph_unsupported")
        assert "docs/server.md" in body["detail"] and body["title"] == "Not implemented"


def test_the_async_client_runs_a_human_in_the_loop_stream(url: str) -> None:
    async def scenario() -> tuple[list[str], dict[str, Any]]:
        client = langgraph_sdk.get_client(url=url, api_key=TOKEN)
        try:
            thread = await client.threads.create()
            seen = [
                part.event
                async for part in client.runs.stream(
                    thread["thread_id"], "review", input={"topic": "async"}, stream_mode="updates"
                )
            ]
            done = await client.runs.wait(
                thread["thread_id"], "review", command={"resume": {"approved": True}}
            )
        finally:
            await client.aclose()
        return seen, done

    started = time.perf_counter()
    seen, done = asyncio.run(scenario())
    assert seen == ["metadata", "updates", "updates", "end"]
    assert done["published"] is True and done["topic"] == "async"
    assert time.perf_counter() - started < 10


def test_at_the_root_the_sdk_gets_langgraph_and_other_clients_flowkit(base: str) -> None:
    """``GET`` and ``DELETE /threads/{id}`` are both APIs' at the root: the SDK (by its
    User-Agent) gets LangGraph's, any other client flowkit's; a client that is not the SDK (the
    JS client sends no User-Agent of its own) reaches LangGraph's other routes at the root."""
    key = {"X-Api-Key": TOKEN, "User-Agent": "node"}
    made = httpx.post(f"{base}/threads", json={"metadata": {"by": "js"}}, headers=key).json()
    thread_id = made["thread_id"]
    done = httpx.post(
        f"{base}/threads/{thread_id}/runs/wait",
        json={"assistant_id": "jobs", "input": {}},
        headers=key,
    )
    assert done.json()["result"] == "done"
    flowkit = httpx.get(f"{base}/threads/{thread_id}", headers=key).json()
    assert flowkit["flow"] == "jobs" and "metadata" not in flowkit  # flowkit's own shape
    with langgraph_sdk.get_sync_client(url=base, api_key=TOKEN) as sdk:
        assert sdk.threads.get(thread_id)["metadata"]["by"] == "js"
    prefixed = httpx.get(f"{base}/langgraph/threads/{thread_id}", headers=key).json()
    assert prefixed["metadata"]["by"] == "js"  # under the prefix, always LangGraph's
    assert httpx.get(f"{base}/flows", headers={**key, "User-Agent": "langgraph-sdk-py/0"}).json()
    joined = httpx.get(f"{base}/threads/{thread_id}/stream", headers=key)
    assert joined.json()["code"] == "langgraph_unsupported"  # at the root too
    empty = httpx.post(f"{base}/threads", json={}, headers=key).json()["thread_id"]
    unknown = httpx.delete(f"{base}/threads/{empty}", headers=key)  # flowkit has no such one
    assert unknown.json()["code"] == "thread_not_found"
    sdk_agent = {**key, "User-Agent": "langgraph-sdk-py/0.4"}
    for gone in (empty, thread_id):
        assert httpx.delete(f"{base}/threads/{gone}", headers=sdk_agent).status_code == 204
        assert httpx.get(f"{base}/threads/{gone}", headers=sdk_agent).status_code == 404


def test_a_restart_keeps_what_ran_and_forgets_what_lives_in_memory(tmp_path: Path) -> None:
    """What docs/server.md says a restart forgets: threads never run, metadata, run records;
    a thread a flow ran on comes back from its journal."""
    from fastapi.testclient import TestClient
    from langgraph_flows import jobs

    from flowkit.server import create_app
    from flowkit.stores import JsonFileStore

    key = {"X-Api-Key": TOKEN}

    def serve() -> TestClient:
        app = create_app([jobs], store=JsonFileStore(tmp_path, fsync=False), token=TOKEN)
        return TestClient(app, base_url="http://testserver/langgraph", headers=key)

    with serve() as before:
        empty = before.post("/threads", json={"metadata": {"tag": "x"}}).json()["thread_id"]
        ran = before.post("/threads", json={"metadata": {"tag": "x"}}).json()["thread_id"]
        run = before.post(f"/threads/{ran}/runs", json={"assistant_id": "jobs"}).json()
        before.get(f"/threads/{ran}/runs/{run['run_id']}/join")
    with serve() as after:
        assert after.get(f"/threads/{empty}").json()["code"] == "thread_not_found"
        thread = after.get(f"/threads/{ran}").json()
        assert thread["values"]["result"] == "done" and thread["status"] == "idle"
        assert thread["metadata"] == {"graph_id": "jobs", "assistant_id": "jobs"}
        assert after.post("/threads/search", json={"metadata": {"tag": "x"}}).json() == []
        gone = after.get(f"/threads/{ran}/runs/{run['run_id']}")
        assert gone.json()["code"] == "run_not_found"


@pytest.mark.parametrize("path", ["/langgraph/runs/wait", "/threads/search"])
def test_the_server_limits_hold_on_the_langgraph_routes(base: str, path: str) -> None:
    key = {"X-Api-Key": TOKEN, "Content-Type": "application/json"}
    large = httpx.post(base + path, content=b'{"input": "' + b"x" * 2_000_000 + b'"}', headers=key)
    assert (large.status_code, large.json()["code"]) == (413, "request_too_large")
    deep = httpx.post(base + path, content=b"[" * 100 + b"]" * 100, headers=key)
    assert (deep.status_code, deep.json()["code"]) == (422, "request_too_deep")


def _left_stream(base: str, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A new thread whose run ``body`` streams to a client that leaves after the first event;
    the thread and its runs once the run is no longer running (or 10 s have passed)."""
    key = {"X-Api-Key": TOKEN}
    thread_id = httpx.post(f"{base}/langgraph/threads", json={}, headers=key).json()["thread_id"]
    with httpx.stream(
        "POST", f"{base}/langgraph/threads/{thread_id}/runs/stream", json=body, headers=key
    ) as response:
        assert next(response.iter_lines()) == "event: metadata"
    deadline = time.monotonic() + 10
    runs: list[dict[str, Any]] = [{"status": "running"}]
    while runs[0]["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
        runs = httpx.get(f"{base}/langgraph/threads/{thread_id}/runs", headers=key).json()
    return thread_id, runs


def test_a_client_that_leaves_a_stream_stops_its_run(base: str) -> None:
    """The run ends ``interrupted`` after the step in progress: the thread is not left busy,
    its next run not queued behind one nobody reads."""
    key = {"X-Api-Key": TOKEN}
    body = {"assistant_id": "slow"}
    thread_id, runs = _left_stream(base, body)
    assert runs[0]["status"] == "interrupted"
    # The thread is free (`reject` would be a 409 while a run goes on). Where the run stopped
    # depends on when the server saw the client leave: before its step (a run without input
    # goes on to the pause) or after it (the thread waits at the pause: answer it).
    state = httpx.get(f"{base}/langgraph/threads/{thread_id}/state", headers=key).json()
    again: dict[str, Any] = {**body, "multitask_strategy": "reject"}
    if state["next"] == ["confirm"]:
        again["command"] = {"resume": {"ok": True}}
    resumed = httpx.post(f"{base}/langgraph/threads/{thread_id}/runs/wait", json=again, headers=key)
    assert resumed.status_code == 200, resumed.text
    if "command" in again:
        assert resumed.json()["ok"] is True
    else:
        assert resumed.json()["__interrupt__"][0]["id"] == "confirm"


def test_a_stream_asked_to_continue_runs_on_when_its_client_leaves(base: str) -> None:
    """on_disconnect="continue": the run goes on to its end (here the pause), not stopped."""
    key = {"X-Api-Key": TOKEN}
    thread_id, runs = _left_stream(base, {"assistant_id": "slow", "on_disconnect": "continue"})
    assert runs[0]["status"] == "success"
    state = httpx.get(f"{base}/langgraph/threads/{thread_id}/state", headers=key).json()
    assert (state["next"], state["values"]["steps"]) == (["confirm"], 1)


@pytest.mark.parametrize("waited", [False, True], ids=["at-once", "wait"])
@pytest.mark.parametrize("streamed", [False, True], ids=["background", "streamed"])
def test_a_running_run_is_cancelled_after_its_saved_step(
    client: Any, streamed: bool, waited: bool
) -> None:
    """runs.cancel on a run in progress: its node finishes (saved), no other runs; the run
    ends `interrupted` and a new run without input goes on from there. With ``wait`` the
    cancel answers once the run has stopped."""
    thread_id = client.threads.create()["thread_id"]
    kind = {"stream_mode": ["values"]} if streamed else {}
    run = client.runs.create(thread_id, "two_steps", input={}, **kind)
    deadline = time.monotonic() + 10
    while client.runs.get(thread_id, run["run_id"])["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(httpx.HTTPStatusError) as rollback:  # not undone: refused, it runs on
        client.runs.cancel(thread_id, run["run_id"], action="rollback")
    _status_error(rollback, 501, "langgraph_unsupported")
    assert client.runs.get(thread_id, run["run_id"])["status"] == "running"
    client.runs.cancel(thread_id, run["run_id"], wait=waited)
    if waited:  # stopped already: not running, the thread free
        assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
        assert client.threads.get(thread_id)["status"] != "busy"
    client.runs.join(thread_id, run["run_id"])
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    state = client.threads.get_state(thread_id)
    # Stopped before its next node: after `long` (saved), or before it when the cancel came
    # as the run took the thread.
    assert (state["values"]["done"], state["next"]) in ((["long"], ["short"]), ([], ["long"]))
    assert client.runs.wait(thread_id, "two_steps")["done"] == ["long", "short"]


def test_join_stream_follows_a_background_run(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "slow", stream_mode=["values", "updates"])
    parts = list(client.runs.join_stream(thread_id, run["run_id"]))
    events = [part.event for part in parts]
    assert events[0] == "metadata" and events[-1] == "end"
    assert parts[0].data["run_id"] == run["run_id"] and parts[-1].data["status"] == "success"
    assert {"values", "updates"} <= set(events)
    assert parts[-2].data["__interrupt__"][0]["id"] == "confirm"  # the run ends at the pause
    assert client.runs.get(thread_id, run["run_id"])["status"] == "success"

    resumed = client.runs.create(thread_id, "slow", command={"resume": {"ok": True}})
    only = list(client.runs.join_stream(thread_id, resumed["run_id"], stream_mode="updates"))
    assert [part.event for part in only] == ["metadata", "end"]  # it streams values alone
    after_first = list(client.runs.join_stream(thread_id, run["run_id"], last_event_id="0"))
    assert [part.event for part in after_first] == ["end"]  # ended: its first and last kept


def test_stream_tasks_start_and_end_each_node_run(client: Any) -> None:
    thread_id = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(thread_id, "drafts", input={"text": "T"}, stream_mode="tasks"))
    tasks = [p.data for p in parts if p.event == "tasks"]
    start, written, paused = tasks
    assert (start["name"], start["id"]) == ("write", written["id"])
    assert written["result"] == [["text", "T (written)"]] and written["error"] is None
    assert paused["name"] == "review" and paused["interrupts"][0]["id"] == "review"
    failed = list(client.runs.stream(None, "jobs", input={"fail": True}, stream_mode="tasks"))
    run, error = [p.data for p in failed if p.event == "tasks"]
    assert (run["name"], error["id"], error["error"]) == ("run", run["id"], "RuntimeError")


@pytest.mark.parametrize(
    "body",
    [
        '{"metadata": {"k": "\\ud800"}}',
        '{"metadata": {"a": NaN}}',
        '{"metadata": {"\\udfff": 1}}',
        '{"metadata": {"a": [1, Infinity]}}',
    ],
    ids=["lone surrogate", "NaN", "surrogate key", "Infinity"],
)
def test_metadata_json_cannot_give_back_is_a_422_and_nothing_is_kept(base: str, body: str) -> None:
    key = {"X-Api-Key": TOKEN, "Content-Type": "application/json"}
    made = httpx.post(f"{base}/langgraph/threads", content=body, headers=key)
    assert made.status_code == 422, made.text
    assert made.headers["content-type"].startswith("application/problem+json")
    listed = httpx.post(f"{base}/langgraph/threads/search", json={"limit": 1000}, headers=key)
    assert listed.status_code == 200, listed.text  # nothing kept that breaks a later answer
    run = '{"assistant_id": "review", "input": {"topic": "x"}, "metadata": ' + body[13:]
    answered = httpx.post(f"{base}/langgraph/runs/wait", content=run, headers=key)
    assert answered.status_code == 422, answered.text
    runs = httpx.post(f"{base}/langgraph/runs/wait", json={"assistant_id": "review"}, headers=key)
    assert runs.status_code == 200, runs.text
