"""The performance monitor: metrics from a store alone, thresholds, and `flowkit stats`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, NodeError, Route, RouteTable, Runner, field
from flowkit.cli import main
from flowkit.runtime import PerformanceMonitor, Thresholds
from flowkit.runtime.monitor import ThreadMetrics, judge
from flowkit.stores import JsonFileStore

HERE = Path(__file__).resolve().parent


class Job(BaseModel):
    blob: str = ""
    tries: int = 0
    error: NodeError | None = None


def _grow(state: Job) -> dict[str, Any]:
    return {"blob": "x" * 4000 if state.tries else "small"}


def _flaky(state: Job) -> dict[str, Any]:
    if state.tries < 3:
        raise ValueError("not yet")
    return {}


def _count(state: Job) -> dict[str, Any]:
    return {"tries": state.tries + 1, "error": None}


FLOW = Flow(
    name="monitored",
    state=Job,
    start="grow",
    nodes={"grow": _grow, "flaky": _flaky, "count": _count},
    routes={
        "grow": "flaky",
        "flaky": RouteTable("after_flaky", [Route(field("error"), "count")], default=END),
        "count": "flaky",
    },
)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """`big`: a 4 KB state, no errors. `flaky`: 3 of 8 steps failed."""
    root = tmp_path / "store"
    with JsonFileStore(root, fsync=False) as store:
        runner: Runner[Job] = Runner(FLOW, store=store)
        runner.start("big", {"tries": 3})
        runner.start("flaky")
    return root


def test_metrics_come_from_the_journal(store_dir: Path) -> None:
    with JsonFileStore(store_dir) as store:
        monitor = PerformanceMonitor(store, flow_for=lambda name: FLOW)
        big, flaky = monitor.metrics("big"), monitor.metrics("flaky")
    assert (big.steps, big.failed_steps, big.checkpoint_exact) == (2, 0, True)
    assert 4000 < big.checkpoint_bytes < 4200
    assert (flaky.steps, flaky.failed_steps) == (8, 3)
    assert flaky.nodes["flaky"].runs == 4 and flaky.nodes["flaky"].errors == 3
    assert flaky.error_rate == pytest.approx(3 / 8)


def test_without_the_flow_the_size_is_folded_and_marked_inexact(store_dir: Path) -> None:
    with JsonFileStore(store_dir) as store:
        metrics = PerformanceMonitor(store).metrics("big")
    assert not metrics.checkpoint_exact and 4000 < metrics.checkpoint_bytes < 4200


def test_the_monitor_flags_a_big_checkpoint_and_a_high_error_rate(store_dir: Path) -> None:
    limits = Thresholds(max_checkpoint_bytes=2048)
    with JsonFileStore(store_dir) as store:
        monitor = PerformanceMonitor(store, thresholds=limits)
        big, flaky = monitor.evaluate("big"), monitor.evaluate("flaky")
    assert big.status == "critical" and big.critical_issues[0].startswith("checkpoint is 3.9 KB")
    assert "Shrink the state" in big.recommendations[0]
    assert flaky.status == "critical"
    assert flaky.critical_issues == ("error rate is 37.5% (3 of 8 steps failed; limit 10%)",)
    assert "`flaky`" in flaky.recommendations[0]
    assert monitor.evaluate("flaky").warnings == ()


def metrics(**overrides: Any) -> ThreadMetrics:
    base: dict[str, Any] = {
        "thread_id": "t",
        "flow": "f",
        "status": "done",
        "node": "__end__",
        "version": 4,
        "updated": 0.0,
        "checkpoint_bytes": 100,
        "checkpoint_exact": True,
        "steps": 4,
        "failed_steps": 0,
        "processing_s": 4.0,
        "nodes": {},
        "recoveries": 0,
        "recoveries_last_hour": 0,
    }
    return ThreadMetrics(**(base | overrides))


@pytest.mark.parametrize(
    ("overrides", "status", "finding"),
    [
        ({}, "healthy", None),
        ({"checkpoint_bytes": 10 * 1024 * 1024 + 1}, "critical", "checkpoint is 10.00 MB"),
        ({"checkpoint_bytes": 10 * 1024 * 1024}, "healthy", None),  # at the limit is fine
        ({"failed_steps": 1, "steps": 10}, "healthy", None),  # 10 % is not over 10 %
        ({"failed_steps": 2, "steps": 10}, "critical", "error rate is 20.0%"),
        ({"recoveries_last_hour": 4, "recoveries": 9}, "warning", "recovered 4 times"),
        ({"recoveries_last_hour": 3, "recoveries": 9}, "healthy", None),
    ],
)
def test_thresholds_judge_with_the_seed_defaults(
    overrides: dict[str, Any], status: str, finding: str | None
) -> None:
    evaluation = judge(metrics(**overrides), Thresholds())
    assert evaluation.status == status
    findings = evaluation.critical_issues + evaluation.warnings
    assert findings[0].startswith(finding) if finding else findings == ()
    assert len(evaluation.recommendations) == len(findings)


def test_a_slow_average_is_a_warning_naming_the_slowest_node() -> None:
    from flowkit.runtime import NodeTimes

    slow = metrics(
        processing_s=1300.0,
        nodes={"fast": NodeTimes(3, 0, 1.0, 0.5), "llm": NodeTimes(1, 0, 1299.0, 1299.0)},
    )
    evaluation = judge(slow, Thresholds())
    assert evaluation.status == "warning"
    assert evaluation.warnings == (
        "average node time is 325.0 s (limit 300 s); slowest: `llm` at 1299.0 s",
    )


def test_recoveries_are_counted_per_hour_from_patch_records(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner: Runner[Job] = Runner(FLOW, store=store)
        runner.start("t", {"tries": 3})
        for _ in range(5):
            runner.update_state("t", {"tries": 3}, actor="flowkit-recover", reason="test")
        runner.update_state("t", {"tries": 3}, actor="ops", reason="manual")
        last = store.records("t")[-1].ts
        later = PerformanceMonitor(store, clock=lambda: last + 7200).metrics("t")
        now = PerformanceMonitor(store, clock=lambda: last).evaluate("t")
    assert (later.recoveries, later.recoveries_last_hour) == (5, 0)
    assert now.status == "warning" and now.metrics.recoveries_last_hour == 5


def test_flowkit_stats_prints_both_flagged_threads(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["stats", "--store", str(store_dir), "--max-checkpoint-mb", "0.002"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "THREAD", "FLOW", "STATUS", "HEALTH", "CHECKPOINT", "STEPS", "AVG", "NODE", "ERRORS",
        "RECOVERIES/H",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    assert rows["big"][1:4] == ["monitored", "done", "critical"]
    assert rows["flaky"][3] == "critical" and rows["flaky"][-2] == "37.5%"
    assert "big: critical\n  critical  checkpoint is ~3.9" not in out  # sizes keep their marker
    assert "\nbig: critical\n  critical  checkpoint is 3.9" in out
    assert "\nflaky: critical\n  critical  error rate is 37.5%" in out
    assert "~ size folded from the journal without the flow" in out


def test_flowkit_stats_json_for_one_thread(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--store", str(store_dir), "flaky", "--json"]) == 0
    (data,) = json.loads(capsys.readouterr().out)
    assert data["health"] == "critical" and data["metrics"]["failed_steps"] == 3
    assert data["metrics"]["nodes"]["flaky"] == {
        "runs": 4,
        "errors": 3,
        "total_s": pytest.approx(data["metrics"]["nodes"]["flaky"]["total_s"]),
        "max_s": pytest.approx(data["metrics"]["nodes"]["flaky"]["max_s"]),
    }


def test_flowkit_stats_on_an_empty_or_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"No threads in {tmp_path}\n"
    assert main(["stats", "--store", str(tmp_path / "nope")]) == 2
