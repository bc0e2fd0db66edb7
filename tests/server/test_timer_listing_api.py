"""``GET /timers``: the threads whose timer is due by a time (a gate's deadline, a node's
wake-up), earliest first, a page at a time from the store's timer index; each says where the
timer is and when it is due. A thread that moved on is not listed, private threads stay their
starter's, and bad query values are 4xx problems."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, problem

from flowkit import END, Context, Flow, Gate, Subflow, node
from flowkit.stores import JsonFileStore, Store

NOW = datetime.now(UTC).replace(microsecond=0)


class Reminder(BaseModel):
    remind_at: datetime | None = None
    started_by: str = ""
    chased: bool = False
    ok: bool = False


class Answer(BaseModel):
    ok: bool = True


def _chase(state: Reminder) -> dict[str, Any]:
    return {"chased": True}


def _reminders(name: str) -> Flow:
    """A gate whose deadline the state decides (in the past, to be due at once)."""
    return Flow(
        name=name,
        state=Reminder,
        start="wait",
        nodes={"chase": _chase},
        gates={"wait": Gate(Answer, deadline=lambda s: s.remind_at, on_timeout="chase")},
        routes={"wait": END, "chase": END},
    )


@node(writes=["chased"])
def nap(state: Reminder, ctx: Context) -> None:
    assert state.remind_at is not None
    ctx.sleep_until(state.remind_at)


reminders, secret = _reminders("reminders"), _reminders("secret")
naps = Flow(name="naps", state=Reminder, start="nap", nodes={"nap": nap}, routes={"nap": END})
nested = Flow(
    name="nested",
    state=Reminder,
    start="sub",
    nodes={"sub": Subflow(_reminders("inner"), writes=["chased", "ok"])},
    routes={"sub": END},
)
PEOPLE = {"sam-token-0123456789abcdef": "sam", "sue-token-0123456789abcdef": "sue"}


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {who}-token-0123456789abcdef"}


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    # No timer loop: the due timers stay due for the listing to show.
    return make_client(flows=[reminders, naps, secret, nested], timer_poll_s=None)


def begin(
    client: TestClient, flow: str, thread_id: str, at: timedelta | None, who: dict[str, str] = AUTH
) -> None:
    value = {"remind_at": None if at is None else (NOW + at).isoformat()}
    made = client.post(
        f"/flows/{flow}/threads", json={"thread_id": thread_id, "input": value}, headers=who
    )
    assert made.status_code == 201, made.text
    assert made.json()["status"] == "waiting"


def timers(client: TestClient, who: dict[str, str] = AUTH, **query: Any) -> dict[str, Any]:
    got = client.get("/timers", params=query, headers=who)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [t["thread_id"] for t in body["timers"]]


def test_due_timers_are_listed_earliest_first_with_where_and_when(client: TestClient) -> None:
    begin(client, "reminders", "late", -timedelta(hours=1))
    begin(client, "reminders", "early", -timedelta(hours=2))
    begin(client, "reminders", "later", timedelta(days=1))
    begin(client, "reminders", "never", None)
    begin(client, "naps", "asleep", -timedelta(minutes=30))
    body = timers(client)  # due by now (the default)
    assert ids(body) == ["early", "late", "asleep"] and body["next_cursor"] is None
    first, _, sleeping = body["timers"]
    assert first == {
        "thread_id": "early",
        "flow": "reminders",
        "kind": "deadline",
        "at": "wait",
        "node": "wait",
        "due": first["due"],
        "version": 0,
    }
    assert datetime.fromisoformat(first["due"]) == NOW - timedelta(hours=2)
    assert (sleeping["kind"], sleeping["at"], sleeping["flow"]) == ("wake", "nap", "naps")
    soon = (NOW + timedelta(days=2)).isoformat()
    assert ids(timers(client, until=soon)) == ["early", "late", "asleep", "later"]
    assert ids(timers(client, until=soon, flow="naps")) == ["asleep"]
    assert datetime.fromisoformat(timers(client, until=soon)["until"]) == NOW + timedelta(days=2)


def test_a_gates_timer_inside_a_subflow_is_named_by_its_path(client: TestClient) -> None:
    begin(client, "nested", "deep", -timedelta(minutes=5))
    (listed,) = timers(client)["timers"]
    assert (listed["at"], listed["node"], listed["kind"]) == ("sub/wait", "sub", "deadline")


def test_pages_follow_the_cursor_and_an_answered_thread_leaves_the_list(
    client: TestClient,
) -> None:
    for index in range(5):
        begin(client, "reminders", f"r{index}", -timedelta(minutes=50 - index))
    seen, cursor = [], None
    while True:
        page = timers(client, limit=2, **({"cursor": cursor} if cursor else {}))
        assert len(page["timers"]) <= 2 and page["limit"] == 2
        seen += ids(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["r0", "r1", "r2", "r3", "r4"]
    answered = client.post("/threads/r0/resume", json={"input": {"ok": True}}, headers=AUTH)
    assert answered.json()["status"] == "done"
    assert ids(timers(client)) == ["r1", "r2", "r3", "r4"]


def test_a_stale_index_entry_is_not_listed(client: TestClient, store: Store) -> None:
    if not isinstance(store, JsonFileStore):
        pytest.skip("a stale entry is a file a crash left in the JSON-file store's index")
    begin(client, "reminders", "moved", -timedelta(hours=1))
    client.post("/threads/moved/resume", json={"input": {"ok": True}}, headers=AUTH)
    # As if a crash came after a timer's file and before the record that set it.
    due = int((NOW - timedelta(hours=3)).timestamp() * 1000)
    (store.root / "timers" / f"{due}~moved").write_text("reminders")
    assert timers(client)["timers"] == []


def test_private_threads_are_listed_for_their_starter_only(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(
        flows=[reminders, secret], timer_poll_s=None, authenticate=PEOPLE.get,
        private_flows=["secret"],
    )  # fmt: skip
    begin(client, "secret", "sams", -timedelta(hours=1), bearer("sam"))
    begin(client, "secret", "sues", -timedelta(hours=2), bearer("sue"))
    begin(client, "reminders", "open", -timedelta(hours=3), bearer("sue"))
    assert ids(timers(client, bearer("sam"))) == ["open", "sams"]
    assert ids(timers(client, bearer("sue"))) == ["open", "sues"]
    assert ids(timers(client, bearer("sam"), limit=1, flow="secret")) == ["sams"]
    assert ids(timers(client)) == ["open", "sues", "sams"]  # the server's token: an admin


@pytest.mark.parametrize(
    "query",
    [
        {"until": "2027-01-01T00:00:00"},  # no time zone: any of 24 hours
        {"until": "soon"},
        {"until": "0.5"},  # a number is not a time here (epoch seconds read as one)
        {"until": "1795833000"},
        {"until": "2027-13-01T00:00:00Z"},
        {"limit": 0},
        {"limit": 201},
        {"limit": "ten"},
        {"flow": "f" * 201},
        {"cursor": "not a cursor"},
        {"cursor": "eyJvIjoidXBkYXRlZCIsImsiOlsxLjAsImEiXX0"},  # a thread listing's
    ],
)
def test_bad_query_values_are_422_problems(client: TestClient, query: dict[str, Any]) -> None:
    problem(client.get("/timers", params=query, headers=AUTH), 422, "invalid_request")


def test_listing_timers_needs_a_token_unless_reads_are_open(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(flows=[reminders], timer_poll_s=None)
    problem(client.get("/timers"), 401, "unauthorized")
    opened = make_client(flows=[reminders], timer_poll_s=None, open_reads=True)
    assert opened.get("/timers").json()["timers"] == []


def test_the_openapi_document_describes_the_route(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/timers"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"until", "flow", "limit", "cursor"}


@pytest.mark.parametrize("until", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
def test_the_first_and_last_times_there_are_list_what_is_due_by_then(
    client: TestClient, until: str
) -> None:
    begin(client, "reminders", "due", -timedelta(minutes=1))
    expected = [] if until.startswith("0001") else ["due"]
    assert ids(timers(client, until=until)) == expected
