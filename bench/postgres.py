"""PostgreSQL figures (issue #14), each beside its floor measured in the same run.

1. Steps per second with 1, 2 and 4 worker processes (``flowkit worker``) sharing one database:
   threads of a 20-step flow, timed from the first to the last committed step.
2. Per-step cost of ``PostgresStore.append`` (the compare-and-set, the journal row and the
   event row in one statement) against one bare ``INSERT`` + commit of the same record bytes
   into a one-column table. Target: <= 2x. Also a whole engine step through ``Runner``.
3. Bytes written per step with 10 vs 2,000 messages in the state (journal, event and snapshot
   rows of 50 steps, divided by 50). Target: <= 1.2x.
4. LangGraph's ``PostgresSaver`` on the same loop, where ``langgraph-checkpoint-postgres`` is
   installed (never a dependency: ``pip install langgraph langgraph-checkpoint-postgres``).

The server is ``$FLOWKIT_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``);
a scratch database is created and dropped. ``--quick`` for a smoke run, ``--json`` for machines.
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Case, interleaved
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, Runner, append, when

SERVER = os.environ.get("FLOWKIT_PG_URL") or "postgresql://postgres@127.0.0.1:5432/postgres"
STEPS = 20


class Loop(BaseModel):
    count: int = 0
    limit: int = STEPS
    messages: Annotated[list[str], append] = []


def talk(state: Loop) -> dict[str, Any]:
    return {"count": state.count + 1, "messages": [f"turn {state.count + 1}: " + "words " * 12]}


FLOW = Flow(
    name="bench_pg_loop",
    state=Loop,
    start="talk",
    nodes={"talk": talk},
    routes={
        "talk": RouteTable(
            "until_limit",
            [Route(when("reached", lambda s: s.count >= s.limit), END)],
            default="talk",
        )
    },
)


@contextmanager
def scratch_database() -> Iterator[str]:
    import psycopg

    from flowkit.stores.postgres import migrate

    name = f"flowkit_bench_{os.urandom(4).hex()}"
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlsplit(SERVER)._replace(path=f"/{name}").geturl()
    try:
        migrate(url)
        yield url
    finally:
        with psycopg.connect(SERVER, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _sql(url: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query.encode())
        return cursor.fetchall() if cursor.description is not None else []


# -- 1. steps per second with N workers -----------------------------------------------------


def steps_per_second(url: str, workers: int, threads: int) -> float:
    from flowkit.stores.postgres import PostgresStore

    _sql(url, "TRUNCATE flowkit.threads, flowkit.records, flowkit.events, flowkit.work")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "flowkit", "worker", f"{__file__}:FLOW", "--store", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        with PostgresStore(url) as store:
            client = Runner(FLOW, store=store)
            for index in range(threads):
                client.submit(f"t{index}", {})
            deadline = time.monotonic() + 600
            while store.statuses(status="done").__len__() < threads:
                if time.monotonic() > deadline:
                    raise RuntimeError("the workers did not finish in 10 minutes")
                time.sleep(0.2)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
    ((count, first, last),) = _sql(
        url,
        "SELECT count(*), min((convert_from(body, 'UTF8')::json->>'ts')::float),"
        " max((convert_from(body, 'UTF8')::json->>'ts')::float)"
        " FROM flowkit.records WHERE kind = 'step'",
    )
    return float(count) / max(float(last) - float(first), 1e-3)


# -- 2. per-step cost against a bare INSERT ----------------------------------------------------


def append_vs_insert(url: str, steps: int, rounds: int) -> dict[str, float]:
    import psycopg

    from flowkit.records._records import StartRecord, StepRecord
    from flowkit.stores._jsonl import encode
    from flowkit.stores.postgres import PostgresStore

    store = PostgresStore(url, pool_size=2)
    bare = psycopg.connect(url, autocommit=True)
    bare.execute("CREATE TABLE IF NOT EXISTS bare_floor (id bigserial PRIMARY KEY, body bytea)")
    update = {"count": 7, "messages": ["turn 7: " + "words " * 12]}
    counter = iter(range(10**9))

    def record(version: int) -> StepRecord:
        return StepRecord(
            version=version, ts=time.time(), run_id="r", next="talk", status="pending",
            node="talk", update=update, latency_s=0.000123,
        )  # fmt: skip

    body = encode("x", record(1))

    def flowkit_batch() -> Callable[[], object]:
        thread = f"a{next(counter)}"
        store.create(thread, StartRecord(version=0, ts=0.0, next="talk", status="pending",
                                         flow="f", state={}))  # fmt: skip
        records = [record(v) for v in range(1, steps + 1)]

        def run() -> None:
            for r in records:
                store.append(thread, [r], expected_version=r.version - 1)

        return run

    def bare_batch() -> Callable[[], object]:
        def run() -> None:
            for _ in range(steps):
                bare.execute("INSERT INTO bare_floor (body) VALUES (%b)", (body,))

        return run

    def engine_batch() -> Callable[[], object]:
        runner = Runner(FLOW, store=store)
        thread = f"e{next(counter)}"
        return lambda: runner.start(thread, {"limit": steps})

    try:
        result = interleaved(
            {
                "append": Case(flowkit_batch, steps),
                "insert": Case(bare_batch, steps),
                "engine": Case(engine_batch, steps),
            },
            rounds,
        )
    finally:
        store.close()
        bare.close()
    result["record_bytes"] = float(len(body))
    return result


# -- 3. bytes per step at 10 vs 2,000 messages --------------------------------------------------


def bytes_per_step(url: str, messages: int, steps: int) -> float:
    from flowkit.stores.postgres import PostgresStore

    thread = f"m{messages}"
    start = {"limit": steps, "messages": [f"old {i}: " + "words " * 12 for i in range(messages)]}
    with PostgresStore(url) as store:
        Runner(FLOW, store=store).start(thread, start)
    ((written,),) = _sql(
        url,
        f"SELECT (SELECT coalesce(sum(length(body)), 0) FROM flowkit.records"
        f"   WHERE thread_id = '{thread}' AND version > 0)"
        f" + (SELECT coalesce(sum(length(body)), 0) FROM flowkit.events"
        f"   WHERE thread_id = '{thread}' AND version > 0)"
        f" + (SELECT coalesce(sum(length(body)), 0) FROM flowkit.snapshots"
        f"   WHERE thread_id = '{thread}')",
    )
    return float(written) / steps


# -- 4. LangGraph's PostgresSaver, where installed ---------------------------------------------


class LangGraphState(TypedDict):
    """The same loop's state for LangGraph (``messages`` appended, like flowkit's reducer)."""

    count: int
    limit: int
    messages: Annotated[list[str], operator.add]


def langgraph_figures(url: str, steps: int) -> dict[str, float] | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.graph import END as LG_END
        from langgraph.graph import StateGraph
    except ImportError:
        return None

    def node(state: LangGraphState) -> dict[str, Any]:
        return {"count": state["count"] + 1, "messages": [f"turn: {'words ' * 12}"]}

    graph = StateGraph(LangGraphState)
    graph.add_node("talk", node)
    graph.set_entry_point("talk")
    graph.add_conditional_edges("talk", lambda s: LG_END if s["count"] >= s["limit"] else "talk")
    found: dict[str, float] = {}
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        app = graph.compile(checkpointer=saver)
        for messages in (10, 2000):
            start = {"count": 0, "limit": steps, "messages": ["old " * 13] * messages}
            config = {"configurable": {"thread_id": f"lg{messages}"}, "recursion_limit": 10**6}
            began = time.perf_counter()
            app.invoke(start, config)
            found[f"langgraph.step_us.{messages}"] = (time.perf_counter() - began) / steps * 1e6
        for messages in (10, 2000):
            ((blobs,),) = _sql(
                url,
                "SELECT (SELECT coalesce(sum(length(blob)), 0) FROM checkpoint_blobs"
                f" WHERE thread_id = 'lg{messages}') + (SELECT coalesce(sum(length(blob)), 0)"
                f" FROM checkpoint_writes WHERE thread_id = 'lg{messages}') + (SELECT"
                " coalesce(sum(length(checkpoint::text)), 0) FROM checkpoints"
                f" WHERE thread_id = 'lg{messages}')",
            )
            found[f"langgraph.bytes_per_step.{messages}"] = float(blobs) / steps
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    threads = 20 if args.quick else 200
    figures: dict[str, float] = {}
    with scratch_database() as url:
        for workers in (1, 2, 4):
            figures[f"workers.{workers}.steps_per_s"] = steps_per_second(url, workers, threads)
        cost = append_vs_insert(url, 20 if args.quick else 200, 1 if args.quick else 5)
        figures["step.append_us"] = cost["append"] * 1e6
        figures["floor.insert_us"] = cost["insert"] * 1e6
        figures["step.append_ratio"] = cost["append"] / cost["insert"]
        figures["step.engine_us"] = cost["engine"] * 1e6
        figures["step.record_bytes"] = cost["record_bytes"]
        for messages in (10, 2000):
            figures[f"bytes_per_step.{messages}"] = bytes_per_step(url, messages, 50)
        figures["bytes_per_step.ratio"] = (
            figures["bytes_per_step.2000"] / figures["bytes_per_step.10"]
        )
        peers = langgraph_figures(url, 20 if args.quick else 50)
    if peers:
        figures.update(peers)
    if args.json:
        print(json.dumps(figures, indent=2, sort_keys=True))
        return
    rows = [
        ("steps/s, 1 worker process", f"{figures['workers.1.steps_per_s']:.0f}"),
        ("steps/s, 2 worker processes", f"{figures['workers.2.steps_per_s']:.0f}"),
        ("steps/s, 4 worker processes", f"{figures['workers.4.steps_per_s']:.0f}"),
        ("PostgresStore.append per step", f"{figures['step.append_us']:.0f} us"),
        ("floor: bare INSERT + commit, same bytes", f"{figures['floor.insert_us']:.0f} us"),
        ("append / floor (target <= 2x)", f"{figures['step.append_ratio']:.2f}x"),
        ("whole engine step on Postgres", f"{figures['step.engine_us']:.0f} us"),
        ("bytes per step, 10 messages", f"{figures['bytes_per_step.10']:.0f}"),
        ("bytes per step, 2,000 messages", f"{figures['bytes_per_step.2000']:.0f}"),
        ("2,000 / 10 (target <= 1.2x)", f"{figures['bytes_per_step.ratio']:.2f}x"),
    ]
    if peers:
        rows += [
            ("LangGraph PostgresSaver per step, 10 msgs",
             f"{peers['langgraph.step_us.10']:.0f} us"),
            ("LangGraph per step, 2,000 msgs", f"{peers['langgraph.step_us.2000']:.0f} us"),
            ("LangGraph bytes per step, 10 msgs", f"{peers['langgraph.bytes_per_step.10']:.0f}"),
            ("LangGraph bytes per step, 2,000 msgs",
             f"{peers['langgraph.bytes_per_step.2000']:.0f}"),
        ]  # fmt: skip
    else:
        rows.append(
            ("LangGraph PostgresSaver", "not installed (pip install langgraph "
             "langgraph-checkpoint-postgres)")
        )  # fmt: skip
    width = max(len(name) for name, _ in rows)
    print(
        f"flowkit on PostgreSQL ({'quick' if args.quick else 'full'} run, {os.cpu_count()} cores)"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
