"""Migrations for threads paused inside a Map, a Parallel or a Subflow: the parent's state
and position are upgraded; finished calls and the child's own records are kept as recorded,
and a child flow that changed is a typed error (docs/migrations.md, "Limits")."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Map, Migration, NodeError, Parallel, Runner, Subflow, append
from flowkit.errors import IncompatibleThreadError
from flowkit.stores import JsonFileStore, MemoryStore, Store


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return JsonFileStore(tmp_path / "store", fsync=False)


# -- Parallel with gate branches ------------------------------------------------------------------


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


class Review(BaseModel):
    legal_ok: bool = False
    tech_ok: bool = False
    notes: Annotated[list[str], append] = []


class ReviewV2(Review):
    owner: str


def lint(state: Any) -> dict[str, Any]:
    return {"notes": ["linted"]}


def publish(state: Any) -> dict[str, Any]:
    return {"notes": [f"published by {getattr(state, 'owner', '?')}"]}


def _reviews(state: type[BaseModel], node: str, **versioning: Any) -> Flow:
    return Flow(
        name="reviews",
        state=state,
        start=node,
        nodes={
            node: Parallel({"legal": Gate(Legal), "tech": Gate(Tech), "lint": lint}),
            "publish": publish,
        },
        routes={node: "publish", "publish": END},
        **versioning,
    )


def test_a_thread_waiting_at_parallel_gate_branches_is_migrated(store: Store) -> None:
    v1 = Runner(_reviews(Review, "review"), store=store)
    v1.start("doc")
    v1.resume("doc", {"legal_ok": True}, gate="legal")  # one branch answered, one open
    v2 = _reviews(
        ReviewV2,
        "checks",
        version=2,
        migrations=[Migration(to=2, positions={"review": "checks"}, fields={"owner": "desk-7"})],
    )
    runner = Runner(v2, store=store)
    paused = runner.get_state("doc")
    assert (paused.status, paused.node, paused.gates) == ("waiting", "checks", ("tech",))
    done = runner.resume("doc", {"tech_ok": True}, gate="tech")
    assert done.done
    assert done.state.legal_ok and done.state.tech_ok
    assert done.state.notes == ["linted", "published by desk-7"]


# -- Map with a failed call -----------------------------------------------------------------------


class Batch(BaseModel):
    sections: list[str] = []
    summaries: Annotated[list[str], append] = []


class BatchV2(Batch):
    language: str


BROKEN = {"on": True}


def summarise(state: Any, section: str) -> dict[str, Any]:
    if BROKEN["on"] and section == "b":
        raise RuntimeError("model down")
    return {"summaries": [section.upper()]}


def _batch(state: type[BaseModel], **versioning: Any) -> Flow:
    return Flow(
        name="batch",
        state=state,
        start="summarise",
        nodes={"summarise": Map(summarise, over=lambda s: s.sections)},
        routes={"summarise": END},
        **versioning,
    )


def test_a_failed_map_keeps_its_finished_calls_through_a_migration(store: Store) -> None:
    BROKEN["on"] = True
    failed = Runner(_batch(Batch), store=store).start("b1", {"sections": ["a", "b", "c"]})
    assert failed.status == "failed"
    BROKEN["on"] = False
    calls: list[str] = []

    def counting(state: Any, section: str) -> dict[str, Any]:
        calls.append(section)
        return summarise(state, section)

    v2 = Flow(
        name="batch",
        state=BatchV2,
        start="summarise",
        nodes={"summarise": Map(counting, over=lambda s: s.sections)},
        routes={"summarise": END},
        version=2,
        migrations=[Migration(to=2, fields={"language": "en"})],
    )
    done = Runner(v2, store=store).resume("b1")
    assert done.done and calls == ["b"]  # only the failed call runs again
    assert done.state.summaries == ["A", "B", "C"] and done.state.language == "en"


# -- Subflow waiting at a child gate -------------------------------------------------------------


class Approve(BaseModel):
    approved: bool


class Child(BaseModel):
    text: str = ""
    approved: bool = False


class ChildV2(Child):
    reviewer: str


def check(state: Child) -> dict[str, Any]:
    return {"text": state.text.strip()}


def _child(state: type[BaseModel] = Child) -> Flow:
    return Flow(
        name="review",
        state=state,
        start="check",
        nodes={"check": check},
        gates={"approve": Approve},
        routes={"check": "approve", "approve": END},
    )


class Article(BaseModel):
    text: str = ""
    approved: bool = False
    log: Annotated[list[str], append] = []


class ArticleV2(Article):
    section: str


def done_node(state: Any) -> dict[str, Any]:
    return {"log": ["published" if state.approved else "shelved"]}


def _article(
    state: type[BaseModel], node: str, child: Flow | None = None, **versioning: Any
) -> Flow:
    return Flow(
        name="article",
        state=state,
        start=node,
        nodes={
            node: Subflow(
                child or _child(),
                input=lambda parent: {"text": parent.text},
                writes=["approved"],
            ),
            "publish": done_node,
        },
        routes={node: "publish", "publish": END},
        **versioning,
    )


def test_a_thread_waiting_inside_a_subflow_is_migrated(store: Store) -> None:
    v1 = Runner(_article(Article, "review"), store=store)
    assert v1.start("a-1", {"text": " hello "}).gates == ("review/approve",)
    v2 = _article(
        ArticleV2,
        "editorial",
        version=2,
        migrations=[Migration(to=2, positions={"review": "editorial"}, fields={"section": "news"})],
    )
    runner = Runner(v2, store=store)
    paused = runner.get_state("a-1")
    assert (paused.status, paused.node, paused.gates) == (
        "waiting",
        "editorial",
        ("editorial/approve",),
    )
    done = runner.resume("a-1", {"approved": True}, gate="editorial/approve")
    assert done.done and done.state.log == ["published"] and done.state.section == "news"


def test_a_changed_child_flow_is_a_typed_error_that_says_so(store: Store) -> None:
    Runner(_article(Article, "review"), store=store).start("a-1", {"text": "x"})
    v2 = _article(
        ArticleV2,
        "review",
        child=_child(ChildV2),  # the child's state gained a required field
        version=2,
        migrations=[Migration(to=2, fields={"section": "news"})],
    )
    with pytest.raises(
        IncompatibleThreadError, match="Migrations change the parent only"
    ) as caught:
        Runner(v2, store=store).resume("a-1", {"approved": True})
    assert caught.value.thread_id == "a-1"


def test_an_errored_map_routed_by_its_table_is_read_back(store: Store) -> None:
    """A failed item's error dict survives the JSON fold (error fields are state too)."""

    class Guarded(Batch):
        error: NodeError | None = None

    class GuardedV2(Guarded):
        language: str

    from flowkit import RouteTable

    def table() -> RouteTable:
        return RouteTable("after", [], default=END)

    BROKEN["on"] = True
    v1 = Flow(
        name="guarded",
        state=Guarded,
        start="summarise",
        nodes={"summarise": Map(summarise, over=lambda s: s.sections)},
        routes={"summarise": table()},
    )
    first = Runner(v1, store=store).start("g", {"sections": ["a", "b"]})
    assert first.done and first.state.error is not None
    v2 = Flow(
        name="guarded",
        state=GuardedV2,
        start="summarise",
        nodes={"summarise": Map(summarise, over=lambda s: s.sections)},
        routes={"summarise": table()},
        version=2,
        migrations=[Migration(to=2, fields={"language": "en"})],
    )
    seen = Runner(v2, store=store).get_state("g")
    assert seen.state.error is not None and seen.state.error.type == first.state.error.type
    assert seen.state.summaries == ["A"]
    BROKEN["on"] = False
