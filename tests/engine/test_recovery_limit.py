"""What a process that died inside a node leaves counted: a retried node's attempts go on
from the dead run's (``max_attempts`` holds across the crash), and with
``max_recovery_attempts`` a node that keeps killing its process is parked as failed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, RetryPolicy, Runner, node
from flowkit.stores import MemoryStore


class Job(BaseModel):
    done: bool = False


class Died(BaseException):
    """Stands in for the process dying inside a node: nothing catches it."""


@pytest.mark.parametrize("bad", [-1, True, "2", 1.5])
def test_max_recovery_attempts_is_a_whole_number_or_none(bad: Any) -> None:
    flow = Flow(name="j", state=Job, start="n", nodes={"n": lambda s: {}}, routes={"n": END})
    with pytest.raises(ValueError, match="max_recovery_attempts"):
        Runner(flow, max_recovery_attempts=bad)


def test_a_retried_node_whose_attempts_a_dead_process_used_up_fails_without_running() -> None:
    seen: list[int] = []
    fixed = {"now": False}

    @node(writes=["done"], retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
    def flaky(state: Job, ctx: Context) -> dict[str, Any]:
        seen.append(ctx.attempt)
        if fixed["now"]:
            return {"done": True}
        if ctx.attempt == 1:
            raise ConnectionError("down")
        raise Died

    flow = Flow(name="j", state=Job, start="flaky", nodes={"flaky": flaky}, routes={"flaky": END})
    store = MemoryStore()
    with pytest.raises(Died):
        Runner(flow, store=store).start("t")
    failed = Runner(flow, store=store).resume("t")
    assert seen == [1, 2]  # not run a third time
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.type == "AttemptsExhaustedError"
    fixed["now"] = True
    assert Runner(flow, store=store).resume("t").state.done  # a new round, from attempt 1
    assert seen == [1, 2, 1]


def test_a_node_that_dies_once_is_recovered_within_the_limit_and_counts_nothing_after() -> None:
    dies = {"now": True}

    def once(state: Job) -> dict[str, Any]:
        if dies["now"]:
            dies["now"] = False
            raise Died
        return {"done": True}

    flow = Flow(name="j", state=Job, start="once", nodes={"once": once}, routes={"once": END})
    store = MemoryStore()
    with pytest.raises(Died):
        Runner(flow, store=store, max_recovery_attempts=1).start("t")
    assert Runner(flow, store=store, max_recovery_attempts=1).resume("t").state.done
