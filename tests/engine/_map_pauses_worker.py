"""Child process for the Map-pauses crash tests; also imported by them for the flow it runs.

python _map_pauses_worker.py JOB   JOB is JSON: {"store": {"kind": "jsonfile", "root": ...} or
                                   {"kind": "postgres", "url": ..., "schema": ...},
                                   "thread": ..., "calls": CALLS_LOG, "op": "start"|"resume",
                                   "input": ..., "gate": ..., "hang_from": N, "hang_apply": N}

The child runs one ``start`` or ``resume`` and prints the result as one JSON line ({"status",
"node", "version", "pauses": [[id, payload], ...]} or {"error": type name}); then it waits on
stdin until the parent SIGKILLs it: a crash between two answers, never a clean shutdown.

``hang_from``: every call of an item at that index or later hangs (once it has written its
line to CALLS_LOG), so the parent kills the child while some calls have finished or asked and
others still run. ``hang_apply``: the answer applied as this process's N-th hangs, so the
parent kills it in the middle of a resume that answers several pauses.

Every call appends "<pid> call <item>" to CALLS_LOG before it does anything else, and every
answer applied appends "<pid> apply"; the parent counts them across processes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import structlog
from pydantic import BaseModel

from flowkit import END, Context, Flow, Gate, Map, Runner, append, node
from flowkit.errors import ConflictError, FlowkitError
from flowkit.stores import JsonFileStore, Store

ITEMS = [f"i{n:02d}" for n in range(20)]
#: The 7 items whose call asks a person (the others decide alone).
ASKING = ("i02", "i03", "i05", "i08", "i13", "i17", "i19")
CONCURRENCY = 3
START = {"items": ITEMS}


class Batch(BaseModel):
    items: list[str] = []
    results: Annotated[list[str], append] = []
    asked: Annotated[list[str], append] = []
    summary: str = ""


class Verdict(BaseModel):
    ok: bool
    note: str = ""


def pause_id(item: str) -> str:
    return f"check[{item}]"


def question(item: str) -> dict[str, Any]:
    return {"item": item, "question": f"is {item} fine?"}


def _log(calls: Path, line: str) -> None:
    with calls.open("a") as log:  # one short line per append: never interleaved
        log.write(f"{os.getpid()} {line}\n")


def flow(calls: Path, *, hang_from: int | None = None, hang_apply: int | None = None) -> Flow:
    """``check`` maps over 20 items; 7 calls ask (``ctx.ask``), each saving ``asked``
    with its question; every answer becomes that item's result. ``summarise`` joins."""
    applied = 0
    lock = threading.Lock()

    def apply(state: Batch, verdict: Verdict) -> dict[str, Any]:
        nonlocal applied
        _log(calls, "apply")
        with lock:
            applied += 1
            hang = hang_apply is not None and applied >= hang_apply
        if hang:
            _log(calls, "hang-apply")
            threading.Event().wait()  # until the parent kills this process
        return {"results": [f"{'ok' if verdict.ok else 'no'}: {verdict.note}"]}

    @node(asks=Gate(Verdict, apply=apply, writes=["results"]))
    def check(state: Batch, item: str, ctx: Context) -> dict[str, Any]:
        _log(calls, f"call {item}")
        if hang_from is not None and ITEMS.index(item) >= hang_from:
            _log(calls, f"hang {item}")
            threading.Event().wait()
        if item in ASKING:
            ctx.ask(question(item), update={"asked": [item]})
        return {"results": [f"{item}: auto"]}

    def summarise(state: Batch) -> dict[str, Any]:
        return {"summary": f"{len(state.results)} results, {len(state.asked)} asked"}

    return Flow(
        name="map_pauses",
        state=Batch,
        start="check",
        nodes={
            "check": Map(check, over=lambda s: s.items, key=str, concurrency=CONCURRENCY),
            "summarise": summarise,
        },
        routes={"check": "summarise", "summarise": END},
    )


def open_store(spec: dict[str, Any], *, lease_s: float = 30.0) -> Store:
    if spec["kind"] == "jsonfile":
        return JsonFileStore(spec["root"], fsync=False)
    from flowkit.stores.postgres import PostgresStore

    return PostgresStore(spec["url"], schema=spec["schema"], lease_s=lease_s)


def reply(result: Any) -> dict[str, Any]:
    return {
        "status": result.status,
        "node": result.node,
        "version": result.version,
        "pauses": [[p.id, p.payload] for p in result.pauses],
    }


def run(job: dict[str, Any]) -> dict[str, Any]:
    # A short lease: a killed child's lease on PostgreSQL expires soon after (the file store's
    # lock dies with the process).
    store = open_store(job["store"], lease_s=1.0)
    runner = Runner(
        flow(Path(job["calls"]), hang_from=job.get("hang_from"), hang_apply=job.get("hang_apply")),
        store=store,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if job["op"] == "start":
                return reply(runner.start(job["thread"], START))
            return reply(runner.resume(job["thread"], job.get("input"), gate=job.get("gate")))
        except ConflictError:  # the lease of a killed child, not yet expired
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        except FlowkitError as exc:
            return {"error": type(exc).__name__}


def main(argv: list[str]) -> int:
    # The child is an application: it may configure logging, and keeps stdout for its reply.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    print(json.dumps(run(json.loads(argv[0]))), flush=True)
    sys.stdin.read()  # wait for the parent's SIGKILL
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
