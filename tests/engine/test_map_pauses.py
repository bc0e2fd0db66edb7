"""``Map`` calls that ask: a map of 20 items where 7 calls ask a person (``ctx.ask``), answered
by pause id in three calls, with the process SIGKILLed between the answers (JSON-file store
and PostgreSQL: each step in a child process; MemoryStore: a new ``Runner`` on the same store).
Nothing is asked or run twice (calls counted in a file the processes share), the join merges
all 20 in item order, and refused answers save nothing. A crash while some calls have asked
and others still run re-runs only the calls that neither finished nor asked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import _map_pauses_worker as worker
import pytest
from _pg import fresh_schema, require_postgres
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Context, Flow, Gate, Map, Pause, Runner, Waiting, append, node
from flowkit.errors import (
    ConflictError,
    InvalidResumeInputError,
    NotWaitingError,
    UnknownGateError,
    UnstorableValueError,
)
from flowkit.stores import ItemRecord, MemoryStore, PauseRecord, Store

WORKER = Path(__file__).with_name("_map_pauses_worker.py")
ITEMS, ASKING = worker.ITEMS, worker.ASKING
IDS = tuple(worker.pause_id(item) for item in ASKING)


def verdict(item: str, ok: bool = True) -> dict[str, Any]:
    return {"ok": ok, "note": f"checked {item}"}


def answers(*items: str) -> dict[str, Any]:
    return {worker.pause_id(item): verdict(item, ok=item != "i05") for item in items}


def expected_results() -> list[str]:
    """The join's merge: one result per item, in item order, the asked ones from answers."""
    return [
        f"{'no' if item == 'i05' else 'ok'}: checked {item}" if item in ASKING else f"{item}: auto"
        for item in ITEMS
    ]


# -- the stores, and a way to run one step as a (killed) process ----------------------------------


