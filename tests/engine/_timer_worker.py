"""Child process for the timer race tests; also imported by them for the flow it runs.

python _timer_worker.py STORE GO   print ``ready``, wait until the file GO exists, then call
                                   ``fire_due`` once (the injected clock stands three days
                                   after the threads' start) and print ``fired <n>``

STORE is a JSON-file store folder or ``postgresql://...#schema``.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.stores import JsonFileStore, Store

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Review(BaseModel):
    text: str = ""
    approved: bool = False
    escalated: int = 0


class Verdict(BaseModel):
    approved: bool


def write(state: Review) -> dict[str, Any]:
    return {"text": "draft"}


def escalate(state: Review) -> dict[str, Any]:
    return {"escalated": state.escalated + 1}


def publish(state: Review) -> dict[str, Any]:
    return {}


FLOW = Flow(
    name="timed_review",
    state=Review,
    start="write",
    nodes={"write": write, "escalate": escalate, "publish": publish},
    gates={"review": Gate(Verdict, deadline=timedelta(days=2), on_timeout="escalate")},
    routes={"write": "review", "review": "publish", "escalate": END, "publish": END},
)


def open_store(spec: str) -> Store:
    if spec.startswith("postgresql://"):
        from flowkit.stores.postgres import PostgresStore

        url, _, schema = spec.partition("#")
        return PostgresStore(url, schema=schema)
    return JsonFileStore(spec)


def main(spec: str, go: Path) -> None:
    store = open_store(spec)
    runner = Runner(FLOW, store=store, clock=lambda: START + timedelta(days=3))
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    fired = runner.fire_due()
    print(f"fired {len(fired)}", flush=True)
    close = getattr(store, "close", None)
    if close is not None:
        close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
