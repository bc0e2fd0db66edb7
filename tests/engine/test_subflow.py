"""``Subflow``: a flow as a node of another. The child's steps are checkpoints of the parent's
thread, a gate inside the child pauses the parent and ``resume`` on the parent answers it;
crashes, fork, update_state and replay see the child at any depth."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Flow,
    Gate,
    Map,
    NodeError,
    Parallel,
    Route,
    RouteTable,
    Runner,
    Subflow,
    append,
    field,
)
from flowkit.diagram import to_dot, to_mermaid
from flowkit.errors import FlowDefinitionError, InvalidResumeInputError, NotWaitingError
from flowkit.llm import ReplayLLM
from flowkit.stores import JsonFileStore, MemoryStore, Store, SubRecord
from flowkit.testing import ScriptedLLM, capture_events


class Review(BaseModel):
    text: str = ""
    notes: Annotated[list[str], append] = []
    approved: bool = False
    error: NodeError | None = None


class Approve(BaseModel):
    approved: bool


class Doc(BaseModel):
    text: str = ""
    log: Annotated[list[str], append] = []
    approved: bool = False
    verdict: str = ""
    error: NodeError | None = None


class Crash(BaseException):
    """Stands for the process dying: nothing in the engine catches it."""


def check(state: Review) -> dict[str, Any]:
    return {"notes": [f"checked {state.text}"]}


def review_flow(check_fn: Any = check) -> Flow:
    return Flow(
        name="review",
        state=Review,
        start="check",
        nodes={"check": check_fn, "tidy": lambda s: {"notes": ["tidy"]}},
        gates={"approve": Approve},
        routes={"check": "approve", "approve": "tidy", "tidy": END},
    )


def doc_flow(child: Flow | None = None, **routes: Any) -> Flow:
    return Flow(
        name="doc",
        state=Doc,
        start="draft",
        nodes={
            "draft": lambda s: {"text": "hello", "log": ["draft"]},
            "review": Subflow(
                child or review_flow(),
                input=lambda s: {"text": s.text},
                output=lambda parent, child: {
                    "approved": child.approved,
                    "verdict": f"{parent.text}: {len(child.notes)} notes",
                },
                writes=["approved", "verdict"],
            ),
            "publish": lambda s: {"log": ["publish"]},
        },
        routes={"draft": "review", "review": routes.get("review", "publish"), "publish": END},
    )


# -- a gate inside the child, answered through the parent -----------------------------------


def test_a_gate_inside_the_child_pauses_the_parent_and_resume_answers_it(store: Store) -> None:
    runner = Runner(doc_flow(), store=store)
    waiting = runner.start("t")
    assert (waiting.status, waiting.node, waiting.gates) == (
        "waiting",
        "review",
        ("review/approve",),
    )
    assert waiting.state.log == ["draft"]  # the parent's state: the child's is its own
    assert runner.get_state("t") == replace(waiting, run_id=None)
    done = runner.resume("t", {"approved": True}, gate="review/approve")
    assert done.status == "done" and done.gates == ()
    assert done.state.model_dump() == {
        "text": "hello",
        "log": ["draft", "publish"],
        "approved": True,
        "verdict": "hello: 2 notes",
        "error": None,
    }


def test_a_plain_gate_is_named_by_itself_in_gates() -> None:
    result = Runner(review_flow()).start("t", {"text": "x"})
    assert (result.node, result.gates) == ("approve", ("approve",))


def test_wrong_input_or_gate_for_the_child_gate_is_refused_and_nothing_moves(
    store: Store,
) -> None:
    runner = Runner(doc_flow(), store=store)
    version = runner.start("t").version
    with pytest.raises(InvalidResumeInputError):
        runner.resume("t", {"approved": "not a bool"})
    with pytest.raises(NotWaitingError, match="review/approve"):
        runner.resume("t", {"approved": True}, gate="approve_all")
    assert runner.get_state("t").version == version
    assert runner.resume("t", {"approved": False}).done


def test_history_shows_the_childs_steps_by_path(store: Store) -> None:
    runner = Runner(doc_flow(), store=store)
    runner.start("t")
    runner.resume("t", {"approved": True})
    rows = [(c.version, c.kind, c.node, c.next, c.status) for c in runner.history("t")]
    assert rows == [
        (0, "start", None, "draft", "pending"),
        (1, "step", "draft", "review", "pending"),
        (2, "start", "review", "review/check", "pending"),
        (3, "step", "review/check", "review/approve", "waiting"),
        (4, "input", "review/approve", "review/tidy", "pending"),
        (5, "step", "review/tidy", "review/__end__", "pending"),
        (6, "step", "review", "publish", "pending"),
        (7, "step", "publish", END, "done"),
    ]
    history = runner.history("t")
    assert history[3].child_state is not None and history[3].child_state.notes == ["checked hello"]
    assert history[4].update == {"approved": True}
    assert history[3].state.log == ["draft"] and history[6].child_state is None


def test_the_parent_journal_holds_the_child_records_wrapped() -> None:
    store = MemoryStore()
    runner = Runner(doc_flow(), store=store)
    runner.start("t")
    kinds = [r.kind for r in store.records("t")]
    assert kinds == ["start", "step", "sub", "sub"]
    last = store.records("t")[-1]
    assert isinstance(last, SubRecord) and last.record.kind == "step" and last.node == "review"


# -- crash safety -----------------------------------------------------------------------------


def test_a_new_process_resumes_a_child_waiting_at_its_gate(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        Runner(doc_flow(), store=store).start("t")
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(doc_flow(), store=store)
        assert runner.get_state("t").gates == ("review/approve",)
        done = runner.resume("t", {"approved": True})
    assert done.done and done.state.verdict == "hello: 2 notes"


@pytest.mark.parametrize("snapshots", [False, True])
def test_a_crash_mid_child_resumes_mid_child(tmp_path: Path, snapshots: bool) -> None:
    calls: list[str] = []

    def tidy_once(state: Review) -> dict[str, Any]:
        calls.append("tidy")
        if len(calls) == 1:
            raise Crash
        return {"notes": ["tidy"]}

    child = Flow(
        name="review",
        state=Review,
        start="check",
        nodes={"check": check, "tidy": tidy_once},
        gates={"approve": Approve},
        routes={"check": "approve", "approve": "tidy", "tidy": END},
    )
    ratio = {"min_snapshot_bytes": 1, "snapshot_ratio": 0} if snapshots else {}
    with JsonFileStore(tmp_path, fsync=False, **ratio) as store:  # type: ignore[arg-type]
        runner = Runner(doc_flow(child), store=store)
        runner.start("t")
        with pytest.raises(Crash):
            runner.resume("t", {"approved": True})
        if snapshots:
            snap = store.load("t").snapshot
            assert snap is not None and snap.sub is not None and snap.sub["next"] == "tidy"
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(doc_flow(child), store=store)
        stuck = runner.get_state("t")
        assert (stuck.status, stuck.node) == ("pending", "review")
        done = runner.resume("t")
    assert done.done and done.state.approved and calls == ["tidy", "tidy"]


# -- fork and update_state --------------------------------------------------------------------


def test_a_fork_at_every_checkpoint_resumes_to_the_same_end(store: Store) -> None:
    runner = Runner(doc_flow(), store=store)
    runner.start("t")
    final = runner.resume("t", {"approved": True}).state
    for checkpoint in runner.history("t"):
        fork = runner.fork("t", f"f{checkpoint.version}", at=checkpoint.version)
        assert fork.state == checkpoint.state
        while not fork.done:
            fork = runner.resume(fork.thread_id, {"approved": True} if fork.waiting else None)
        assert fork.state == final, checkpoint.version


def test_a_fork_while_the_child_waits_survives_a_new_process(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(doc_flow(), store=store)
        runner.start("t")
        fork = runner.fork("t", "f")
        assert fork.gates == ("review/approve",)
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(doc_flow(), store=store)
        assert runner.get_state("f").gates == ("review/approve",)
        assert runner.resume("f", {"approved": True}).state.approved
        assert runner.get_state("t").waiting  # the original is untouched


def test_update_state_on_the_parent_while_the_child_waits(store: Store) -> None:
    runner = Runner(doc_flow(), store=store)
    runner.start("t")
    patched = runner.update_state("t", {"text": "edited"}, reason="typo")
    assert patched.gates == ("review/approve",) and patched.state.text == "edited"
    # A fresh runner replays the patch and keeps the waiting child.
    assert Runner(doc_flow(), store=store).get_state("t").gates == ("review/approve",)
    done = runner.resume("t", {"approved": True})
    assert done.state.verdict == "edited: 2 notes"  # the output saw the patched parent
    assert [c.kind for c in runner.history("t")][4] == "patch"


def test_update_state_with_goto_leaves_the_child_behind(store: Store) -> None:
    runner = Runner(doc_flow(), store=store)
    runner.start("t")
    moved = runner.update_state("t", goto="publish")
    assert moved.status == "pending" and moved.gates == ()
    assert Runner(doc_flow(), store=store).get_state("t").status == "pending"
    assert runner.resume("t").state.log == ["draft", "publish"]


# -- failures ---------------------------------------------------------------------------------


def test_a_child_failure_is_the_node_failure_and_resume_continues_inside(store: Store) -> None:
    broken = [True]

    def flaky(state: Review) -> dict[str, Any]:
        if broken[0]:
            raise ValueError("no reviewer")
        return check(state)

    flow = Flow(
        name="doc",
        state=Doc,
        start="review",
        nodes={"review": Subflow(review_flow(flaky), writes=["approved"])},
        routes={"review": END},
        error_field=None,
    )
    runner = Runner(flow, store=store)
    failed = runner.start("t", {"text": "x"})
    assert (failed.status, failed.node) == ("failed", "review")
    assert failed.error is not None and failed.error.node == "review"
    assert failed.error.message == "review/check: no reviewer"
    assert Runner(flow, store=store).get_state("t").error == failed.error
    broken[0] = False
    assert runner.resume("t").gates == ("review/approve",)
    assert runner.resume("t", {"approved": True}).state.approved


def test_a_child_failure_is_routed_by_the_parents_table(store: Store) -> None:
    def fail(state: Review) -> dict[str, Any]:
        raise ValueError("no reviewer")

    table = RouteTable("after_review", [Route(field("error"), "publish")], default=END)
    flow = doc_flow(review_flow(fail), review=table)
    result = Runner(flow, store=store).start("t")
    assert result.done and result.state.log == ["draft", "publish"]
    assert result.state.error is not None and result.state.error.node == "review"


def test_a_child_ending_in_a_failed_final_state_fails_the_node() -> None:
    child = Flow(
        name="reject",
        state=Review,
        start="check",
        nodes={"check": check},
        finals={"rejected": "failed"},
        routes={"check": "rejected"},
    )
    result = Runner(doc_flow(child)).start("t")
    assert result.status == "failed" and result.error is not None
    assert result.error.type == "SubflowFailed"


def test_an_input_function_that_raises_is_the_node_failure() -> None:
    def bad_input(state: Doc) -> dict[str, Any]:
        raise KeyError("text")

    flow = Flow(
        name="doc",
        state=Doc,
        start="review",
        nodes={"review": Subflow(review_flow(), input=bad_input)},
        routes={"review": END},
        error_field=None,
    )
    result = Runner(flow).start("t")
    assert result.status == "failed" and result.error is not None
    assert result.error.node == "review"


# -- nesting, async, events, diagrams ---------------------------------------------------------


def nested_flow() -> Flow:
    middle = Flow(
        name="middle",
        state=Review,
        start="inner",
        nodes={
            "inner": Subflow(review_flow(), writes=["approved", "notes"]),
            "sign": lambda s: {"notes": ["signed"]},
        },
        routes={"inner": "sign", "sign": END},
    )
    return doc_flow(middle)


def test_a_gate_two_levels_down(store: Store) -> None:
    runner = Runner(nested_flow(), store=store)
    waiting = runner.start("t")
    assert waiting.gates == ("review/inner/approve",)
    assert Runner(nested_flow(), store=store).get_state("t").gates == waiting.gates
    runner.fork("t", "f")
    done = runner.resume("t", {"approved": True}, gate="review/inner/approve")
    assert done.done and done.state.approved
    # middle: the inner child's [checked, tidy] appended to its own empty notes, then signed
    assert done.state.verdict == "hello: 3 notes"
    assert runner.resume("f", {"approved": True}).state == done.state
    nodes = [c.node for c in runner.history("t")]
    assert "review/inner/check" in nodes and "review/inner" in nodes and "review/sign" in nodes


def test_async_runs_the_child_too() -> None:
    async def acheck(state: Review) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"notes": ["async"]}

    runner = Runner(doc_flow(review_flow(acheck)))

    async def scenario() -> Any:
        await runner.astart("t")
        return await runner.aresume("t", {"approved": True})

    assert asyncio.run(scenario()).state.verdict == "hello: 2 notes"


def test_events_name_child_nodes_by_path_and_the_wait_by_gate_path() -> None:
    runner = Runner(doc_flow())
    with capture_events(runner) as events:
        runner.start("t")
    finished = [e.node for e in events if e.kind == "node_finished"]
    assert finished == ["draft", "review/check"]
    waits = [e.gate for e in events if e.kind == "waiting"]
    assert waits == ["review/approve"]
    states = [e for e in events if e.kind == "state_changed"]
    assert all(isinstance(e.state, Doc) for e in states)


def test_diagrams_name_the_child_flow() -> None:
    assert 'review[["review (subflow review)"]]' in to_mermaid(doc_flow())
    assert '"review" [shape=component, label="review (subflow review)"]' in to_dot(doc_flow())


def test_bad_definitions_are_refused_when_made() -> None:
    with pytest.raises(TypeError, match="needs a Flow"):
        Subflow(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output= is a function"):
        Subflow(review_flow(), output="approved")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Runner"):
        Subflow(review_flow())(Doc())
    with pytest.raises(FlowDefinitionError, match="copies `verdict` from its child `review`"):
        Flow(
            name="doc",
            state=Doc,
            start="review",
            nodes={"review": Subflow(review_flow(), writes=["verdict"])},
            routes={"review": END},
        )


def test_llm_calls_of_the_child_are_journaled_and_replayable(store: Store) -> None:
    def ask(state: Review, ctx: Context) -> dict[str, Any]:
        return {"notes": [ctx.llm.complete([{"role": "user", "content": "check it"}]).text]}

    flow = doc_flow(review_flow(ask))
    llm = ScriptedLLM([("check it", "looks fine")])
    runner = Runner(flow, store=store, llm=llm)
    runner.start("t")
    calls = runner.llm_calls("t")
    assert len(calls) == 1 and len(llm.calls) == 1
    runner.fork("t", "f")
    Runner(flow, store=store, llm=llm).resume("f", {"approved": True})
    assert len(llm.calls) == 1, "resuming a fork never asks again for a finished child step"
    replayed = Runner(flow, store=store, llm=ReplayLLM(calls)).start("r")
    assert replayed.gates == ("review/approve",)


# -- replaying the journal gives the live state -----------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(st.text(max_size=5), min_size=1, max_size=3),
    answers=st.lists(st.booleans(), min_size=3, max_size=3),
    snapshot_every=st.booleans(),
)
def test_replay_gives_the_live_state_at_every_call(
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[str],
    answers: list[bool],
    snapshot_every: bool,
) -> None:
    """Several children in a row (a loop back through the subflow), each with a gate: after
    every call a fresh runner reading only the journal stands where the live one stands."""

    loop = Flow(
        name="loop",
        state=Doc,
        start="review",
        nodes={
            "review": Subflow(
                review_flow(),
                input=lambda s: {"text": s.text},
                output=lambda p, c: {"log": [f"{c.text}:{c.approved}"], "approved": c.approved},
            ),
            "next": lambda s: {"text": s.text + "+"},
        },
        routes={
            "review": RouteTable("again", [Route(field("approved").eq(True), END)], default="next"),
            "next": "review",
        },
    )
    ratio = {"min_snapshot_bytes": 1, "snapshot_ratio": 0} if snapshot_every else {}
    path = tmp_path_factory.mktemp("replay")
    with JsonFileStore(path, fsync=False, **ratio) as store:  # type: ignore[arg-type]
        live = Runner(loop, store=store)
        result = live.start("t", {"text": texts[0]})
        for answer in [*answers, True]:
            again = Runner(loop, store=store).get_state("t")
            assert (again.state, again.status, again.gates, again.version) == (
                result.state,
                result.status,
                result.gates,
                result.version,
            )
            if result.done:
                break
            result = live.resume("t", {"approved": answer})
        assert Runner(loop, store=store).history("t")[-1].state == result.state


def test_a_map_inside_the_child_checkpoints_its_calls_in_the_parent(tmp_path: Path) -> None:
    calls: list[str] = []

    def shout(state: Review, word: str) -> dict[str, Any]:
        calls.append(word)
        if word == "c" and calls.count("c") == 1:
            raise KeyboardInterrupt  # the process dies mid-map (as test_parallel does)
        return {"notes": [word.upper()]}

    child = Flow(
        name="shout",
        state=Review,
        start="each",
        nodes={"each": Map(shout, over=lambda s: list(s.text), concurrency=1)},
        routes={"each": END},
    )
    flow = Flow(
        name="doc",
        state=Doc,
        start="review",
        nodes={"review": Subflow(child, output=lambda p, c: {"verdict": ",".join(c.notes)})},
        routes={"review": END},
    )
    with JsonFileStore(tmp_path, fsync=False) as store, pytest.raises(KeyboardInterrupt):
        Runner(flow, store=store).start("t", {"text": "abcd"})
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(flow, store=store)
        assert runner.get_state("t").node == "review"
        done = runner.resume("t")
        kinds = [c.kind for c in runner.history("t")]
    assert done.state.verdict == "A,B,C,D" and calls == ["a", "b", "c", "c", "d"]
    assert kinds.count("item") == 4 and kinds.count("join") == 1


def test_stream_values_show_parent_states_only() -> None:
    runner = Runner(doc_flow())
    *states, paused = list(runner.stream("t", {}))
    assert states and all(isinstance(s, Doc) for s in states)
    assert paused.kind == "paused"  # the stream ends with the pause inside the child
    result = runner.stream("t", {"approved": True})
    assert all(isinstance(s, Doc) for s in result) and result.result is not None
    assert result.result.done


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


class Sign(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None
    notes: Annotated[list[str], append] = []


def test_gate_branches_of_a_parallel_inside_the_child_are_answered_by_path(store: Store) -> None:
    sign_off = Flow(
        name="sign_off",
        state=Sign,
        start="review",
        nodes={
            "review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)}),
            "sum_up": lambda s: {"notes": [f"legal={s.legal_ok} tech={s.tech_ok}"]},
        },
        routes={"review": "sum_up", "sum_up": END},
    )
    flow = Flow(
        name="doc",
        state=Doc,
        start="reviews",
        nodes={"reviews": Subflow(sign_off, output=lambda p, c: {"log": list(c.notes)})},
        routes={"reviews": END},
    )
    runner = Runner(flow, store=store)
    first = runner.start("t")
    assert (first.node, first.gates) == ("reviews", ("reviews/legal", "reviews/tech"))
    second = runner.resume("t", {"legal_ok": True}, gate="reviews/legal")
    assert second.gates == ("reviews/tech",)
    assert Runner(flow, store=store).get_state("t").gates == second.gates
    fork = runner.fork("t", "f")
    done = runner.resume("t", {"reviews/tech": {"tech_ok": False}})
    assert done.done and done.state.log == ["legal=True tech=False"]
    assert runner.resume("f", {"tech_ok": False}, gate=fork.gates[0]).state == done.state
