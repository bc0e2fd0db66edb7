"""DBOS peer scenarios: step retries with backoff, which errors retry, step timeouts.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_failures.py``
(``test_step_retries``, ``test_step_retries_no_final_sleep``, ``test_step_should_retry``,
``test_step_should_retry_on_last_attempt``, ``test_step_status``,
``test_recovery_during_retries``, ``test_step_timeout_with_retries``,
``test_step_timeout_is_checkpointed_and_replayed``). A DBOS step is a flowkit node with a
``RetryPolicy``; backoff is read from the engine's ``node_retry`` log lines (the delay it
chose), never from a clock.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Context, Flow, RetryPolicy, Runner, node
from flowkit.stores import JsonFileStore


class Call(BaseModel):
    result: str = ""


class Died(BaseException):
    """Stands for the process dying inside a node: nothing in the engine catches it."""


def _one_node(fn: Any) -> Flow:
    return Flow(
        name="dbos_retry",
        state=Call,
        start="step",
        nodes={"step": fn},
        routes={"step": END},
        error_field=None,
    )


def _retries(logs: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(e["attempt"], e["delay_s"]) for e in logs if e["event"] == "node_retry"]


def test_a_step_that_always_fails_is_tried_max_attempts_times_with_growing_delays(
    tmp_path: Path,
) -> None:
    attempts: list[int] = []

    @node(retry=RetryPolicy(max_attempts=4, initial_delay=0.001, backoff=2.0, jitter=False))
    def step(state: Call, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        raise ConnectionError("service down")

    with JsonFileStore(tmp_path / "store") as store, capture_logs() as logs:
        failed = Runner(_one_node(step), store=store).start("wf-retry")
    assert attempts == [1, 2, 3, 4]
    assert failed.status == "failed" and failed.error is not None
    assert (failed.error.type, failed.error.attempts) == ("ConnectionError", 4)
    # Exponential backoff, and no wait after the last attempt.
    assert _retries(logs) == [(1, 0.001), (2, 0.002), (3, 0.004)]


def test_a_step_that_succeeds_on_a_retry_commits_once_with_its_attempt(tmp_path: Path) -> None:
    attempts: list[int] = []

    @node(retry=RetryPolicy(max_attempts=3, initial_delay=0, jitter=False))
    def step(state: Call, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise TimeoutError("slow backend")
        return {"result": f"ok on attempt {ctx.attempt}"}

    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_one_node(step), store=store)
        done = runner.start("wf-ok")
        steps = [c for c in runner.history("wf-ok") if c.kind == "step"]
    assert attempts == [1, 2, 3]
    assert done.done and done.state.result == "ok on attempt 3"
    assert len(steps) == 1  # failed attempts are not steps of the thread


def test_an_error_the_policy_rejects_is_not_retried(tmp_path: Path) -> None:
    attempts: list[int] = []

    @node(
        retry=RetryPolicy(
            max_attempts=5, initial_delay=0, retry_on=lambda exc: "transient" in str(exc)
        )
    )
    def step(state: Call, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        raise RuntimeError("transient" if ctx.attempt == 1 else "permanent")

    with capture_logs() as logs:
        failed = Runner(_one_node(step), store=None).start("wf-reject")
    assert attempts == [1, 2]
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.message == "permanent" and failed.error.attempts == 2
    assert len(_retries(logs)) == 1


def test_a_bug_is_not_retried_by_default(tmp_path: Path) -> None:
    attempts: list[int] = []

    @node(retry=RetryPolicy(max_attempts=3, initial_delay=0))
    def step(state: Call, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        raise ValueError("bad input")

    result = Runner(_one_node(step), store=None).start("wf-bug")
    assert attempts == [1]
    assert result.status == "failed" and result.error is not None
    assert (result.error.type, result.error.retryable, result.error.attempts) == (
        "ValueError",
        False,
        1,
    )


def test_a_failed_thread_resumed_later_retries_only_the_failed_step(tmp_path: Path) -> None:
    calls: list[str] = []
    broken = [True]

    def prepare(state: Call) -> dict[str, Any]:
        calls.append("prepare")
        return {"result": "prepared"}

    @node(retry=RetryPolicy(max_attempts=2, initial_delay=0))
    def call(state: Call) -> dict[str, Any]:
        calls.append("call")
        if broken[0]:
            raise ConnectionError("down")
        return {"result": state.result + "+called"}

    flow = Flow(
        name="dbos_resume_failed",
        state=Call,
        start="prepare",
        nodes={"prepare": prepare, "call": call},
        routes={"prepare": "call", "call": END},
        error_field=None,
    )
    with JsonFileStore(tmp_path / "store") as store:
        assert Runner(flow, store=store).start("wf-f").status == "failed"
    broken[0] = False
    with JsonFileStore(tmp_path / "store") as store:
        done = Runner(flow, store=store).resume("wf-f")
    assert done.done and done.state.result == "prepared+called"
    assert calls == ["prepare", "call", "call", "call"]


def test_a_crash_between_retries_resumes_the_step_not_the_ones_before(tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []

    def prepare(state: Call) -> dict[str, Any]:
        calls.append(("prepare", 1))
        return {"result": "prepared"}

    @node(retry=RetryPolicy(max_attempts=3, initial_delay=0))
    def call(state: Call, ctx: Context) -> dict[str, Any]:
        calls.append(("call", ctx.attempt))
        if len(calls) == 3:
            raise Died  # the process dies during the second attempt
        if ctx.attempt == 1:
            raise ConnectionError("down")
        return {"result": "called"}

    flow = Flow(
        name="dbos_crash_retry",
        state=Call,
        start="prepare",
        nodes={"prepare": prepare, "call": call},
        routes={"prepare": "call", "call": END},
        error_field=None,
    )
    with JsonFileStore(tmp_path / "store") as store, pytest.raises(Died):
        Runner(flow, store=store).start("wf-c")
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(flow, store=store)
        assert runner.get_state("wf-c").status == "pending"
        done = runner.resume("wf-c")
    assert done.done and done.state.result == "called"
    # `prepare` never again; the step's attempts go on counting from the one that died (its
    # RetryPolicy's max_attempts holds across the crash).
    assert calls == [("prepare", 1), ("call", 1), ("call", 2), ("call", 3)]


def test_a_step_timeout_is_retried_and_a_final_timeout_is_recorded(tmp_path: Path) -> None:
    attempts: list[tuple[int, bool]] = []
    stall = [2]

    @node(timeout=0.05, retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
    def step(state: Call, ctx: Context) -> dict[str, Any] | None:
        if len(attempts) < stall[0]:
            ctx.cancel_event.wait(5)
            attempts.append((ctx.attempt, ctx.cancelled))
            return None
        attempts.append((ctx.attempt, ctx.cancelled))
        return {"result": "in time"}

    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_one_node(step), store=store)
        failed = runner.start("wf-t")
        assert failed.status == "failed" and failed.error is not None
        assert (failed.error.type, failed.error.attempts) == ("NodeTimeoutError", 2)
        # The last abandoned attempt returns on its own thread after the run has failed.
        deadline = time.monotonic() + 10
        while len(attempts) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert attempts == [(1, True), (2, True)]
    with JsonFileStore(tmp_path / "store") as store:  # the timeout was saved, not lost
        runner = Runner(_one_node(step), store=store)
        seen = runner.get_state("wf-t")
        assert seen.error is not None and seen.error.type == "NodeTimeoutError"
        done = runner.resume("wf-t")
    assert done.done and done.state.result == "in time"
    assert attempts[-1] == (1, False)
