"""Commits and round trips per thread of a PostgreSQL worker (issue 25): a client submits
threads of a 10-step flow, one in-process ``Worker`` runs them all; the figures are per thread.

- commits: the scratch database's ``pg_stat_database.xact_commit`` before and after (the
  server's own count: every autocommit statement and every explicit transaction is one);
- round trips: the statements and transaction brackets (``BEGIN``/``COMMIT``) the client
  library sent, counted by wrapping ``psycopg.Connection`` in this process;
- steps/s of that one worker, for scale (single process, so not the issue's 2-core figure).

The server is ``$FLOWKIT_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``);
a scratch database is created and dropped. ``measure(quick)`` returns the figures; run this
file for a table, or ``--json``. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import SERVER, scratch_database
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, Runner, when

STEPS = 10


class Count(BaseModel):
    count: int = 0


def step(state: Count) -> dict[str, Any]:
    return {"count": state.count + 1}


FLOW = Flow(
    name="bench_pg_commits",
    state=Count,
    start="step",
    nodes={"step": step},
    routes={
        "step": RouteTable(
            "until_ten", [Route(when("ten", lambda s: s.count >= STEPS), END)], default="step"
        )
    },
)


def _commits(url: str) -> int:
    """The database's committed transactions so far, as the server counts them."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@contextmanager
def _round_trips() -> Iterator[Callable[[], int]]:
    """Count what psycopg sends: each ``execute`` and each transaction's BEGIN and COMMIT."""
    import psycopg

    count = [0]
    execute, transaction = psycopg.Connection.execute, psycopg.Connection.transaction

    def counted_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return execute(self, *args, **kwargs)

    def counted_transaction(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 2
        return transaction(self, *args, **kwargs)

    psycopg.Connection.execute = counted_execute  # type: ignore[method-assign]
    psycopg.Connection.transaction = counted_transaction  # type: ignore[method-assign]
    try:
        yield lambda: count[0]
    finally:
        psycopg.Connection.execute = execute  # type: ignore[method-assign]
        psycopg.Connection.transaction = transaction  # type: ignore[method-assign]


def per_thread(url: str, threads: int, prefix: str) -> dict[str, float]:
    """Submit ``threads`` threads, let one worker run them; commits and round trips each."""
    from flowkit.stores.postgres import PostgresStore
    from flowkit.workers import Worker

    before = _commits(url)
    with _round_trips() as sent:
        with PostgresStore(url) as store:
            client = Runner(FLOW, store=store)
            for index in range(threads):
                client.submit(f"{prefix}{index}", {})
            submitted = sent()
            started = time.perf_counter()
            Worker(FLOW, store=store, timer_poll_s=None).run(until_idle=True)
            elapsed = time.perf_counter() - started
            assert len(store.statuses(flow=FLOW.name, status="done")) >= threads
        trips = sent()
    time.sleep(1.5)  # closed backends report their counts as they exit
    commits = _commits(url) - before - 1  # less the statuses() read above
    return {
        "commits": commits / threads,
        "round_trips": (trips - 1) / threads,
        "round_trips_submit": submitted / threads,
        "steps_per_s": threads * STEPS / elapsed,
    }


def measure(quick: bool) -> dict[str, Any]:
    """The figures on a scratch database, or ``{"skipped": why}`` without a server."""
    try:
        import psycopg

        with psycopg.connect(SERVER, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return {"skipped": f"no PostgreSQL at {SERVER}: {str(exc).strip()[:120]}"}
    with scratch_database() as url:
        per_thread(url, 5, "warm")  # imports, prepared statements, first pages
        figures = per_thread(url, 20 if quick else 200, "t")
        return {f"pg.{k}": v for k, v in figures.items()}


def report(figures: dict[str, Any]) -> str:
    if "skipped" in figures:
        return f"PostgreSQL worker: skipped ({figures['skipped']})"
    return (
        f"PostgreSQL worker, per {STEPS}-step thread (submitted by a client, run by one "
        f"worker): {figures['pg.commits']:.1f} commits, {figures['pg.round_trips']:.1f} round "
        f"trips ({figures['pg.round_trips_submit']:.1f} of them the submit); "
        f"{figures['pg.steps_per_s']:.0f} steps/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 threads instead of 200")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    import logging

    import structlog

    # A worker logs as it starts and stops; the bench is about figures (stdout: the report).
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    figures = measure(args.quick)
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
