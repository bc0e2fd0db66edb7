"""Gates with payloads: ``Gate(Model, payload=fn)`` computes what the pause shows once, when the
thread arrives, journals it with that step and hands it to every reader (``RunResult``,
``get_state`` in a later process, ``fork``, ``Waiting`` events); a payload JSON cannot hold is
refused with nothing saved, and a payload never reaches a log line. Also a gate inside a
``Subflow`` (by path) and payloads on a ``Parallel``'s gate branches. On every shipped store.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import structlog
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import (
    END,
    Flow,
    Gate,
    Parallel,
    Pause,
    Route,
    RouteTable,
    Runner,
    Subflow,
    Waiting,
    append,
    field,
)
from flowkit.errors import RunError, UnstorableValueError
from flowkit.stores import JsonFileStore, Store


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


@pytest.fixture
def reopened(store: Store, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """The same threads as a later process would open them: a new object for the file store
    (closed after the test); the same object for the others (memory is shared no other way,
    and a PostgresStore is a pool already)."""
    opened: list[JsonFileStore] = []

    def reopen() -> Store:
        if isinstance(store, JsonFileStore):
            opened.append(JsonFileStore(tmp_path / "store", fsync=False))
            return opened[-1]
        return store

    yield reopen
    for each in opened:
        each.close()


class Draft(BaseModel):
    topic: str = ""
    text: str = ""
    approved: bool = False
    rounds: int = 0
    log: Annotated[list[str], append] = []


class Verdict(BaseModel):
    approved: bool


class Counted:
    """A payload function that counts its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, state: Draft) -> dict[str, Any]:
        self.calls.append(state.text)
        return {"draft": state.text, "round": state.rounds, "options": ["approve", "reject"]}


def write(state: Draft) -> dict[str, Any]:
    return {"text": f"about {state.topic}, take {state.rounds + 1}", "rounds": state.rounds + 1}


def drafts(payload: Callable[[Any], Any]) -> Flow:
    """write -> review (a gate with ``payload``) -> publish once approved, else write again."""
    return Flow(
        name="drafts",
        state=Draft,
        start="write",
        nodes={"write": write, "publish": lambda s: {"log": ["published"]}},
        gates={"review": Gate(Verdict, payload=payload)},
        routes={
            "write": "review",
            "review": RouteTable(
                "after_review", [Route(field("approved"), "publish")], default="write"
            ),
            "publish": END,
        },
    )


def payload_of(text: str, rounds: int = 1) -> dict[str, Any]:
    return {"draft": text, "round": rounds, "options": ["approve", "reject"]}


# -- computed once, on arrival ------------------------------------------------------------------


def test_the_payload_is_computed_once_on_arrival_and_read_everywhere(
    store: Store, reopened: Callable[[], Store]
) -> None:
    shown = Counted()
    runner = Runner(drafts(shown), store=store)
    result = runner.start("t", {"topic": "tides"})
    expected = payload_of("about tides, take 1")
    assert (result.status, result.node, result.gates) == ("waiting", "review", ("review",))
    assert result.pauses == (Pause("review", expected),)
    assert result.payload == expected
    assert shown.calls == ["about tides, take 1"]

    # Reading never computes it again: the same runner, a new one, a new store object.
    assert runner.get_state("t").pauses == result.pauses
    later = Runner(drafts(shown), store=reopened())
    state = later.get_state("t")
    assert (state.status, state.gates, state.payload) == ("waiting", ("review",), expected)
    later.history("t")
    assert shown.calls == ["about tides, take 1"]


def test_each_arrival_computes_its_own_payload_from_the_state_it_arrives_with(
    store: Store,
) -> None:
    shown = Counted()
    runner = Runner(drafts(shown), store=store)
    runner.start("t", {"topic": "tides"})
    again = runner.resume("t", {"approved": False})  # back to write, then the gate again
    assert again.payload == payload_of("about tides, take 2", rounds=2)
    assert shown.calls == ["about tides, take 1", "about tides, take 2"]
    done = runner.resume("t", {"approved": True})
    assert done.status == "done" and done.pauses == () and done.payload is None
    assert len(shown.calls) == 2


