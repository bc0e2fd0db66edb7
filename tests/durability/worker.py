"""Child process for the durability tests; also imported by them for the flows it runs.

python worker.py count ROOT THREAD   once a line comes on stdin (so the parent can start it
                                     ahead, while another runs), start-or-resume the 500-step
                                     counter, print "ready" just before it runs (the parent
                                     kills it at will)
python worker.py race ROOT THREAD NAME
                                     answer the parent over stdin/stdout, one line each:
                                     "read" -> "<version>"; "go ROUND VERSION" ->
                                     "won <version>" or "conflict lock|version"; "quit" ends
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Annotated, Any

import structlog
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, append, field, when
from flowkit.errors import ConflictError, ThreadExistsError
from flowkit.stores import JsonFileStore

STEPS = 500
#: Each step takes at least this long, so a kill after t seconds has done at most t/STEP_PAUSE
#: steps: the parent can kill many times before the counter could possibly finish.
STEP_PAUSE = 0.001


class Loop(BaseModel):
    count: int = 0
    items: Annotated[list[int], append] = []


def loop(state: Loop) -> dict[str, Any]:
    time.sleep(STEP_PAUSE)
    return {"count": state.count + 1, "items": [state.count + 1]}


def _finished(state: Loop) -> bool:
    return state.count >= STEPS


COUNTER = Flow(
    name="crash_counter",
    state=Loop,
    start="loop",
    nodes={"loop": loop},
    routes={
        "loop": RouteTable("until_500", [Route(when("finished", _finished), END)], default="loop")
    },
)


class Inbox(BaseModel):
    values: Annotated[list[str], append] = []
    stop: bool = False


class Item(BaseModel):
    value: str
    stop: bool = False


def _receive(state: Inbox, item: Item) -> dict[str, Any]:
    return {"values": [item.value], "stop": item.stop}


def _apply(state: Inbox) -> dict[str, Any]:
    return {}


#: gate ``inbox`` (the value is appended) -> node ``apply`` -> ``inbox`` again, or END on stop.
INBOX = Flow(
    name="race_inbox",
    state=Inbox,
    start="inbox",
    nodes={"apply": _apply},
    gates={"inbox": Gate(Item, apply=_receive)},
    routes={
        "inbox": "apply",
        "apply": RouteTable("after_apply", [Route(field("stop"), END)], default="inbox"),
    },
)


def store_at(root: str) -> JsonFileStore:
    # Small snapshot thresholds: kills also land while snapshots are written.
    return JsonFileStore(root, min_snapshot_bytes=1024, snapshot_ratio=1.0)


def count(root: str, thread_id: str) -> int:
    sys.stdin.readline()  # the parent's go: imports are done, now the thread is ours
    with store_at(root) as store:
        runner: Runner[Loop] = Runner(COUNTER, store=store)
        print("ready", flush=True)
        try:
            result = runner.start(thread_id)
        except ThreadExistsError:
            state = runner.get_state(thread_id)
            result = state if state.status == "done" else runner.resume(thread_id)
        return 0 if result.status == "done" else 1


def race(root: str, thread_id: str, name: str) -> int:
    with store_at(root) as store:
        runner: Runner[Inbox] = Runner(INBOX, store=store)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "read":
                answer = str(runner.get_state(thread_id).version)
            elif command == "go":
                round_, version = args
                try:
                    won = runner.resume(
                        thread_id, {"value": f"{name}-{round_}"}, expected_version=int(version)
                    )
                except ConflictError as exc:  # the lock was held, or the version moved on
                    answer = "conflict " + ("lock" if exc.expected is None else "version")
                else:
                    answer = f"won {won.version}"
            else:
                return 0
            print(answer, flush=True)
    return 0


def main(argv: list[str]) -> int:
    # The children are applications: they may configure logging, and keep stdout for replies.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    mode, *args = argv
    if mode == "count":
        return count(*args)
    if mode == "race":
        return race(*args)
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
