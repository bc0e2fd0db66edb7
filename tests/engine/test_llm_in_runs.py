"""LLM calls inside runs: journaled per step, never repeated on resume or fork, replayable."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, Route, RouteTable, Runner, append, field
from flowkit.errors import ReplayMismatchError, ThreadNotFoundError
from flowkit.llm import ReplayLLM
from flowkit.stores import Store
from flowkit.testing import ScriptedLLM, capture_events


class Plan(BaseModel):
    steps: list[str]


class Job(BaseModel):
    request: str = ""
    plan: list[str] = []
    summary: str = ""
    approved: bool = False
    feedback: Annotated[list[str], append] = []


class Review(BaseModel):
    approved: bool
    feedback: list[str] = []


def planner(state: Job, ctx: Context) -> dict[str, Any]:
    prompt = f"plan: {state.request}; feedback: {'; '.join(state.feedback) or 'none'}"
    answer = ctx.llm.complete([{"role": "user", "content": prompt}], schema=Plan)
    return {"plan": answer.parsed.steps}


def summarise(state: Job, ctx: Context) -> dict[str, Any]:
    text = "".join(
        chunk.text
        for chunk in ctx.llm.stream([{"role": "user", "content": f"summarise {state.plan}"}])
    )
    return {"summary": text}


def job_flow() -> Flow:
    after_review = RouteTable(
        "after_review", [Route(field("approved"), "summarise")], default="plan"
    )
    return Flow(
        name="job",
        state=Job,
        start="plan",
        nodes={"plan": planner, "summarise": summarise},
        gates={"review": Review},
        routes={"plan": "review", "review": after_review, "summarise": END},
    )


def scripted() -> ScriptedLLM:
    return ScriptedLLM(
        [
            ("feedback: none", {"steps": ["pick", "place"]}),
            ("feedback: slower", {"steps": ["pick", "wait", "place"]}),
            ("summarise", "Pick, wait and place."),
        ]
    )


def test_resume_and_fork_after_llm_steps_make_no_new_calls(store: Store) -> None:
    llm = scripted()
    runner = Runner(job_flow(), store=store, llm=llm)
    runner.start("t1", {"request": "move the part"})
    assert len(llm.calls) == 1
    reopened = Runner(job_flow(), store=store, llm=llm)
    reopened.get_state("t1")
    reopened.fork("t1", "t2")
    assert len(llm.calls) == 1, "loading and forking never call the model"
    reopened.resume("t2", {"approved": False, "feedback": ["slower"]})
    assert len(llm.calls) == 2, "only the newly run step calls the model"


def test_every_call_is_journaled_with_its_step(store: Store) -> None:
    runner = Runner(job_flow(), store=store, llm=scripted())
    runner.start("t1", {"request": "move"})
    runner.resume("t1", {"approved": False, "feedback": ["slower"]})
    runner.resume("t1", {"approved": True})
    calls = runner.llm_calls("t1")
    assert [c["request"]["schema"] for c in calls] == ["Plan", "Plan", None]
    assert calls[1]["response"]["parsed"] == {"steps": ["pick", "wait", "place"]}
    steps = [c for c in runner.history("t1") if c.kind == "step"]
    assert [c.node for c in steps] == ["plan", "plan", "summarise"]


def test_a_replayed_run_reproduces_the_original_state_exactly(store: Store) -> None:
    original = Runner(job_flow(), store=store, llm=scripted())
    original.start("t1", {"request": "move"})
    original.resume("t1", {"approved": False, "feedback": ["slower"]})
    final = original.resume("t1", {"approved": True}).state

    replay = ReplayLLM(original.llm_calls("t1"))
    again = Runner(job_flow(), store=store, llm=replay)
    again.start("r1", {"request": "move"})
    again.resume("r1", {"approved": False, "feedback": ["slower"]})
    assert again.resume("r1", {"approved": True}).state == final
    assert replay.remaining == 0


def test_a_replay_that_diverges_is_an_error_not_a_wrong_answer(store: Store) -> None:
    original = Runner(job_flow(), store=store, llm=scripted())
    original.start("t1", {"request": "move"})
    replay = ReplayLLM(original.llm_calls("t1"))
    runner = Runner(
        job_flow(),
        store=store,
        llm=replay,
    )
    result = runner.start("r1", {"request": "something else"})
    assert result.status == "failed"
    assert result.error is not None and result.error.type == ReplayMismatchError.__name__


def test_streamed_tokens_reach_subscribers(store: Store) -> None:
    runner = Runner(job_flow(), store=store, llm=scripted())
    runner.start("t1", {"request": "move"})
    with capture_events(runner) as events:
        runner.resume("t1", {"approved": True})
    tokens = events.of("token")
    assert "".join(t.text for t in tokens) == "Pick, wait and place."  # type: ignore[attr-defined]
    assert tokens[-1].done  # type: ignore[attr-defined]
    assert {t.node for t in tokens} == {"summarise"}  # type: ignore[attr-defined]


def test_async_nodes_record_calls_too(store: Store) -> None:
    async def aplan(state: Job, ctx: Context) -> dict[str, Any]:
        answer = await ctx.llm.acomplete(
            [{"role": "user", "content": "plan: x; feedback: none"}], schema=Plan
        )
        return {"plan": answer.parsed.steps}

    flow = Flow(name="job", state=Job, start="plan", nodes={"plan": aplan}, routes={"plan": END})
    runner = Runner(flow, store=store, llm=scripted())
    assert asyncio.run(runner.astart("t1")).state.plan == ["pick", "place"]
    assert len(runner.llm_calls("t1")) == 1


def test_nodes_see_no_llm_when_none_is_configured(store: Store) -> None:
    seen: list[Any] = []
    flow = Flow(
        name="job",
        state=Job,
        start="plan",
        nodes={"plan": lambda s, ctx: seen.append(ctx.llm)},
        routes={"plan": END},
    )
    Runner(flow, store=store).start("t1")
    assert seen == [None]


def test_llm_calls_of_an_unknown_thread_is_a_typed_error(store: Store) -> None:
    with pytest.raises(ThreadNotFoundError):
        Runner(job_flow(), store=store).llm_calls("missing")
