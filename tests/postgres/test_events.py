"""Events across processes: what runners announce after each commit, read back by any process
in cursor order; a late commit is never skipped; a reconnecting subscriber misses nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Event, NodeStarted, Runner
from flowkit.errors import StoreError
from flowkit.runtime import Broadcaster
from flowkit.stores.postgres import EventCursor, EventFeed, PostgresStore
from flowkit.workers import Worker

from ._procs import query, wait_for
from .flows import STEPS
from .subscriber import describe

SUBSCRIBER = Path(__file__).with_name("subscriber.py")


def _shape(event: Event) -> tuple[Any, ...]:
    return (
        event.kind,
        event.thread_id,
        getattr(event, "node", None),
        getattr(event, "version", None),
    )


def _drain(feed: EventFeed) -> list[Any]:
    found: list[Any] = []
    while True:
        items, more = feed.read()
        found += items
        if not items and not more:
            return found


def test_the_feed_gives_what_the_runner_announced_after_each_commit(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    runner = Runner(STEPS, store=open_pg())
    seen: list[Event] = []
    runner.subscribe(seen.append)
    runner.start("a", {"seed": 1})
    runner.update_state("a", {"seed": 2}, reason="fix")
    runner.resume("a", {"by": "ann"})
    announced = [_shape(e) for e in seen if not isinstance(e, NodeStarted)]
    with EventFeed(url, schema=schema, flows=[STEPS]) as feed:
        delivered = _drain(feed)
    assert [_shape(item.event) for item in delivered] == announced
    cursors = [item.cursor for item in delivered]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    assert delivered[-1].event.kind == "completed"


def test_a_reader_with_a_cursor_gets_only_what_came_after_it(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    runner = Runner(STEPS, store=open_pg())
    runner.start("a", {"seed": 1})
    with EventFeed(url, schema=schema) as feed:
        first = _drain(feed)
    runner.resume("a", {"by": "ann"})
    middle = first[len(first) // 2]
    with EventFeed(url, schema=schema, after=str(middle.cursor)) as again:
        rest = _drain(again)
    with EventFeed(url, schema=schema) as whole:
        everything = _drain(whole)
    assert everything[len(first) // 2 + 1 :] == rest
    assert EventCursor.parse(str(middle.cursor)) == middle.cursor


def test_a_bad_cursor_is_refused_with_the_form_it_takes(pg: tuple[str, str]) -> None:
    url, schema = pg
    with pytest.raises(StoreError, match="xid:seq:offset"):
        EventFeed(url, schema=schema, after="yesterday")


def test_an_older_transaction_committing_late_is_delivered_first_not_skipped(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    import psycopg

    url, schema = pg
    runner = Runner(STEPS, store=open_pg())
    body = b'{"kind":"patch","node":"update_state","next":"work","status":"pending","changed":[]}'
    with psycopg.connect(url) as slow, EventFeed(url, schema=schema) as feed:
        slow.execute("SELECT pg_current_xact_id()")  # holds an older transaction id, open
        runner.start("a", {"seed": 1})  # newer transactions commit first
        items, more = feed.read()
        assert items == [] and more, "nothing may pass the oldest open transaction"
        slow.execute(
            f"INSERT INTO {schema}.events (thread_id, version, body) VALUES ('late', 7, %s)",
            (body,),
        )
        slow.commit()
        delivered = _drain(feed)
    assert delivered[0].event.thread_id == "late"
    assert {item.event.thread_id for item in delivered[1:]} == {"a"}


def test_the_broadcaster_runs_on_top_of_the_feed_unchanged(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    store = open_pg()
    broadcaster = Broadcaster(auto_open=True)
    # Open before the run: the feed's reader thread may deliver the first event after `get`
    # asks for it, and `get` on a queue never opened refuses rather than waits.
    broadcaster.open("b")
    stop = threading.Event()
    with EventFeed(url, schema=schema, flows=[STEPS], poll_s=0.1) as feed:
        broadcaster.attach(feed)
        reader = threading.Thread(target=feed.run, args=(stop,))
        reader.start()
        try:
            Runner(STEPS, store=store).submit("b", {"seed": 3})
            Worker(STEPS, store=store).run(until_idle=True)
            envelope = broadcaster.get("b", timeout=30)
            kinds = [envelope.event.kind]
            while kinds[-1] != "waiting":
                kinds.append(broadcaster.get("b", timeout=30).event.kind)
        finally:
            stop.set()
            reader.join()
    assert kinds[-1] == "waiting" and "state_changed" in kinds


def test_a_failing_subscriber_is_logged_and_the_others_still_get_every_event(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    Runner(STEPS, store=open_pg()).start("a", {"seed": 1})
    got: list[Event] = []
    stop = threading.Event()

    def broken(event: Event) -> None:
        raise RuntimeError("ui down")

    def keep(event: Event) -> None:
        got.append(event)
        if event.kind == "waiting":
            stop.set()

    with EventFeed(url, schema=schema) as feed, capture_logs() as logs:
        feed.subscribe(broken)
        unsubscribe = feed.subscribe(keep)
        feed.run(stop)
        unsubscribe()
        unsubscribe()
    assert got[-1].kind == "waiting" and len(got) == 21
    assert {e["event"] for e in logs} == {"subscriber_failed"}


def _lines(path: Path) -> list[str]:
    data = path.read_bytes() if path.exists() else b""
    return data.decode().split("\n")[:-1]  # a torn last line (no newline) is not an event


def _reconnect(url: str, schema: str, out: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start a subscriber after the last whole line of ``out`` (a torn one is cut off)."""
    kept = _lines(out)
    out.write_text("".join(f"{line}\n" for line in kept))
    after = [kept[-1].split("\t")[0]] if kept else []
    command = [sys.executable, str(SUBSCRIBER), url, schema, str(out), *after]
    return subprocess.Popen(command), len(kept)