@contextmanager
def backend(kind: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Where the thread lives: a spec a child process can open (``memory``: this process)."""
    if kind == "postgres":
        require_postgres()
        with fresh_schema() as (url, schema):
            yield {"kind": "postgres", "url": url, "schema": schema}
    elif kind == "jsonfile":
        yield {"kind": "jsonfile", "root": str(tmp_path / "store")}
    else:
        yield {"kind": "memory", "store": MemoryStore()}


# A child process per step for the file store and PostgreSQL: slow, like the other crash tests.
PROCESSES = [pytest.param(kind, marks=pytest.mark.slow) for kind in ("jsonfile", "postgres")]


class Steps:
    """Runs each ``start``/``resume`` as a new process that is SIGKILLed once it has replied
    (memory: a new ``Runner`` on the same store), and reads the thread in this process."""

    def __init__(self, spec: dict[str, Any], tmp_path: Path) -> None:
        self.spec = spec
        self.calls = tmp_path / "calls.log"
        self.stderr = tmp_path / "children.log"
        self.pids: list[int] = []
        self._opened: list[Store] = []

    def store(self) -> Store:
        """A new store object on the thread's store (the one object for memory), as a later
        process would open it; closed with ``close``."""
        if self.spec["kind"] == "memory":
            store: Store = self.spec["store"]
            return store
        self._opened.append(worker.open_store(self.spec))
        return self._opened[-1]

    def close(self) -> None:
        for store in self._opened:
            store.close()  # type: ignore[attr-defined]

    def run(self, op: str, value: Any = None, gate: str | None = None) -> dict[str, Any]:
        if self.spec["kind"] == "memory":
            runner = Runner(worker.flow(self.calls), store=self.spec["store"])
            result = (
                runner.start("t", worker.START)
                if op == "start"
                else runner.resume("t", value, gate=gate)
            )
            return worker.reply(result)
        child = self.spawn({"op": op, "input": value, "gate": gate})
        with child:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line, f"the child died\n{self.stderr.read_text()}"
            self.kill(child)
        return dict(json.loads(line))

    def spawn(self, job: dict[str, Any]) -> subprocess.Popen[str]:
        store = {k: v for k, v in self.spec.items() if k != "store"}
        job = {"store": store, "thread": "t", "calls": str(self.calls), **job}
        with self.stderr.open("a") as stderr:
            child = subprocess.Popen(
                [sys.executable, str(WORKER), json.dumps(job)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.pids.append(child.pid)
        return child

    @staticmethod
    def kill(child: subprocess.Popen[str]) -> None:
        child.send_signal(signal.SIGKILL)
        assert child.wait(60) == -signal.SIGKILL

    def lines(self, pid: int | None = None) -> list[str]:
        text = self.calls.read_text() if self.calls.exists() else ""
        rows = [line.split(" ", 1) for line in text.splitlines()]
        return [rest for who, rest in rows if pid is None or who == str(pid)]

    def calls_per_item(self, pid: int | None = None) -> Counter[str]:
        return Counter(line.split()[1] for line in self.lines(pid) if line.startswith("call "))

    def wait_for(self, pid: int, what: str, count: int, child: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + 120
        while sum(1 for line in self.lines(pid) if line.startswith(what)) < count:
            assert child.poll() is None, f"the child exited\n{self.stderr.read_text()}"
            assert time.monotonic() < deadline, f"the child never wrote {count} {what!r} lines"
            time.sleep(0.02)

    def lease_given_up(self) -> None:
        """Wait until the thread's lock is free again after a kill mid-run: at once for the
        file store (the lock dies with the process), once the lease expired on PostgreSQL."""
        store = self.store()
        deadline = time.monotonic() + 120
        while True:
            try:
                with store.lock("t"):
                    return
            except ConflictError:
                assert time.monotonic() < deadline, "the killed child's lease never expired"
                time.sleep(0.1)

    def runner(self) -> Runner[Any]:
        """A runner in this process, on a new store object (a later process's view)."""
        return Runner(worker.flow(self.calls), store=self.store())


@pytest.fixture(params=["memory", *PROCESSES])
def steps(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Steps]:
    with backend(request.param, tmp_path) as spec:
        each = Steps(spec, tmp_path)
        yield each
        each.close()


@pytest.fixture(params=PROCESSES)
def process_steps(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Steps]:
    with backend(request.param, tmp_path) as spec:
        each = Steps(spec, tmp_path)
        yield each
        each.close()


def checkpointed(store: Store) -> tuple[set[int], set[int]]:
    """The calls the journal holds: (finished, asked and still open), by item index."""
    finished = {r.index for r in store.records("t") if isinstance(r, ItemRecord)}
    asked: set[int] = set()
    for record in store.records("t"):
        if isinstance(record, PauseRecord):
            asked |= {int(e["index"]) for e in (record.pauses or {}).values() if "index" in e}
    return finished, asked - finished


# -- 20 items, 7 ask, answered in 3 calls, killed between answers ---------------------------------


def test_seven_of_twenty_calls_ask_and_are_answered_in_three_calls_across_kills(
    steps: Steps,
) -> None:
    first = steps.run("start")
    # Every call ran once; the 7 that asked wait, in item order, each with its question.
    assert (first["status"], first["node"]) == ("waiting", "check")
    assert first["pauses"] == [[worker.pause_id(i), worker.question(i)] for i in ASKING]
    assert steps.calls_per_item() == Counter(ITEMS)

    # Refused, with nothing saved, read and tried from another process (this one).
    runner = steps.runner()
    before = runner.get_state("t")
    assert tuple(p.id for p in before.pauses) == before.gates == IDS
    assert before.payload is None  # several open
    refusals: list[tuple[Any, dict[str, Any], type[Exception]]] = [
        (verdict("i02"), {}, NotWaitingError),  # a bare answer, 7 open
        (verdict("i02"), {"gate": "nope"}, UnknownGateError),
        (verdict("i02"), {"gate": "check[i04]"}, NotWaitingError),  # its call did not ask
        ({**answers("i02", "i03"), "check[i05]": {"ok": "perhaps"}}, {}, InvalidResumeInputError),
        ({**answers("i02", "i03"), "check[i05]": {"ok": True, "nte": "x"}}, {},
         InvalidResumeInputError),
    ]  # fmt: skip
    for value, kwargs, error in refusals:
        with pytest.raises(error):
            runner.resume("t", value, **kwargs)
    after = steps.runner().get_state("t")
    assert (after.version, after.pauses) == (before.version, before.pauses)

    second = steps.run("resume", answers("i02", "i03", "i05"))
    assert second["status"] == "waiting"
    assert [p[0] for p in second["pauses"]] == [worker.pause_id(i) for i in ASKING[3:]]
    third = steps.run("resume", answers("i08", "i13"))
    assert [p[0] for p in third["pauses"]] == [worker.pause_id(i) for i in ASKING[5:]]
    last = steps.run("resume", answers("i17", "i19"))
    assert (last["status"], last["node"], last["pauses"]) == ("done", END, [])

    done = steps.runner().get_state("t")
    assert done.state.results == expected_results()  # all 20, in item order
    assert done.state.asked == list(ASKING)  # what each call saved with its question
    assert done.state.summary == "20 results, 7 asked"
    # Nothing was asked or run twice, whatever process answered.
    assert steps.calls_per_item() == Counter(ITEMS)
    assert sum(1 for line in steps.lines() if line == "apply") == 7
    records = steps.store().records("t")
    questions = [r for r in records if isinstance(r, PauseRecord) and r.status == "pending"]
    assert len(questions) == 7  # each question journaled once
    items = [r for r in records if isinstance(r, ItemRecord)]
    assert sorted(r.index for r in items) == list(range(20))
    assert {r.label: r.input for r in items if r.input is not None} == {
        item: verdict(item, ok=item != "i05") for item in ASKING
    }
    if steps.spec["kind"] != "memory":
        assert len(steps.pids) == 4  # four processes, each killed after its reply


def test_a_crash_while_calls_ask_and_run_reruns_only_calls_that_neither_finished_nor_asked(
    process_steps: Steps,
) -> None:
    steps = process_steps
    # Calls from item 9 on hang: items 0-8 finish or ask (2, 3, 5, 8), 9-11 are running.
    child = steps.spawn({"op": "start", "hang_from": 9})
    with child:
        steps.wait_for(child.pid, "hang ", worker.CONCURRENCY, child)
        store = steps.store()
        deadline = time.monotonic() + 120
        while set().union(*checkpointed(store)) != set(range(9)):
            assert time.monotonic() < deadline, f"never checkpointed: {checkpointed(store)}"
            time.sleep(0.02)
        steps.kill(child)
    finished, asked = checkpointed(steps.store())
    assert (finished, asked) == ({0, 1, 4, 6, 7}, {2, 3, 5, 8})
    state = steps.runner().get_state("t")
    assert (state.status, state.node, state.state.results) == ("pending", "check", [])

    resumed = steps.run("resume")  # a new process runs the map on
    rerun = steps.calls_per_item(steps.pids[-1])
    assert rerun == Counter(ITEMS[9:])  # the running and the unstarted calls, once each
    assert resumed["pauses"] == [[worker.pause_id(i), worker.question(i)] for i in ASKING]
    assert steps.calls_per_item() == Counter(ITEMS) + Counter(ITEMS[9:12])

    done = steps.run("resume", answers(*ASKING))
    assert done["status"] == "done"
    assert steps.runner().get_state("t").state.results == expected_results()


def test_a_crash_while_several_answers_are_made_saves_none_and_loses_nothing(
    process_steps: Steps,
) -> None:
    steps = process_steps
    steps.run("start")
    # Every answer of a call is made (its `apply` run, its update checked) before any is
    # saved: a crash then, in the second answer's `apply`, leaves all of them open.
    child = steps.spawn({"op": "resume", "input": answers("i02", "i03", "i05"), "hang_apply": 2})
    with child:
        steps.wait_for(child.pid, "hang-apply", 1, child)
        steps.kill(child)
    steps.lease_given_up()
    runner = steps.runner()
    state = runner.get_state("t")
    assert state.gates == IDS
    steps.run("resume", answers("i02", "i03", "i05"))
    done = steps.run("resume", answers(*ASKING[3:]))
    assert done["status"] == "done"
    assert steps.runner().get_state("t").state.results == expected_results()
    assert steps.calls_per_item() == Counter(ITEMS)


# -- in one process, on every store ---------------------------------------------------------------


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


def test_answers_one_by_one_by_gate_and_the_last_bare_answer(store: Store, tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    runner = Runner(worker.flow(calls), store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    first = runner.start("t", worker.START)
    assert first.pauses == tuple(Pause(worker.pause_id(i), worker.question(i)) for i in ASKING)
    assert [(e.gate, e.payload) for e in seen if isinstance(e, Waiting)] == [
        (p.id, p.payload) for p in first.pauses
    ]
    for item in ASKING[:-1]:
        result = runner.resume("t", verdict(item, ok=item != "i05"), gate=worker.pause_id(item))
        assert result.status == "waiting" and worker.pause_id(item) not in result.gates
    one = runner.get_state("t")
    assert one.gates == (worker.pause_id("i19"),) and one.payload == worker.question("i19")
    done = runner.resume("t", verdict("i19"))  # the one open pause: a bare answer goes to it
    assert done.status == "done" and done.state.results == expected_results()


def test_a_fork_of_a_waiting_map_keeps_its_questions(store: Store, tmp_path: Path) -> None:
    runner = Runner(worker.flow(tmp_path / "calls.log"), store=store)
    first = runner.start("t", worker.START)
    fork = runner.fork("t", "f")
    assert fork.pauses == first.pauses


def test_an_answer_that_leaves_others_open_is_refused_once_saved(
    store: Store, tmp_path: Path
) -> None:
    runner = Runner(worker.flow(tmp_path / "calls.log"), store=store)
    runner.start("t", worker.START)
    runner.resume("t", answers("i02"))
    before = runner.get_state("t")
    with pytest.raises(NotWaitingError):
        runner.resume("t", verdict("i02"), gate="check[i02]")
    assert runner.get_state("t").version == before.version


class Tally(BaseModel):
    items: list[int] = []
    results: Annotated[list[str], append] = []
    asked: Annotated[list[int], append] = []
    ok: bool = False


class Ok(BaseModel):
    ok: bool


def test_pause_ids_are_indexes_without_key_and_asks_may_be_declared_on_the_map(
    store: Store,
) -> None:
    def check(state: Tally, item: int, ctx: Context) -> dict[str, Any]:
        if item % 2:
            ctx.ask({"n": item}, update={"asked": [item]})
        return {"results": [f"{item} even"]}

    flow = Flow(
        name="tally",
        state=Tally,
        start="check",
        nodes={"check": Map(check, over=lambda s: s.items, asks=Ok)},
        routes={"check": END},
    )
    runner = Runner(flow, store=store)
    first = runner.start("t", {"items": [0, 1, 2, 3]})
    assert first.pauses == (Pause("check[1]", {"n": 1}), Pause("check[3]", {"n": 3}))
    done = runner.resume("t", {"check[3]": {"ok": True}, "check[1]": {"ok": False}})
    assert done.status == "done"
    assert (done.state.results, done.state.asked) == (["0 even", "2 even"], [1, 3])
    # No apply: each answer's fields were copied, merged in item order (3's answer last).
    assert done.state.ok is True


def test_a_patch_while_a_map_waits_closes_its_questions_and_resume_asks_anew(
    store: Store,
) -> None:
    """The map starts again after a patch (its calls saw the old state). Its questions were
    shown open, less the ones answered, whose answers were then dropped without a word
    when the map ran again (found by a defect hunt)."""
    asked: list[int] = []

    def check(state: Tally, item: int, ctx: Context) -> dict[str, Any]:
        asked.append(item)
        ctx.ask({"n": item})

    flow = Flow(
        name="tally",
        state=Tally,
        start="check",
        nodes={"check": Map(check, over=lambda s: s.items,
                            asks=Gate(Ok, apply=lambda s, a: {"results": [f"ok={a.ok}"]}))},
        routes={"check": END},
    )  # fmt: skip
    runner = Runner(flow, store=store)
    runner.start("t", {"items": [1, 2]})
    assert runner.resume("t", {"ok": True}, gate="check[0]").gates == ("check[1]",)
    patched = runner.update_state("t", {"ok": True}, reason="unrelated fix")
    assert (patched.status, patched.gates, patched.pauses) == ("pending", (), ())
    with pytest.raises(NotWaitingError):  # the question is not open any more
        runner.resume("t", {"ok": False}, gate="check[1]")
    again = runner.resume("t")  # runs the map again: both asked anew
    assert again.gates == ("check[0]", "check[1]") and asked == [1, 2, 1, 2]
    done = runner.resume("t", {"check[0]": {"ok": True}, "check[1]": {"ok": False}})
    assert done.state.results == ["ok=True", "ok=False"]


def test_what_a_call_saved_with_its_question_and_its_answer_both_reach_a_reducer_field(
    store: Store,
) -> None:
    @node(asks=Gate(Ok, apply=lambda s, a: {"results": [f"answered {a.ok}"]}))
    def check(state: Tally, item: int, ctx: Context) -> None:
        ctx.ask(item, update={"results": [f"asked {item}"]})

    map_node = Map(check, over=lambda s: s.items)
    flow = Flow(
        name="both", state=Tally, start="check", nodes={"check": map_node}, routes={"check": END}
    )
    runner = Runner(flow, store=store)
    runner.start("t", {"items": [7]})
    assert runner.resume("t", {"ok": True}).state.results == ["asked 7", "answered True"]


def test_a_mapping_of_answers_naming_an_id_not_open_saves_none_of_them(
    store: Store, tmp_path: Path
) -> None:
    runner = Runner(worker.flow(tmp_path / "calls.log"), store=store)
    before = runner.start("t", worker.START)
    with pytest.raises(UnknownGateError):  # an id the flow cannot have
        runner.resume("t", {**answers("i02"), "nope": verdict("x")})
    with pytest.raises(NotWaitingError):  # a call that did not ask
        runner.resume("t", {**answers("i02"), "check[i04]": verdict("i04")})
    after = runner.get_state("t")
    assert (after.version, after.gates) == (before.version, before.gates)


def test_questions_of_map_calls_never_reach_a_log_line(store: Store, tmp_path: Path) -> None:
    with capture_logs() as logs:
        runner = Runner(worker.flow(tmp_path / "calls.log"), store=store)
        runner.start("t", worker.START)
        runner.resume("t", answers(*ASKING))
    assert logs and "is i02 fine?" not in repr(logs) and "checked i02" not in repr(logs)


def test_an_answer_json_cannot_hold_among_several_saves_none(store: Store) -> None:
    class Scored(BaseModel):
        items: list[str] = ["a", "b"]
        score: float = 0

    class Score(BaseModel):
        score: float

    def rate(state: Scored, item: str, ctx: Context) -> None:
        ctx.ask({"item": item})

    flow = Flow(
        name="scores",
        state=Scored,
        start="m",
        nodes={"m": Map(rate, over=lambda s: s.items, key=str, asks=Score)},
        routes={"m": END},
    )
    runner = Runner(flow, store=store)
    before = runner.start("t")
    with pytest.raises(UnstorableValueError):
        runner.resume("t", {"m[a]": {"score": 1.0}, "m[b]": {"score": float("nan")}})
    after = runner.get_state("t")
    assert (after.version, after.gates) == (before.version, ("m[a]", "m[b]"))
