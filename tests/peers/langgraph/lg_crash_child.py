"""Child process for the LangGraph crash scenarios; also imported by them for its flows.

python lg_crash_child.py MODE ROOT CALLS
    MODE "parallel": start thread "t" of ``PARALLEL``; branch ``slow`` hangs once it has
    started, so the parent kills the process with branch ``fast`` checkpointed.
    MODE "answer": answer thread "t" of ``ASKING`` (waiting at ``interview``); node ``act``
    after it hangs, so the parent kills the process with the answer saved.

Every call of a node appends "<name>" to CALLS first, so the parent sees what ran where.
Nodes hang only when ``FLOWKIT_PEER_HANG`` is set: the parent's own runs finish.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, Parallel, Runner, append, node
from flowkit.stores import JsonFileStore

CALLS = Path(os.environ.get("FLOWKIT_PEER_CALLS", os.devnull))


def _called(name: str) -> None:
    with CALLS.open("a") as calls:
        calls.write(f"{name}\n")


def _hang() -> None:
    if os.environ.get("FLOWKIT_PEER_HANG"):
        threading.Event().wait()


class Work(BaseModel):
    value: Annotated[list[str], append] = []
    answer: str = ""


@node(writes=["value"])
def fast(state: Work) -> dict[str, Any]:
    _called("fast")
    return {"value": ["fast"]}


@node(writes=["value"])
def slow(state: Work) -> dict[str, Any]:
    _called("slow")
    _hang()
    return {"value": ["slow"]}


#: Two branches of one superstep, joined by ``after``.
PARALLEL = Flow(
    name="lg_crash_parallel",
    state=Work,
    start="both",
    nodes={
        "both": Parallel({"fast": fast, "slow": slow}, concurrency=2),
        "after": lambda s: {"value": ["after"]},
    },
    routes={"both": "after", "after": END},
)


class Answer(BaseModel):
    answer: str


@node(asks=Answer)
def interview(state: Work, ctx: Context) -> None:
    _called("interview")
    ctx.ask({"question": "go?"}, update={"value": ["asked"]})


def act(state: Work) -> dict[str, Any]:
    _called("act")
    _hang()
    return {"value": [f"acted on {state.answer}"]}


#: ``interview`` asks, then ``act`` runs on the answer.
ASKING = Flow(
    name="lg_crash_asking",
    state=Work,
    start="interview",
    nodes={"interview": interview, "act": act},
    routes={"interview": "act", "act": END},
)


def main(mode: str, root: str) -> int:
    with JsonFileStore(root) as store:
        if mode == "parallel":
            Runner(PARALLEL, store=store).start("t")
        else:
            Runner(ASKING, store=store).resume("t", {"answer": "yes"})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
