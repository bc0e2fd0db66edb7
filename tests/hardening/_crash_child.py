"""Child process of the crash cases; also imported by them for its flow.

python _crash_child.py jsonfile ROOT THREAD
python _crash_child.py postgres URL SCHEMA THREAD

It imports everything, then waits for a line on stdin before it opens its store (so the
parent can start the next child while the one before runs, and the import is off the clock).

Starts (or picks up) the thread and drives it to its end: steps, a patch and an answer at
every gate. Prints ``ready`` once its store is open and ``v N`` after each commit it saw
return, so the parent knows which versions were acknowledged before it kills the child.
What the child does next depends only on the stored state, so every run, however often
killed, passes through the same states as an uninterrupted one.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Annotated, Any

import structlog
from pydantic import BaseModel

from flowkit import END, Event, Flow, Gate, Route, RouteTable, Runner, StateChanged, append, when
from flowkit.errors import ConflictError, ThreadExistsError
from flowkit.stores import JsonFileStore

STEPS = 60
#: Each step sleeps this long, so a kill lands anywhere in a run of about a third of a second.
PAUSE = 0.002


class Tally(BaseModel):
    count: int = 0
    items: Annotated[list[int], append] = []
    note: str = ""


class Answer(BaseModel):
    value: int


def _step(state: Tally) -> dict[str, Any]:
    time.sleep(PAUSE)
    return {"count": state.count + 1, "items": [state.count + 1]}


def _take(state: Tally, answer: Answer) -> dict[str, Any]:
    return {"items": [answer.value]}


CRASH = Flow(
    name="hardening_crash",
    state=Tally,
    start="step",
    nodes={"step": _step},
    gates={"ask": Gate(Answer, apply=_take)},
    routes={
        "step": RouteTable(
            "after_step",
            [
                Route(when("finished", lambda s: s.count >= STEPS), END),
                Route(when("fifth", lambda s: s.count % 5 == 0), "ask"),
            ],
            default="step",
        ),
        "ask": "step",
    },
)


def drive(runner: Runner[Tally], thread_id: str, report: Any = print) -> int:
    """Take the thread from wherever it stands to its end, as any run would; ``report`` each
    version a call returned."""
    try:
        result = runner.start(thread_id)
    except ThreadExistsError:
        result = runner.get_state(thread_id)
    while result.status != "done":
        report(f"v {result.version}", flush=True)
        if result.status == "waiting":
            count = result.state.count
            if result.state.note != f"n{count}":
                result = runner.update_state(thread_id, {"note": f"n{count}"}, reason="crash")
                continue
            result = runner.resume(thread_id, {"value": -count})
        elif result.status == "pending":
            result = runner.resume(thread_id)
        else:
            return 3
    report(f"v {result.version}", flush=True)
    return 0


def _announce(event: Event) -> None:
    if isinstance(event, StateChanged):  # after its commit
        print(f"v {event.version}", flush=True)


def main(argv: list[str]) -> int:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    kind, *args = argv
    if kind == "postgres":  # imported before the go, driver included, as the JSON store is
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401

        from flowkit.stores.postgres import PostgresStore
    sys.stdin.readline()  # the parent's go: only now may this child touch the thread
    store: Any
    if kind == "jsonfile":
        root, thread_id = args
        store = JsonFileStore(root, min_snapshot_bytes=1024, snapshot_ratio=1.0)
    else:
        url, schema, thread_id = args
        store = PostgresStore(
            url, schema=schema, pool_size=2, lease_s=0.5, min_snapshot_bytes=1024,
            snapshot_ratio=1.0,
        )  # fmt: skip
    with store:
        runner: Runner[Any] = Runner(CRASH, store=store)
        runner.subscribe(_announce)
        print("ready", flush=True)
        for _ in range(200):  # a killed child's lease runs out after lease_s
            try:
                return drive(runner, thread_id)
            except ConflictError:
                time.sleep(0.1)
    return 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
