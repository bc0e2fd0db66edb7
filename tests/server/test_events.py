"""Server-sent events: ids from the journal, resuming with Last-Event-ID, critical first,
live events only for principals, and writes from elsewhere found by the poll."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from _live import SSE, ThreadServer, read_events
from serve_common import AUTH, FLOWS, TOKEN

from flowkit import Runner
from flowkit.server import create_app
from flowkit.stores import JsonFileStore, Store


@pytest.fixture
def live(store: Store) -> Iterator[ThreadServer]:
    app = create_app(FLOWS, store=store, token=TOKEN, open_reads=True, hub_options={"poll_s": 0.2})
    with ThreadServer(app) as server:
        yield server


def post(live: ThreadServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(live.base + path, json=body, headers=AUTH, timeout=30)


def collect(
    live: ThreadServer,
    thread: str,
    *,
    until: str = "done",
    headers: dict[str, str] | None = None,
    started: threading.Event | None = None,
    stop_after: int | None = None,
    then: str | Callable[[SSE], bool] | None = None,
) -> list[SSE]:
    """Read the thread's events until a checkpoint with status ``until`` (or a count);
    ``then``: and until a live event of that name (or matching that test) has come too."""
    found: list[SSE] = []
    ended = False
    seen_then = then is None
    with httpx.stream(
        "GET",
        f"{live.base}/threads/{thread}/events",
        headers=AUTH if headers is None else headers,
        timeout=30,
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in read_events(response):
            found.append(event)
            if event.event == "ready" and started is not None:
                started.set()
            if event.event == "deleted":
                break
            if then is not None and (then(event) if callable(then) else event.event == then):
                seen_then = True  # live events may come just before or after the checkpoint
            if event.event == "checkpoint" and event.data["status"] == until:
                ended = True
                if then is None:
                    break
            if ended and seen_then:
                break
            if stop_after is not None and len(found) >= stop_after:
                break
    return found


def in_background(target: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(target(*args, **kwargs)), daemon=True)
    thread.start()
    return thread, out


def checkpoints(events: list[SSE]) -> list[int]:
    return [e.data["version"] for e in events if e.event == "checkpoint"]


def test_a_client_gets_ready_then_each_checkpoint_with_its_version_as_id(
    live: ThreadServer,
) -> None:
    post(live, "/flows/counter/threads", {"thread_id": "c", "input": {"steps": 5}})
    started = threading.Event()
    reader, out = in_background(collect, live, "c", started=started, then="node_finished")
    assert started.wait(30)
    assert post(live, "/threads/c/resume", {"input": {"go": True}}).status_code == 200
    reader.join(30)
    events = out[0]
    ready = events[0]
    assert (ready.event, ready.id, ready.data["version"]) == ("ready", "0", 0)
    marks = [e for e in events if e.event == "checkpoint"]
    assert [m.id for m in marks] == [str(v) for v in range(1, 7)]
    assert [m.data["kind"] for m in marks] == ["input"] + ["step"] * 5
    assert marks[-1].data["status"] == "done" and marks[-1].data["priority"] == "critical"
    assert marks[2].data["changed"] == ["count"] and marks[2].data["priority"] == "progress"
    live_events = [e for e in events if e.event in ("node_started", "node_finished")]
    assert live_events, "a principal sees nodes start and finish"
    for event in live_events:  # ids: the version they followed, then a counter
        version, _, counter = (event.id or "").partition(".")
        assert version.isdigit() and counter.isdigit()


def test_reconnecting_with_last_event_id_gets_what_was_missed_from_the_journal(
    live: ThreadServer,
) -> None:
    post(live, "/flows/review/threads", {"thread_id": "d"})
    first = collect(live, "d", stop_after=1)  # ready at version 1
    last_id = first[-1].id
    post(live, "/threads/d/resume", {"input": {"approved": False, "feedback": "more"}})
    post(live, "/threads/d/resume", {"input": {"approved": True}})
    headers = {**AUTH, "Last-Event-ID": str(last_id)}
    again = collect(live, "d", headers=headers)
    assert checkpoints(again) == [2, 3, 4, 5]  # input, draft, input, publish: none twice
    by_query = httpx.stream(
        "GET", f"{live.base}/threads/d/events?last_event_id=3.7", headers=AUTH, timeout=30
    )
    with by_query as response:
        events = []
        for event in read_events(response):
            events.append(event)
            if event.event == "checkpoint" and event.data["status"] == "done":
                break
    assert checkpoints(events) == [4, 5]


def follow(live: ThreadServer, thread: str, started: threading.Event | None = None) -> list[SSE]:
    """``collect`` as a browser's EventSource reads: a stream that ends before the thread is
    done (a client dropped for lagging) is read again from its Last-Event-ID."""
    found: list[SSE] = []
    headers = dict(AUTH)
    for _ in range(50):
        events = collect(live, thread, headers=headers, started=started)
        found += events
        if any(e.event == "checkpoint" and e.data["status"] == "done" for e in events):
            return found
        assert events[-1].event == "lagging", events[-1]
        headers["Last-Event-ID"] = str(events[-1].id)
    raise AssertionError("the thread was never followed to its end")


def test_a_subscriber_behind_the_ring_reads_the_store(store: Store) -> None:
    app = create_app(FLOWS, store=store, token=TOKEN, hub_options={"ring_size": 4})
    with ThreadServer(app) as live:
        post(live, "/flows/counter/threads", {"thread_id": "c", "input": {"steps": 40}})
        started = threading.Event()
        reader, out = in_background(follow, live, "c", started=started)
        assert started.wait(30)
        post(live, "/threads/c/resume", {"input": {"go": True}})
        reader.join(30)
        assert checkpoints(out[0]) == list(range(1, 42))  # dropped or not: each once, in order
        late = collect(live, "c", headers={**AUTH, "Last-Event-ID": "0"})
        assert checkpoints(late) == list(range(1, 42))


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({**AUTH, "Last-Event-ID": "yesterday"}, 400, "invalid_event_id"),
        ({"Authorization": "Bearer wrong"}, 401, "unauthorized"),
    ],
)
def test_events_refusals(
    live: ThreadServer, headers: dict[str, str], status: int, code: str
) -> None:
    post(live, "/flows/review/threads", {"thread_id": "d"})
    response = httpx.get(f"{live.base}/threads/d/events", headers=headers, timeout=30)
    assert (response.status_code, response.json()["code"]) == (status, code)
    missing = httpx.get(f"{live.base}/threads/nope/events", headers=AUTH, timeout=30)
    assert (missing.status_code, missing.json()["code"]) == (404, "thread_not_found")


def test_deleting_the_thread_ends_the_stream(live: ThreadServer) -> None:
    post(live, "/flows/review/threads", {"thread_id": "d"})
    started = threading.Event()
    reader, out = in_background(collect, live, "d", started=started)
    assert started.wait(30)
    assert httpx.delete(f"{live.base}/threads/d", headers=AUTH, timeout=30).status_code == 204
    reader.join(30)
    assert out[0][-1].event == "deleted"


def test_anonymous_readers_get_no_emitted_values_principals_do(live: ThreadServer) -> None:
    post(live, "/flows/chat/threads", {"thread_id": "talk"})
    seen: dict[str, list[SSE]] = {}
    readers = []

    def message(event: SSE) -> bool:
        return event.event == "custom" and event.data["value"].get("type") == "message"

    for who, headers, then in (("anonymous", {}, "node_finished"), ("principal", AUTH, message)):
        started = threading.Event()
        reader, out = in_background(
            collect, live, "talk", until="waiting", headers=headers, started=started, then=then
        )
        assert started.wait(30)
        readers.append((who, reader, out))
    post(live, "/threads/talk/resume", {"input": {"text": "hello"}})
    for who, reader, out in readers:
        reader.join(30)
        seen[who] = out[0]
    customs = [e.data["value"] for e in seen["principal"] if e.event == "custom"]
    assert {"type": "message", "speaker": "LUMINA", "text": "you said: hello"} in customs
    assert not [e for e in seen["anonymous"] if e.event in ("custom", "token")]
    assert checkpoints(seen["anonymous"]) == checkpoints(seen["principal"]) == [1, 2]


def test_writes_made_elsewhere_arrive_through_the_poll(live: ThreadServer, store: Store) -> None:
    if isinstance(store, JsonFileStore):  # another process would open its own store object
        store = JsonFileStore(store.root, fsync=False)
    post(live, "/flows/review/threads", {"thread_id": "d"})
    started = threading.Event()
    reader, out = in_background(collect, live, "d", started=started)
    assert started.wait(30)
    from flowkit.examples.review import flow

    Runner(flow, store=store).resume("d", {"approved": True})  # not through the server
    reader.join(30)
    assert checkpoints(out[0]) == [2, 3]
