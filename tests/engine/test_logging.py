"""Logging: stable event names with thread and node bound, and a PII-masking processor."""

from __future__ import annotations

import re
from typing import Any

import structlog
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, Runner, mask_pii


class Form(BaseModel):
    requester_name: str = ""
    email: str = ""


def test_failures_are_logged_with_ids_and_without_state_values() -> None:
    def leak(state: Form) -> None:
        raise ValueError(f"could not book for {state.requester_name} <{state.email}>")

    flow = Flow(name="form", state=Form, start="book", nodes={"book": leak}, routes={"book": END})
    with capture_logs() as logs:
        result = Runner(flow).start("t1", {"requester_name": "Sato Hanako", "email": "h@x.jp"})
    assert result.status == "failed"
    failed = [entry for entry in logs if entry["event"] == "node_failed"]
    assert failed == [
        {
            "event": "node_failed",
            "log_level": "warning",
            "thread_id": "t1",
            "run_id": result.run_id,
            "node": "book",
            "error_type": "ValueError",
            "attempts": 1,
        }
    ]
    assert "Sato" not in repr(logs) and "h@x.jp" not in repr(logs)


def test_node_logger_is_bound_to_thread_run_and_node() -> None:
    def chatty(state: Form, ctx: Any) -> None:
        ctx.log.info("booking_checked", slots=2)

    flow = Flow(name="form", state=Form, start="book", nodes={"book": chatty}, routes={"book": END})
    with capture_logs() as logs:
        result = Runner(flow).start("t9")
    entry = next(e for e in logs if e["event"] == "booking_checked")
    assert (entry["thread_id"], entry["run_id"], entry["node"]) == ("t9", result.run_id, "book")


def test_mask_pii_masks_named_keys_and_patterns_everywhere() -> None:
    processor = mask_pii(keys={"requester_name"}, patterns=[re.compile(r"MC-\d+")])
    event = processor(
        None,
        "info",
        {
            "event": "booked",
            "requester_name": "Sato",
            "note": "call +81 90-1234-5678 or mail sato@example.jp",
            "nested": {"api_key": "sk-abcdefghijklmnop", "machine": "MC-42"},
            "items": ["Bearer abc.def", "ok"],
        },
    )
    assert event == {
        "event": "booked",
        "requester_name": "***",
        "note": "call *** or mail ***",
        "nested": {"api_key": "***", "machine": "***"},
        "items": ["***", "ok"],
    }


def test_mask_pii_works_in_a_configured_chain() -> None:
    output: list[Any] = []
    structlog.configure(
        processors=[mask_pii(keys={"requester_name"}), lambda _l, _m, ev: output.append(ev) or ""],
    )
    structlog.get_logger("flowkit").info("x", requester_name="Sato")
    assert output[0]["requester_name"] == "***"


def test_mask_pii_keeps_dates_readable_but_masks_phone_numbers() -> None:
    event = mask_pii()(
        None, "info", {"note": "on 2024-01-15 call 03-1234-5678 or +81 90 1234 5678"}
    )
    assert event["note"] == "on 2024-01-15 call *** or ***"