@pytest.mark.slow
def test_a_subscriber_killed_and_reconnected_mid_run_gets_every_event_once_in_order(
    pg: tuple[str, str],
    open_pg: Callable[..., PostgresStore],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from . import flows

    monkeypatch.setattr(flows, "PAUSE", 0.02)  # a run long enough to kill the reader often
    url, schema = pg
    store = open_pg(pool_size=6)
    client = Runner(STEPS, store=store)
    out = tmp_path / "events.tsv"
    for index in range(12):
        client.submit(f"t{index}", {"seed": index})
    worker = Worker(STEPS, store=store, concurrency=2, poll_s=0.05)
    working = threading.Thread(target=worker.run)
    working.start()

    def finished() -> bool:
        return {s.status for s in store.statuses()} == {"done"}

    def read_on(had: int) -> bool:
        """The reader got a few events, or all there will be until the gates are answered.

        On a loaded machine the worker may bring every thread to its gate before a reader
        even starts: then no event comes until the answers, and a reader that has read the
        whole table is as good a moment to kill as any."""
        if len(_lines(out)) > had + 4:
            return True
        statuses = store.statuses()  # before the count: an idle thread has written its events
        if len(statuses) < 12 or {s.status for s in statuses} - {"waiting", "done"}:
            return False
        written = query(url, f"SELECT count(*) FROM {schema}.events")[0][0]
        return len(_lines(out)) >= written

    kills, answered = 0, False
    try:
        while not (answered and finished()):
            reader, had = _reconnect(url, schema, out)
            try:
                wait_for(lambda n=had: read_on(n), 60, "events")
                time.sleep(0.05)
            finally:
                reader.send_signal(signal.SIGKILL)
                reader.wait(30)
            kills += 1
            if kills == 2:
                for index in range(12):
                    client.submit(f"t{index}", {"by": "ann"})
                answered = True
    finally:
        worker.stop()
        working.join()
    assert kills >= 3
    with EventFeed(url, schema=schema) as feed:
        expected = [describe(item) for item in _drain(feed)]
    reader, _ = _reconnect(url, schema, out)
    try:
        wait_for(lambda: len(_lines(out)) >= len(expected), 60, "the last reconnect to catch up")
        time.sleep(0.3)  # anything extra (a duplicate) would arrive now
    finally:
        reader.send_signal(signal.SIGKILL)
        reader.wait(30)
    assert _lines(out) == expected
    assert query(url, f"SELECT count(*) FROM {schema}.events")[0][0] == 12 * 22


def _notified(url: str, schema: str, run: Callable[[], object]) -> int:
    import psycopg

    channel = f"flowkit_events_{schema}"
    with psycopg.connect(url, autocommit=True) as listener:
        listener.execute(f"LISTEN {channel}")
        run()
        # Notifications arrive in commit order: one sent now comes after every one of run's,
        # however late the server delivers them (a fixed wait would miss some under load).
        with psycopg.connect(url, autocommit=True) as closer:
            closer.execute("SELECT pg_notify(%s, 'end of test')", (channel,))
        for count, note in enumerate(listener.notifies(timeout=60)):
            if note.payload == "end of test":
                return count
    raise AssertionError("the closing notification never arrived")


@pytest.mark.parametrize(("mode", "expected"), [("status", 1), ("all", 11), ("none", 0)])
def test_notify_wakes_readers_at_status_changes_every_commit_or_never(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore], mode: str, expected: int
) -> None:
    url, schema = pg
    store = open_pg(notify=mode)
    runner = Runner(STEPS, store=store)
    assert _notified(url, schema, lambda: runner.start("a", {"seed": 1})) == expected