def test_the_payload_is_journaled_with_the_step_that_moved_the_thread_to_the_gate(
    store: Store,
) -> None:
    runner = Runner(drafts(Counted()), store=store)
    runner.start("t", {"topic": "tides"})
    records = store.records("t")
    assert [r.kind for r in records] == ["start", "step"]  # no record of its own
    assert records[0].pauses is None
    assert records[1].pauses == {"review": {"payload": payload_of("about tides, take 1")}}
    runner.resume("t", {"approved": True})
    after = store.records("t")
    assert [(r.kind, r.pauses) for r in after[2:]] == [("input", None), ("step", None)]
    history = runner.history("t")
    assert [(c.version, c.kind, c.next) for c in history] == [
        (0, "start", "write"), (1, "step", "review"), (2, "input", "publish"), (3, "step", END),
    ]  # fmt: skip


def test_a_patch_of_a_waiting_thread_shows_the_payload_of_the_patched_state(
    store: Store, reopened: Callable[[], Store]
) -> None:
    """The reviewer was shown the draft as it was before an edit by hand, not the one that
    would be published (found by a defect hunt); the deadline stays as it was."""
    shown = Counted()
    runner = Runner(drafts(shown), store=store)
    runner.start("t", {"topic": "tides"})
    patched = runner.update_state("t", {"text": "edited by ops"}, reason="typo")
    assert patched.payload == payload_of("edited by ops")
    assert Runner(drafts(shown), store=reopened()).get_state("t").payload == payload_of(
        "edited by ops"
    )
    assert shown.calls == ["about tides, take 1", "edited by ops"]


def test_a_fork_of_a_waiting_thread_keeps_its_payload(store: Store) -> None:
    shown = Counted()
    runner = Runner(drafts(shown), store=store)
    original = runner.start("t", {"topic": "tides"})
    fork = runner.fork("t", "f")
    assert fork.status == "waiting" and fork.pauses == original.pauses
    assert runner.get_state("f").payload == original.payload
    # From history: the checkpoint where the thread arrived at the gate.
    runner.resume("t", {"approved": True})
    at_gate = runner.fork("t", "g", at=1)
    assert at_gate.pauses == original.pauses
    assert runner.fork("t", "h", at=0).pauses == ()  # not at the gate yet: nothing open
    assert shown.calls == ["about tides, take 1"]
    assert runner.resume("f", {"approved": True}).status == "done"


def test_waiting_events_carry_the_payload(store: Store) -> None:
    runner = Runner(drafts(Counted()), store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    result = runner.start("t", {"topic": "tides"})
    waiting = [e for e in seen if isinstance(e, Waiting)]
    assert waiting == [Waiting("t", result.run_id, "review", result.version, result.payload)]


def test_a_flow_that_starts_at_a_gate_computes_the_payload_from_the_start_state(
    store: Store,
) -> None:
    flow = Flow(
        name="asks",
        state=Draft,
        start="review",
        nodes={"publish": lambda s: {"log": ["published"]}},
        gates={"review": Gate(Verdict, payload=lambda s: f"publish {s.text!r}?")},
        routes={"review": "publish", "publish": END},
    )
    result = Runner(flow, store=store).start("t", {"text": "hello"})
    assert (result.version, result.payload) == (0, "publish 'hello'?")
    assert store.records("t")[0].pauses == {"review": {"payload": "publish 'hello'?"}}


class Offer(BaseModel):
    price: int
    currency: str = "EUR"


@pytest.mark.parametrize(
    ("value", "form"),
    [
        (Offer(price=3), {"price": 3, "currency": "EUR"}),  # a model: its JSON form
        ("approve?", "approve?"),
        (42, 42),
        ([1, "two", {"three": 3.0}], [1, "two", {"three": 3.0}]),
        (None, None),
    ],
    ids=["model", "text", "number", "nested", "none"],
)
def test_a_payload_is_kept_in_its_json_form(
    store: Store, reopened: Callable[[], Store], value: Any, form: Any
) -> None:
    runner = Runner(drafts(lambda s: value), store=store)
    assert runner.start("t").payload == form
    assert Runner(drafts(lambda s: value), store=reopened()).get_state("t").pauses == (
        Pause("review", form),
    )


# -- refused payloads ---------------------------------------------------------------------------


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        {"fine": 1, "score": [1.0, math.inf]},
        object(),
        {"secret": "sk-do-not-show-me", "handle": object()},
        _deep(5000),
    ],
    ids=["nan", "nested-inf", "object", "object-beside-a-secret", "deeply-nested"],
)
def test_a_payload_json_cannot_hold_is_refused_and_nothing_is_saved(store: Store, bad: Any) -> None:
    runner = Runner(drafts(lambda s: bad), store=store)
    with pytest.raises(UnstorableValueError) as caught:
        runner.start("t", {"topic": "tides"})
    assert caught.value.node == "review" and caught.value.field == "payload"
    assert "sk-do-not-show-me" not in str(caught.value)
    # The node's step was not saved: the thread stands where it started.
    assert [r.kind for r in store.records("t")] == ["start"]
    state = runner.get_state("t")
    assert (state.status, state.node, state.version, state.pauses) == ("pending", "write", 0, ())


