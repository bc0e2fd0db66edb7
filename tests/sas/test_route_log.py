"""Every routing decision is logged at debug by the engine (``node_finished`` after a node:
thread, run, node, target, latency, attempts, outcome; ``route_decided`` after a gate's input),
with no state content; a sas run shows each step's route and the review gate's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.sas import SasState, flow

from .scripted_cell import scripted, teaching_file

ROUTE_EVENTS = ("node_finished", "route_decided")
REQUEST = "Pick the part from the feeder and place it on the pallet, forever."


def test_a_sas_run_logs_each_route_decision_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path))}
    runner: Runner[SasState] = Runner(flow, llm=scripted())
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        runner.start("cell", {"user_input": REQUEST, "config": config})
        runner.resume("cell", {"action": "approve"})
    routes = [
        r.msg.fields
        for r in caplog.records
        if r.name == "flowkit" and getattr(r.msg, "event", None) in ROUTE_EVENTS
    ]
    assert all(
        r.levelno == logging.DEBUG
        for r in caplog.records
        if getattr(r.msg, "event", None) in ROUTE_EVENTS
    )
    decided = [(f["node"], f["target"]) for f in routes]
    assert decided[:2] == [
        ("initial", "user_input_to_task_list"),
        ("user_input_to_task_list", "sas_awaiting_task_list_review"),
    ]
    assert ("sas_awaiting_task_list_review", "task_list_to_module_steps") in decided
    assert ("task_list_to_module_steps", "sas_awaiting_module_steps_review") in decided
    node_fields = {"thread_id", "run_id", "node", "target", "latency_ms", "attempts"}
    node_fields |= {"success", "error_type"}
    assert all(
        set(f) in ({"thread_id", "node", "target"}, node_fields) and f["thread_id"] == "cell"
        for f in routes
    )
    assert any(set(f) == node_fields and f["success"] for f in routes)
    assert REQUEST not in caplog.text, "the request (state content) is never logged"


def test_route_decisions_are_quiet_at_the_default_level(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = {"output_dir": str(tmp_path / "out"), "teaching_file": str(teaching_file(tmp_path))}
    with caplog.at_level(logging.INFO, logger="flowkit"):
        Runner(flow, llm=scripted()).start("cell", {"user_input": REQUEST, "config": config})
    assert "route_decided" not in caplog.text and "node_finished" not in caplog.text
