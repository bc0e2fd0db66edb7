"""``GET /threads`` from the store's thread index: keyset pages (``cursor``/``next_cursor``),
time filters, ``offset`` kept for old clients, and ``total`` only where counting is cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from serve_common import AUTH, problem, start

from flowkit.server import Access
from flowkit.server._security import read_budget
from flowkit.stores import Store


def _page(client: TestClient, headers: dict[str, str] = AUTH, **params: Any) -> dict[str, Any]:
    response = client.get("/threads", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _every_page(client: TestClient, **params: Any) -> list[str]:
    found: list[str] = []
    cursor = None
    while True:
        page = _page(client, **params, **({"cursor": cursor} if cursor else {}))
        found += [t["thread_id"] for t in page["threads"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def test_cursors_page_through_every_thread_once_most_recent_first(client: TestClient) -> None:
    for index in range(7):
        start(client, f"t{index}")
    whole = _page(client, limit=50)
    assert whole["total"] == 7 and whole["next_cursor"] is None
    ids = [t["thread_id"] for t in whole["threads"]]
    updated = [t["updated"] for t in whole["threads"]]
    assert updated == sorted(updated, reverse=True) and sorted(ids) == [f"t{i}" for i in range(7)]
    for limit in (1, 2, 3, 7):
        assert _every_page(client, limit=limit) == ids
    first = _page(client, limit=3)
    assert (len(first["threads"]), first["total"], first["next_cursor"] is not None) == (3, 7, True)


def test_offset_still_pages_as_before(client: TestClient) -> None:
    for index in range(5):
        start(client, f"t{index}")
    ids = [t["thread_id"] for t in _page(client)["threads"]]
    page = _page(client, limit=2, offset=2)
    assert [t["thread_id"] for t in page["threads"]] == ids[2:4]
    assert (page["total"], page["offset"]) == (5, 2)
    assert _page(client, limit=2, offset=4)["next_cursor"] is None


def test_threads_updated_before_or_after_a_time_are_filtered(client: TestClient) -> None:
    for index in range(3):
        start(client, f"t{index}")
    threads = _page(client)["threads"]
    middle = sorted(t["updated"] for t in threads)[1]
    after = _page(client, updated_after=middle)
    before = _page(client, updated_before=middle)
    assert after["total"] + before["total"] == 3
    assert all(t["updated"] >= middle for t in after["threads"])
    assert all(t["updated"] < middle for t in before["threads"])


def test_a_time_filter_takes_an_iso_time_with_its_zone_too(client: TestClient) -> None:
    """The refusal of `nan` said a datetime was taken, yet every one was a 422 (found by a
    defect hunt)."""
    for index in range(3):
        start(client, f"t{index}")
    threads = _page(client)["threads"]
    middle = sorted(t["updated"] for t in threads)[1]
    as_time = datetime.fromtimestamp(middle, UTC).isoformat()
    assert (
        _page(client, updated_after=as_time)["total"]
        == _page(client, updated_after=middle)["total"]
    )
    naive = datetime.fromtimestamp(middle, UTC).replace(tzinfo=None).isoformat()
    for value in (naive, "nan", "yesterday"):
        response = client.get("/threads", params={"updated_before": value}, headers=AUTH)
        assert response.status_code == 422, value


def test_a_cursor_that_is_not_one_is_a_422(client: TestClient) -> None:
    problem(client.get("/threads", params={"cursor": "nope"}, headers=AUTH), 422, "invalid_request")
    problem(
        client.get("/threads", params={"cursor": "x" * 601}, headers=AUTH), 422, "invalid_request"
    )


def test_an_unreadable_thread_is_left_out_of_the_list_and_its_count(
    client: TestClient, store: Store
) -> None:
    from flowkit.stores import JsonFileStore

    start(client, "good")
    if isinstance(store, JsonFileStore):
        broken = store.root / "threads" / "bad" / "journal.jsonl"
        broken.parent.mkdir()
        broken.write_bytes(b"garbage\n")
        store.reindex()
    page = _page(client)
    assert [t["thread_id"] for t in page["threads"]] == ["good"] and page["total"] == 1


def mine(access: Access) -> bool:
    return access.principal is not None and (access.state or {}).get("initiator") in (
        access.principal,
        None,
    )


def test_with_an_authorization_hook_pages_hold_only_readable_threads_and_no_total(
    make_client: Callable[..., TestClient],
) -> None:
    people = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}
    client = make_client(authenticate=people.get, authorize=mine)
    alice = {"Authorization": "Bearer alice-token-0123456789"}
    bob = {"Authorization": "Bearer bob-token-0123456789ab"}
    for index in range(5):
        who = alice if index % 2 == 0 else bob
        name = "alice" if index % 2 == 0 else "bob"
        made = client.post(
            "/flows/owned/threads",
            json={"thread_id": f"q{index}", "input": {"initiator": name}},
            headers=who,
        )
        assert made.status_code == 201, made.text
    seen: list[str] = []
    cursor = None
    while True:
        page = _page(client, alice, limit=2, **({"cursor": cursor} if cursor else {}))
        assert page["total"] is None  # counting would read every thread
        seen += [t["thread_id"] for t in page["threads"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == ["q0", "q2", "q4"]


def test_a_caller_who_may_read_few_of_many_threads_gets_short_pages_never_a_whole_store_read(
    make_client: Callable[..., TestClient],
) -> None:
    """Each row costs a thread load when a hook decides: one request reads at most
    `read_budget(limit)` rows, then answers what it found with a cursor to go on from."""
    people = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}
    reads: list[str] = []

    def counted(access: Access) -> bool:
        if access.action == "read":
            reads.append(access.thread_id)
        return mine(access)

    client = make_client(authenticate=people.get, authorize=counted)
    alice = {"Authorization": "Bearer alice-token-0123456789"}
    bob = {"Authorization": "Bearer bob-token-0123456789ab"}
    for index in range(260):  # alice's thread first, so it is the last listed (newest first)
        who, name = (alice, "alice") if index == 0 else (bob, "bob")
        made = client.post(
            "/flows/owned/threads",
            json={"thread_id": f"r{index:03d}", "input": {"initiator": name}},
            headers=who,
        )
        assert made.status_code == 201, made.text
    reads.clear()
    first = _page(client, alice, limit=1)
    assert first["threads"] == [] and first["next_cursor"] is not None  # short, not the end
    assert len(reads) == read_budget(1)
    second = _page(client, alice, limit=1, cursor=first["next_cursor"])
    assert [t["thread_id"] for t in second["threads"]] == ["r000"]
    assert second["next_cursor"] is None
