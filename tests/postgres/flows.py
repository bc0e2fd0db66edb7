"""Flows the worker tests run, in worker processes too (``flowkit worker path/flows.py:STEPS``).

``STEPS``: node ``work`` runs 10 times, gate ``approve`` waits for a separate client, then
``work`` runs 10 more times: 20 steps and one gate input, each leaving a trace in ``log`` so
a step run twice or an input applied twice shows in the final state.
"""

from __future__ import annotations

import os
import time
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, append, when

HALF = 10
#: Seconds each step sleeps (the chaos test sets it so a kill lands mid-node often).
PAUSE = float(os.environ.get("FLOWKIT_TEST_STEP_PAUSE", "0"))


class Steps(BaseModel):
    seed: int = 0
    count: int = 0
    total: int = 0
    approved_by: str = ""
    log: Annotated[list[str], append] = []


class Approval(BaseModel):
    by: str
    bonus: int = 0


def work(state: Steps) -> dict[str, Any]:
    if PAUSE:
        time.sleep(PAUSE)
    step = state.count + 1
    return {"count": step, "total": state.total + state.seed * step, "log": [f"s{step}"]}


def take(state: Steps, answer: Approval) -> dict[str, Any]:
    return {"approved_by": answer.by, "total": state.total + answer.bonus, "log": ["approved"]}


STEPS = Flow(
    name="pg_steps",
    state=Steps,
    start="work",
    nodes={"work": work},
    gates={"approve": Gate(Approval, apply=take)},
    routes={
        "work": RouteTable(
            "after_work",
            [
                Route(when("finished", lambda s: s.count >= 2 * HALF), END),
                Route(when("half_way", lambda s: s.count == HALF and not s.approved_by), "approve"),
            ],
            default="work",
        ),
        "approve": "work",
    },
)


def expected(seed: int, by: str, bonus: int) -> Steps:
    """The final state of an uninterrupted run of ``STEPS``."""
    state = Steps(seed=seed)
    log = [f"s{i}" for i in range(1, HALF + 1)] + ["approved"]
    log += [f"s{i}" for i in range(HALF + 1, 2 * HALF + 1)]
    total = sum(seed * i for i in range(1, 2 * HALF + 1)) + bonus
    return state.model_copy(
        update={"count": 2 * HALF, "total": total, "approved_by": by, "log": log}
    )


class Race(BaseModel):
    answers: Annotated[list[str], append] = []


class Answer(BaseModel):
    by: str


def record(state: Race) -> dict[str, Any]:
    return {}


#: A gate answered again and again: each round, ``ask`` takes one answer and ``record`` loops.
ROUNDS = Flow(
    name="pg_rounds",
    state=Race,
    start="ask",
    nodes={"record": record},
    gates={"ask": Gate(Answer, apply=lambda s, a: {"answers": [a.by]})},
    routes={"ask": "record", "record": "ask"},
)
