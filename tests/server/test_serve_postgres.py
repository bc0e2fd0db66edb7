"""``flowkit serve --store URL``: threads served from PostgreSQL, and the steps other processes
commit (a ``flowkit worker``) reach the event streams as the database's ``EventFeed`` reports
them; the URL's password is never printed."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from _live import free_port, read_events, serve_command
from _pg import require_postgres, scratch_database

from flowkit import Runner
from flowkit.examples.review import flow as review
from flowkit.stores.postgres import PostgresStore

PASSWORD = "serve-s3cret"
TOKEN = "serve-token-0123456789abcdef"


@pytest.fixture
def database() -> Iterator[str]:
    require_postgres()
    with scratch_database(password=PASSWORD, migrated=True) as url:
        yield url


class Heard:
    """Stands in for the hub: the threads it was told changed."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.arrived = threading.Event()

    def changed(self, thread_id: str) -> None:
        self.threads.append(thread_id)
        self.arrived.set()


def test_serving_from_postgresql_hears_of_each_commit_made_after_it_began(database: str) -> None:
    from flowkit.cli.serve import _following

    heard = Heard()
    with PostgresStore(database) as store:
        runner = Runner(review, store=store)
        runner.start("before")
        with _following(database, heard.changed):
            runner.start("after")  # the store object of another process, as far as it knows
            assert heard.arrived.wait(30), "no event of the new thread"
        while_following = list(heard.threads)
        runner.resume("after", {"approved": True})  # after it stopped: not reported
    assert heard.threads == while_following
    assert "after" in while_following
    # "before" was committed before following began. It is heard as well only when some
    # transaction anywhere on the server was open at that moment (another test process, a
    # worker): the feed never moves past the oldest open transaction, and hearing of a
    # thread once more only makes the hub read it again.
    assert set(while_following) <= {"before", "after"}


def test_serving_from_a_folder_follows_nothing(tmp_path: object) -> None:
    from flowkit.cli.serve import _following

    heard = Heard()
    with _following(str(tmp_path), heard.changed):
        pass
    assert heard.threads == []


@pytest.mark.slow
def test_a_browser_sees_the_steps_another_process_commits(database: str) -> None:
    with PostgresStore(database) as store:
        Runner(review, store=store).start("doc-1")
        process, base = serve_command(database, free_port(), TOKEN, "--open-reads")
        try:
            shown = httpx.get(f"{base}/threads/doc-1", timeout=30)
            assert (shown.status_code, shown.json()["status"]) == (200, "waiting")
            seen = []
            with httpx.stream("GET", f"{base}/threads/doc-1/events", timeout=60) as events:
                for event in read_events(events):
                    seen.append((event.event, event.data.get("status")))
                    if event.event == "ready":
                        # Another process answers the gate: the server runs nothing itself.
                        Runner(review, store=store).resume("doc-1", {"approved": True})
                    if event.data.get("status") == "done":
                        break
        finally:
            process.terminate()
            out, err = process.communicate(timeout=30)
    assert seen[0] == ("ready", "waiting")
    assert seen[-2:] == [("checkpoint", "pending"), ("checkpoint", "done")]
    hidden = database.replace(PASSWORD, "***")
    assert f"serving review from store {hidden} on {base}/" in out
    assert PASSWORD not in out + err


def test_a_listing_bound_past_any_date_answers_as_the_json_store_does(database: str) -> None:
    from fastapi.testclient import TestClient

    from flowkit.server import create_app

    with PostgresStore(database) as store:
        Runner(review, store=store).start("listed")
        client = TestClient(create_app([review], store=store, token=TOKEN))
        auth = {"Authorization": f"Bearer {TOKEN}"}
        for query, expected in [
            ("updated_before=1e300", ["listed"]),
            ("updated_after=-1e300", ["listed"]),
            ("updated_after=99999999999999999999999", []),
            ("updated_before=-1e300", []),
        ]:
            answer = client.get(f"/threads?{query}", headers=auth)
            assert answer.status_code == 200, (query, answer.text)
            assert [t["thread_id"] for t in answer.json()["threads"]] == expected, query
