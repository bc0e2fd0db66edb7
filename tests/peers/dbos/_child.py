"""Child process for the DBOS peer scenarios; the tests also import its flows.

python _child.py crash ROOT THREAD LOG   start THREAD: ``one`` commits, ``two`` is SIGKILLed
                                         mid-step (the process dies, nothing is caught)
python _child.py finish ROOT THREAD LOG  resume THREAD (started elsewhere) to its end
python _child.py race ROOT THREAD LOG    wait for a line on stdin, then start THREAD; print
                                         ``won``, ``exists`` or ``conflict``
python _child.py sleep ROOT THREAD LOG   start THREAD, which runs ``before`` and falls asleep
python _child.py pgcrash URL#SCHEMA THREAD LOG
                                         ``crash``, on PostgreSQL (leases of 0.5 s)

Every node appends its name (and the process id) to LOG, a line each, before it returns:
the parent counts how often each really ran, across processes.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel

from flowkit import END, Context, Flow, Runner, node
from flowkit.errors import ConflictError, ThreadExistsError
from flowkit.stores import JsonFileStore
from flowkit.stores.postgres import PostgresStore

#: How long a killed child's PostgreSQL lease outlives it.
PG_LEASE_S = 0.5

#: Set in the child by ``main``: where the nodes log their runs.
LOG: list[Path] = []
#: Set in the child for ``crash``: ``two`` kills its own process.
DIE_IN_TWO: list[bool] = []


class Work(BaseModel):
    value: str = ""
    steps: list[str] = []


def _ran(name: str) -> None:
    if LOG:
        with LOG[0].open("a") as log:
            log.write(f"{name} {os.getpid()}\n")
            log.flush()
            os.fsync(log.fileno())


def one(state: Work) -> dict[str, Any]:
    _ran("one")
    return {"steps": [*state.steps, "one"]}


def two(state: Work) -> dict[str, Any]:
    _ran("two")
    if DIE_IN_TWO:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"steps": [*state.steps, "two"], "value": state.value + "!"}


#: ``one`` -> ``two`` -> END.
TWO_STEPS = Flow(
    name="dbos_two_steps",
    state=Work,
    start="one",
    nodes={"one": one, "two": two},
    routes={"one": "two", "two": END},
)


@node(writes=["steps"])
def before(state: Work, ctx: Context) -> None:
    _ran("before")
    ctx.sleep_until(timedelta(days=1), update={"steps": [*state.steps, "before"]})


def after(state: Work) -> dict[str, Any]:
    _ran("after")
    return {"steps": [*state.steps, "after"]}


#: ``before`` sleeps a day, then ``after`` -> END.
SLEEPER = Flow(
    name="dbos_sleeper",
    state=Work,
    start="before",
    nodes={"before": before, "after": after},
    routes={"before": "after", "after": END},
)


def main(argv: list[str]) -> int:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    mode, root, thread_id, log = argv
    LOG.append(Path(log))
    if mode == "pgcrash":
        url, schema = root.rsplit("#", 1)
        DIE_IN_TWO.append(True)
        with PostgresStore(url, schema=schema, lease_s=PG_LEASE_S) as pg:
            Runner(TWO_STEPS, store=pg).start(thread_id, {"value": "bob"})
        return 3  # never reached: two killed the process
    with JsonFileStore(root) as store:
        if mode == "crash":
            DIE_IN_TWO.append(True)
            Runner(TWO_STEPS, store=store).start(thread_id, {"value": "bob"})
            return 3  # never reached: two killed the process
        if mode == "finish":
            return 0 if Runner(TWO_STEPS, store=store).resume(thread_id).done else 1
        if mode == "sleep":
            return 0 if Runner(SLEEPER, store=store).start(thread_id).waiting else 1
        if mode == "race":
            sys.stdin.readline()
            try:
                Runner(TWO_STEPS, store=store).start(thread_id, {"value": "race"})
            except ThreadExistsError:
                print("exists", flush=True)
            except ConflictError:
                print("conflict", flush=True)
            else:
                print("won", flush=True)
            return 0
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