def test_a_flow_starting_at_a_gate_with_an_unstorable_payload_creates_no_thread(
    store: Store,
) -> None:
    flow = Flow(name="asks", state=Draft, start="review", nodes={},
                gates={"review": Gate(Verdict, payload=lambda s: math.nan)},
                routes={"review": END})  # fmt: skip
    with pytest.raises(UnstorableValueError):
        Runner(flow, store=store).start("t")
    assert "t" not in store.threads()


def test_a_payload_function_that_raises_is_a_typed_error_and_nothing_is_saved(
    store: Store,
) -> None:
    def broken(state: Draft) -> Any:
        raise KeyError(f"no reviewer for {state.topic}")

    runner = Runner(drafts(broken), store=store)
    with pytest.raises(RunError) as caught:
        runner.start("t", {"topic": "a private topic"})
    assert "review" in str(caught.value) and "KeyError" in str(caught.value)
    assert "private" not in str(caught.value)  # never the state's values
    assert isinstance(caught.value.__cause__, KeyError)
    assert [r.kind for r in store.records("t")] == ["start"]


# -- never in a log line ------------------------------------------------------------------------

SECRET = "Yamada Taro, +81 90 1234 5678, account 7731-SECRET"


def secret_flow() -> Flow:
    return drafts(lambda s: {"customer": SECRET, "text": s.text})


def test_payloads_never_reach_structlog_lines(store: Store) -> None:
    with capture_logs() as logs:
        runner = Runner(secret_flow(), store=store)
        result = runner.start("t", {"topic": "tides"})
        runner.get_state("t")
        runner.fork("t", "f")
        runner.resume("t", {"approved": False})
    assert result.payload["customer"] == SECRET
    assert logs and SECRET not in repr(logs) and "SECRET" not in repr(logs)


