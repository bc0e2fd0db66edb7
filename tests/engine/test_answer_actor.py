"""Who answered a pause: ``resume(..., actor=...)`` is kept with the answer, so ``history()``
names who answered each gate (a plain gate, a ``Parallel``'s gate branch, a gate inside a
``Subflow``, a child of a ``Map`` over a ``Subflow``), as it names who patched. An answer
without an actor is journaled byte for byte as before, and journals from before the field read.
On every shipped store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Map, Parallel, Runner, Subflow
from flowkit.errors import RunError
from flowkit.stores import JsonFileStore, Store
from flowkit.stores._jsonl import seal, unseal


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


class Doc(BaseModel):
    text: str = ""
    ok: bool = False
    legal_ok: bool = False


class Approve(BaseModel):
    ok: bool


class Legal(BaseModel):
    legal_ok: bool


APPROVAL = Flow(
    name="approval",
    state=Doc,
    start="draft",
    nodes={"draft": lambda s: {"text": "hello"}, "publish": lambda s: {}},
    gates={"approve": Approve},
    routes={"draft": "approve", "approve": "publish", "publish": END},
)

BRANCHES = Flow(
    name="branches",
    state=Doc,
    start="review",
    nodes={"review": Parallel({"legal": Gate(Legal), "tech": Gate(Approve)})},
    routes={"review": END},
)

CHILD = Flow(
    name="child",
    state=Doc,
    start="read",
    nodes={"read": lambda s: {"text": f"read {s.text}"}},
    gates={"approve": Approve},
    routes={"read": "approve", "approve": END},
)

PARENT = Flow(
    name="parent",
    state=Doc,
    start="review",
    nodes={"review": Subflow(CHILD, writes=["ok"])},
    routes={"review": END},
)


class Texts(BaseModel):
    texts: list[str] = ["a", "b"]


EACH = Flow(
    name="each",
    state=Texts,
    start="each",
    nodes={
        "each": Map(
            Subflow(CHILD, input=lambda s, text: {"text": text}, output=lambda p, c: {}),
            over=lambda s: s.texts,
        )
    },
    routes={"each": END},
)


def test_history_names_who_answered_a_gate(store: Store) -> None:
    runner = Runner(APPROVAL, store=store)
    runner.start("t")
    runner.resume("t", {"ok": True}, actor="alice")
    answer = next(c for c in Runner(APPROVAL, store=store).history("t") if c.kind == "input")
    assert (answer.node, answer.actor) == ("approve", "alice")


def test_aresume_names_who_answered_too(store: Store) -> None:
    runner = Runner(APPROVAL, store=store)

    async def scenario() -> None:
        await runner.astart("t")
        await runner.aresume("t", {"ok": True}, gate="approve", actor="bob")

    asyncio.run(scenario())
    assert [c.actor for c in runner.history("t") if c.kind == "input"] == ["bob"]


def test_a_stream_that_answers_names_who_answered(store: Store) -> None:
    runner = Runner(APPROVAL, store=store)
    runner.start("t")
    runner.start("u")
    list(runner.stream("t", {"ok": True}, actor="carol"))

    async def scenario() -> None:
        async for _ in runner.astream("u", {"ok": True}, actor="dave"):
            pass

    asyncio.run(scenario())
    for thread, actor in (("t", "carol"), ("u", "dave")):
        assert [c.actor for c in runner.history(thread) if c.kind == "input"] == [actor]


def test_each_gate_branch_of_a_parallel_names_its_own_answerer(store: Store) -> None:
    runner = Runner(BRANCHES, store=store)
    runner.start("t")
    runner.resume("t", {"legal_ok": True}, gate="legal", actor="ada")
    runner.resume("t", {"ok": True}, gate="tech", actor="grace")
    items = [c for c in runner.history("t") if c.kind == "item"]
    assert [(c.node, c.actor) for c in items] == [("review", "ada"), ("review", "grace")]


def test_several_answers_in_one_call_all_name_the_answerer(store: Store) -> None:
    runner = Runner(BRANCHES, store=store)
    runner.start("t")
    runner.resume("t", {"legal": {"legal_ok": True}, "tech": {"ok": False}}, actor="ada")
    assert [c.actor for c in runner.history("t") if c.kind == "item"] == ["ada", "ada"]


def test_a_gate_inside_a_subflow_names_its_answerer_by_path(store: Store) -> None:
    runner = Runner(PARENT, store=store)
    runner.start("t")
    runner.resume("t", {"ok": True}, gate="review/approve", actor="linus")
    answer = next(c for c in runner.history("t") if c.kind == "input")
    assert (answer.node, answer.actor) == ("review/approve", "linus")


def test_the_child_thread_of_a_map_over_a_subflow_names_its_answerer(store: Store) -> None:
    runner = Runner(EACH, store=store)
    runner.start("t")
    runner.resume("t", {"each[0]/approve": {"ok": True}}, actor="ken")
    children = [tid for tid in _threads(store) if tid != "t"]
    answered = [
        c.actor
        for tid in children
        for c in Runner(CHILD, store=store).history(tid)
        if c.kind == "input"
    ]
    assert answered == ["ken"]


def test_an_answer_without_actor_names_nobody(store: Store) -> None:
    runner = Runner(APPROVAL, store=store)
    runner.start("t")
    runner.resume("t", {"ok": True})
    assert [c.actor for c in runner.history("t") if c.kind == "input"] == [None]


def test_an_actor_that_is_not_text_is_refused_and_nothing_moves(store: Store) -> None:
    runner = Runner(APPROVAL, store=store)
    waiting = runner.start("t")
    with pytest.raises(RunError, match="`actor` is text"):
        runner.resume("t", {"ok": True}, actor=42)  # type: ignore[arg-type]
    assert runner.get_state("t").version == waiting.version


def test_the_journal_line_carries_the_actor_only_when_one_is_given(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as files:
        runner = Runner(APPROVAL, store=files)
        for tid, actor in (("said", "alice"), ("unsaid", None)):
            runner.start(tid)
            runner.resume(tid, {"ok": True}, actor=actor)
    said, unsaid = (_input_line(tmp_path, tid)[1] for tid in ("said", "unsaid"))
    assert unseal(said)[0].endswith(b',"actor":"alice"}')
    assert b'"actor"' not in unsaid  # the bytes of an answer as flowkit always wrote them


def test_a_journal_from_before_the_actor_field_reads(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as files:
        runner = Runner(APPROVAL, store=files)
        runner.start("t")
        runner.resume("t", {"ok": True}, actor="alice")
    journal, line = _input_line(tmp_path, "t")
    body, intact = unseal(line)
    assert intact
    old = seal(body.replace(b',"actor":"alice"', b""))  # as a flowkit before the field wrote it
    journal.write_bytes(journal.read_bytes().replace(line, old))
    with JsonFileStore(tmp_path, fsync=False) as files:
        history = Runner(APPROVAL, store=files).history("t")
    assert [(c.kind, c.actor) for c in history if c.kind == "input"] == [("input", None)]
    assert history[-1].state.ok is True


def _input_line(folder: Path, thread_id: str) -> tuple[Path, bytes]:
    journal = folder / "threads" / thread_id / "journal.jsonl"
    lines = journal.read_bytes().splitlines()
    return journal, next(line for line in lines if b'"kind":"input"' in line)


def _threads(store: Store) -> list[str]:
    return [t.thread_id for t in store.list_threads().threads]