def test_an_unknown_notify_mode_is_refused(pg: tuple[str, str]) -> None:
    with pytest.raises(StoreError, match="notify must be"):
        PostgresStore(pg[0], schema=pg[1], notify="sometimes")  # type: ignore[arg-type]


def _drop_connection_of(url: str, feed: EventFeed) -> None:
    """What a failover or a server restart does to the feed's connection."""
    import psycopg

    pid = feed._conn.info.backend_pid
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_feed_whose_connection_was_dropped_goes_on_from_its_cursor(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    """Every read after a dropped connection failed for good, and ``run`` died with a
    traceback (found by a defect hunt)."""
    url, schema = pg
    runner = Runner(STEPS, store=open_pg())
    runner.start("a", {"seed": 1})
    with EventFeed(url, schema=schema, flows=[STEPS]) as feed:
        first = _drain(feed)
        _drop_connection_of(url, feed)
        runner.resume("a", {"by": "ann"})
        rest = _drain(feed)
    with EventFeed(url, schema=schema, flows=[STEPS]) as whole:
        assert [item.cursor for item in first + rest] == [item.cursor for item in _drain(whole)]
    assert rest and rest[-1].event.kind == "completed"


def test_run_survives_a_dropped_connection_and_delivers_what_came_meanwhile(
    pg: tuple[str, str], open_pg: Callable[..., PostgresStore]
) -> None:
    url, schema = pg
    runner = Runner(STEPS, store=open_pg())
    got: list[Event] = []
    stop = threading.Event()
    with EventFeed(url, schema=schema, flows=[STEPS], poll_s=0.05) as feed:
        feed.subscribe(got.append)
        reader = threading.Thread(target=feed.run, args=(stop,))
        reader.start()
        try:
            runner.start("a", {"seed": 1})
            wait_for(lambda: any(e.kind == "waiting" for e in got), 30, "the first pause")
            _drop_connection_of(url, feed)
            runner.resume("a", {"by": "ann"})
            wait_for(lambda: any(e.kind == "completed" for e in got), 30, "the end, after the drop")
            assert reader.is_alive()
        finally:
            stop.set()
            reader.join()
