"""Recovery with the default policy and generic strategies: audited, previewable, lossless."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, Gate, Runner, append, field
from flowkit.errors import RecoveryPolicyError
from flowkit.runtime import (
    DEFAULT_POLICY,
    BackToStable,
    Complete,
    DetectionRule,
    Recovery,
    RecoveryPolicy,
    Reset,
    Resume,
    StrategyRoute,
    number,
    size,
)
from flowkit.stores import JsonFileStore


class Crash(BaseException):
    """The process dying inside a node."""


class Order(BaseModel):
    item: str = ""
    approved: bool = False
    notes: Annotated[list[str], append] = []
    shipped: bool = False
    crash: bool = True


class Approval(BaseModel):
    approved: bool


def _draft(state: Order) -> dict[str, Any]:
    return {"item": "widget", "notes": ["drafted"]}


def _ship(state: Order) -> dict[str, Any]:
    if state.crash:
        raise Crash
    return {"shipped": True, "notes": ["shipped"]}


FLOW = Flow(
    name="orders",
    state=Order,
    start="draft",
    nodes={"draft": _draft, "ship": _ship},
    gates={"approve": Gate(Approval)},
    routes={"draft": "approve", "approve": "ship", "ship": END},
)


def crashed(store: JsonFileStore, *, markers: bool = True) -> Runner[Order]:
    """Thread `t`: drafted, approved, then the process died inside `ship`."""
    runner: Runner[Order] = Runner(FLOW, store=store, track_attempts=markers)
    runner.start("t")
    with pytest.raises(Crash):
        runner.resume("t", {"approved": True})
    return runner


@pytest.fixture
def store(tmp_path: Path) -> JsonFileStore:
    with JsonFileStore(tmp_path / "store", fsync=False) as opened:
        yield opened  # type: ignore[misc]


def test_a_dry_run_reports_the_dead_node_and_writes_nothing(
    store: JsonFileStore, tmp_path: Path
) -> None:
    crashed(store)
    journal = tmp_path / "store" / "threads" / "t" / "journal.jsonl"
    before = journal.read_bytes()
    report = Recovery(Runner(FLOW, store=store)).plan("t")
    assert report.outcome == "planned"
    assert [(p.rule, p.reason) for p in report.problems] == [
        (
            "node_never_finished",
            "node `ship` started (attempt 1) from version 2 and never finished: the process "
            "running it stopped",
        )
    ]
    assert report.patch is not None
    assert (report.patch.strategy, report.patch.goto, dict(report.patch.values)) == (
        "resume",
        "ship",
        {},
    )
    assert journal.read_bytes() == before


def test_recovery_is_an_audited_patch_and_resume_finishes(
    store: JsonFileStore, tmp_path: Path
) -> None:
    crashed(store)
    journal = tmp_path / "store" / "threads" / "t" / "journal.jsonl"
    before = journal.read_bytes()
    runner: Runner[Order] = Runner(FLOW, store=store)
    past = [(c.version, c.state) for c in runner.history("t")]
    with capture_logs() as logs:
        report = Recovery(runner).recover("t")
    assert report.outcome == "recovered" and report.applied_version == 3
    assert journal.read_bytes().startswith(before.rstrip(b"\0")), "only appended to"
    history = runner.history("t")
    assert [(c.version, c.state) for c in history[:3]] == past, "no checkpoint is rewritten"
    audit = history[-1]
    assert (audit.kind, audit.actor, audit.next, audit.status) == (
        "patch",
        "flowkit-recover",
        "ship",
        "pending",
    )
    assert audit.reason.startswith("flowkit recover (resume): node_never_finished: node `ship`")
    assert [e for e in logs if e["event"] == "thread_recovered"] == [
        {
            "event": "thread_recovered",
            "log_level": "info",
            "thread_id": "t",
            "rules": ["node_never_finished"],
            "strategy": "resume",
            "goto": "ship",
            "keys": [],
            "version": 3,
        }
    ]
    runner.update_state("t", {"crash": False}, reason="the disk is back")
    done = runner.resume("t")
    assert done.done and done.state.shipped and done.state.notes == ["drafted", "shipped"]
    forked = runner.fork("t", "before-recovery", at=2)
    assert forked.state == past[2][1]


def test_without_markers_the_stopped_run_is_still_found(store: JsonFileStore) -> None:
    crashed(store, markers=False)
    report = Recovery(Runner(FLOW, store=store)).plan("t")
    assert [p.rule for p in report.problems] == ["interrupted_run"]
    assert report.problems[0].reason == (
        "the run stopped before node `ship` and nothing is running the thread"
    )


def test_a_recovered_thread_is_not_recovered_again(store: JsonFileStore) -> None:
    crashed(store)
    service = Recovery(Runner(FLOW, store=store))
    assert service.recover("t").outcome == "recovered"
    again = service.recover("t")
    assert again.outcome == "awaiting_resume" and again.patch is None
    assert store.records("t")[-1].version == 3


def test_a_running_thread_is_never_judged(store: JsonFileStore) -> None:
    crashed(store)
    with store.lock("t"):
        report = Recovery(Runner(FLOW, store=store)).recover("t")
    assert report.outcome == "running" and report.problems == ()


def test_healthy_threads_are_left_alone(store: JsonFileStore) -> None:
    runner: Runner[Order] = Runner(FLOW, store=store)
    runner.start("waits")
    report = Recovery(runner).recover("waits")
    assert (report.outcome, report.status, report.node) == ("healthy", "waiting", "approve")


def test_back_to_stable_restores_the_last_gate_and_its_fields(store: JsonFileStore) -> None:
    runner = crashed(store)
    runner.update_state("t", {"item": "changed"}, actor="ops")  # then it stopped again
    runner.update_state("t", {"crash": True}, goto="ship", actor="ops")
    policy = RecoveryPolicy("stable", DEFAULT_POLICY.rules, default=BackToStable())
    with pytest.raises(Crash):
        runner.resume("t")
    report = Recovery(runner, policy).recover("t")
    assert report.patch is not None
    assert (report.patch.goto, dict(report.patch.values)) == (
        "approve",
        {"approved": False, "item": "widget"},
    )
    assert "back to `approve` as it was at version 1" in report.notes
    after = runner.get_state("t")
    assert (after.status, after.node, after.state.approved) == ("waiting", "approve", False)


def test_reset_goes_back_to_the_start_state_but_keeps_append_only_fields(
    store: JsonFileStore,
) -> None:
    runner = crashed(store)
    report = Recovery(runner).recover("t", strategy=Reset())
    assert report.patch is not None
    assert (report.patch.goto, dict(report.patch.values)) == (
        "draft",
        {"item": "", "approved": False},
    )
    assert "append-only fields keep their newer entries: notes" in report.notes
    after = runner.get_state("t")
    assert (after.node, after.state.item, after.state.notes) == ("draft", "", ["drafted"])


def test_complete_without_evidence_and_no_fallback_is_unrecoverable(
    store: JsonFileStore,
) -> None:
    runner = crashed(store)
    never = Complete(goto=END, output="item")
    report = Recovery(runner).recover("t", strategy=never)
    assert report.outcome == "unrecoverable" and report.patch is None
    assert report.notes == ("cannot complete: no file written in `ship` is named by `item`",)
    assert store.records("t")[-1].version == 2


def test_complete_with_a_real_file_finishes(store: JsonFileStore, tmp_path: Path) -> None:
    runner = crashed(store)
    made = tmp_path / "widget.txt"
    made.write_text("done")
    runner.update_state("t", {"item": str(made)}, actor="ops")
    with pytest.raises(Crash):
        runner.resume("t")
    report = Recovery(runner).recover("t", strategy=Complete(goto=END, output="item"))
    assert report.outcome == "recovered"
    assert runner.get_state("t").status == "done"


def test_a_policy_that_does_not_fit_its_flow_lists_every_problem() -> None:
    bad = RecoveryPolicy(
        "bad",
        rules=(
            DetectionRule("r", field("state.nope") & number("wat").gt(1), "x"),
            DetectionRule("r", field("node").eq("ship"), "x"),
        ),
        strategies=(StrategyRoute(field("node").eq("x"), BackToStable(goto="nowhere")),),
        default=Reset(values={"notes": []}, reset=("ghost",)),
    )
    with pytest.raises(RecoveryPolicyError) as info:
        Recovery(Runner(FLOW), bad)
    assert info.value.problems == [
        "rule `r` is defined twice",
        "back_to_stable goes to `nowhere`, which is not a state of flow `orders`",
        "reset sets `notes`, whose reducer would combine the value instead of replacing it; "
        "recovery cannot set it",
        "reset sets `ghost`, which Order has no field for",
        "rule `r` reads `wat`, which is not a thread fact",
        "rule `r` reads `state.nope`, but Order has no field `nope`",
    ]


@pytest.mark.parametrize(
    ("condition", "facts", "matches", "described", "data"),
    [
        (size("state.notes").lt(2), {"state": {"notes": ["a"]}}, True,
         "len(state.notes) < 2", {"size": "state.notes", "lt": 2}),
        (size("state.notes").lt(2), {"state": {}}, True, "len(state.notes) < 2", None),
        (size("state.notes").ge(2), {"state": {"notes": ["a", "b"]}}, True,
         "len(state.notes) >= 2", None),
        (number("idle_s").gt(300), {"idle_s": 300.5}, True, "idle_s > 300",
         {"number": "idle_s", "gt": 300}),
        (number("idle_s").le(300), {"idle_s": 300.5}, False, "idle_s <= 300", None),
        (number("idle_s").eq(1), {"idle_s": None}, False, "idle_s == 1", None),
        (number("idle_s").gt(0), {"idle_s": True}, False, "idle_s > 0", None),
    ],
)  # fmt: skip
def test_comparison_conditions(
    condition: Any, facts: dict[str, Any], matches: bool, described: str, data: Any
) -> None:
    assert condition(facts) is matches
    assert condition.describe() == described
    if data is not None:
        assert condition.to_data() == data


def test_scan_takes_only_the_threads_of_its_flow(store: JsonFileStore) -> None:
    crashed(store)
    other = Flow(name="other", state=Order, start="draft", nodes={"draft": _draft},
                 routes={"draft": END})  # fmt: skip
    Runner(other, store=store).start("elsewhere")
    reports = Recovery(Runner(FLOW, store=store)).scan(dry_run=True)
    assert [(r.thread_id, r.outcome) for r in reports] == [("t", "planned")]


def test_resume_is_the_default_for_any_flow() -> None:
    assert isinstance(DEFAULT_POLICY.default, Resume) and DEFAULT_POLICY.strategies == ()