def test_payloads_never_reach_logging_lines_nor_stdout(
    store: Store, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not structlog.is_configured()  # flowkit then logs through `logging`
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        runner = Runner(secret_flow(), store=store)
        runner.start("t", {"topic": "tides"})
        runner.resume("t", {"approved": False})
    assert caplog.records  # debug lines were written ...
    text = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "SECRET" not in text  # ... without the payload
    out = capsys.readouterr()
    assert "SECRET" not in out.out + out.err


# -- a gate inside a Subflow ----------------------------------------------------------------------


class Review(BaseModel):
    text: str = ""
    approved: bool = False


def review_flow(*, starts_at_gate: bool) -> Flow:
    gate = Gate(Verdict, payload=lambda s: {"check": s.text})
    if starts_at_gate:
        return Flow(name="review", state=Review, start="approve", nodes={},
                    gates={"approve": gate}, routes={"approve": END})  # fmt: skip
    return Flow(
        name="review",
        state=Review,
        start="polish",
        nodes={"polish": lambda s: {"text": s.text.strip().capitalize()}},
        gates={"approve": gate},
        routes={"polish": "approve", "approve": END},
    )


def article(child: Flow) -> Flow:
    return Flow(
        name="article",
        state=Draft,
        start="write",
        nodes={
            "write": write,
            "review": Subflow(
                child,
                input=lambda parent: {"text": f"  {parent.text}"},
                output=lambda parent, c: {"approved": c.approved},
                writes=["approved"],
            ),
            "publish": lambda s: {"log": ["published" if s.approved else "shelved"]},
        },
        routes={"write": "review", "review": "publish", "publish": END},
    )


@pytest.mark.parametrize(
    "starts_at_gate", [False, True], ids=["reached-by-a-node", "child-starts-at-the-gate"]
)
def test_a_gate_inside_a_subflow_carries_its_payload_by_path(
    store: Store, reopened: Callable[[], Store], starts_at_gate: bool
) -> None:
    flow = article(review_flow(starts_at_gate=starts_at_gate))
    runner = Runner(flow, store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    result = runner.start("a", {"topic": "tides"})
    text = "about tides, take 1" if starts_at_gate else "About tides, take 1"
    shown = {"check": f"  {text}" if starts_at_gate else text}
    assert (result.node, result.gates) == ("review", ("review/approve",))
    assert result.pauses == (Pause("review/approve", shown),) and result.payload == shown
    assert [(e.gate, e.payload) for e in seen if isinstance(e, Waiting)] == [
        ("review/approve", shown)
    ]
    later = Runner(flow, store=reopened())
    assert later.get_state("a").pauses == result.pauses
    assert later.fork("a", "b").pauses == result.pauses
    done = later.resume("a", {"approved": True}, gate="review/approve")
    assert done.status == "done" and done.state.log == ["published"]


def test_a_gate_right_after_a_subflow_node_carries_its_payload(store: Store) -> None:
    flow = Flow(
        name="after_sub",
        state=Draft,
        start="review",
        nodes={
            "review": Subflow(
                Flow(
                    name="polish",
                    state=Review,
                    start="polish",
                    nodes={"polish": lambda s: {"text": "polished"}},
                    routes={"polish": END},
                ),
                output=lambda parent, c: {"text": c.text},
                writes=["text"],
            ),
            "publish": lambda s: {"log": ["published"]},
        },
        gates={"confirm": Gate(Verdict, payload=lambda s: {"text": s.text})},
        routes={"review": "confirm", "confirm": "publish", "publish": END},
    )
    result = Runner(flow, store=store).start("t")
    assert (result.node, result.payload) == ("confirm", {"text": "polished"})


# -- payloads on a Parallel's gate branches -------------------------------------------------------


class Sign(BaseModel):
    contract: str = "lease"
    legal_ok: bool | None = None
    tech_ok: bool | None = None
    notes: Annotated[list[str], append] = []


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


def sign_flow(calls: list[str]) -> Flow:
    def clause(state: Sign) -> dict[str, Any]:
        calls.append(state.contract)
        return {"clause": f"section 4 of the {state.contract}"}

    return Flow(
        name="sign",
        state=Sign,
        start="prepare",
        nodes={
            "prepare": lambda s: {"contract": f"{s.contract} v2"},
            "review": Parallel(
                {
                    "legal": Gate(Legal, payload=clause),
                    "tech": Gate(Tech),  # no payload: None
                    "lint": lambda s: {"notes": ["linted"]},
                }
            ),
            "sum_up": lambda s: {"notes": [f"legal={s.legal_ok} tech={s.tech_ok}"]},
        },
        routes={"prepare": "review", "review": "sum_up", "sum_up": END},
    )


def test_gate_branches_of_a_parallel_carry_their_payloads(
    store: Store, reopened: Callable[[], Store]
) -> None:
    calls: list[str] = []
    runner = Runner(sign_flow(calls), store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    result = runner.start("s")
    legal = {"clause": "section 4 of the lease v2"}
    assert result.gates == ("legal", "tech")
    assert result.pauses == (Pause("legal", legal), Pause("tech", None))
    assert result.payload is None  # several are open
    assert [(e.gate, e.payload) for e in seen if isinstance(e, Waiting)] == [
        ("legal", legal), ("tech", None),
    ]  # fmt: skip
    later = Runner(sign_flow(calls), store=reopened())
    assert later.get_state("s").pauses == result.pauses
    one_left = later.resume("s", {"tech_ok": True}, gate="tech")
    assert one_left.pauses == (Pause("legal", legal),) and one_left.payload == legal
    done = later.resume("s", {"legal_ok": False})  # the one open pause: no gate= needed
    assert done.status == "done"
    assert done.state.notes == ["linted", "legal=False tech=True"]
    assert calls == ["lease v2"]  # computed once, when the branches began to wait


def test_a_fork_of_a_parallel_waiting_on_its_branches_keeps_their_payloads(store: Store) -> None:
    runner = Runner(sign_flow([]), store=store)
    result = runner.start("s")
    assert runner.fork("s", "s2").pauses == result.pauses


def test_gate_branches_answered_at_once_by_id(store: Store) -> None:
    runner = Runner(sign_flow([]), store=store)
    runner.start("s")
    done = runner.resume("s", {"legal": {"legal_ok": True}, "tech": {"tech_ok": False}})
    assert done.status == "done" and done.state.notes == ["linted", "legal=True tech=False"]
