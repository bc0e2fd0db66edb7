"""Logging: stable event names with thread and node bound, and a PII-masking processor."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, RetryPolicy, Runner, mask_pii, node
from flowkit.foundation._logging import configure_cli_logging, get_logger


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


@pytest.mark.timeout(30)
def test_mask_pii_reads_long_text_in_linear_time() -> None:
    # A manuscript or a chat in state is masked for every anonymous reader of flowkit serve;
    # the e-mail pattern used to retry from every character of a run of word characters.
    text = "あ" * 1_000_000 + " mail sato@example.jp " + "a" * 500_000
    event = mask_pii()(None, "info", {"note": text})
    assert event["note"] == "あ" * 1_000_000 + " mail *** " + "a" * 500_000


def test_mask_pii_keeps_dates_readable_but_masks_phone_numbers() -> None:
    event = mask_pii()(
        None, "info", {"note": "on 2024-01-15 call 03-1234-5678 or +81 90 1234 5678"}
    )
    assert event["note"] == "on 2024-01-15 call *** or ***"


# -- a library's logging: quiet by default, structured for apps that configure structlog ----

#: A flow that logs warnings (its own, and a retry) and asks a model, run as a newcomer's
#: script would: nothing configured unless the test says so.
_SCRIPT = r"""
import logging, os, sys

import httpx
from pydantic import BaseModel

from flowkit import END, Flow, RetryPolicy, Runner, node
from flowkit.llm.openai import OpenAICompatibleLLM

if sys.argv[1] == "debug":
    logging.basicConfig(level=logging.DEBUG)

PROMPT = "Move robot 3 to the home position for Sato Hanako"
ANSWER = "Robot 3 is home, Sato Hanako"


def answer(request: httpx.Request) -> httpx.Response:
    message = {"role": "assistant", "content": ANSWER}
    return httpx.Response(200, json={"choices": [{"message": message, "finish_reason": "stop"}]})


class Job(BaseModel):
    reply: str = ""


@node(writes=["reply"], retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
def ask(state: Job, ctx) -> dict:
    ctx.log.warning("asking_model", attempt=ctx.attempt)
    if ctx.attempt == 1:
        raise ConnectionError("controller busy")
    return {"reply": ctx.llm.complete([{"role": "user", "content": PROMPT}]).text}


llm = OpenAICompatibleLLM(
    model="gpt-test",
    base_url="http://llm.invalid/v1",
    api_key="sk-test-0123456789abcdef",
    http_client=httpx.Client(transport=httpx.MockTransport(answer)),
)
flow = Flow(name="job", state=Job, start="ask", nodes={"ask": ask}, routes={"ask": END})
result = Runner(flow, llm=llm).start("sas-20261123-103000-0f9b")
assert result.state.reply == ANSWER, result
"""
_PROMPT = "Move robot 3 to the home position"
_ANSWER = "Robot 3 is home"


def _run_script(mode: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWKIT_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,
        check=True,
    )


def test_an_unconfigured_script_gets_nothing_on_stdout_and_warnings_on_stderr() -> None:
    done = _run_script("plain")
    assert done.stdout == ""
    assert "node_retry" in done.stderr and "asking_model" in done.stderr
    assert "thread_id='sas-20261123-103000-0f9b'" in done.stderr  # ids are never masked
    assert "llm_request" not in done.stderr  # debug stays off until the app asks
    assert _PROMPT not in done.stderr and _ANSWER not in done.stderr


def test_debug_logging_shows_llm_calls_but_no_prompt_text_unless_opted_in() -> None:
    quiet = _run_script("debug")
    assert quiet.stdout == ""
    assert "llm_request" in quiet.stderr and "llm_response" in quiet.stderr
    assert "prompt_chars=" in quiet.stderr
    assert _PROMPT not in quiet.stderr and _ANSWER not in quiet.stderr

    told = _run_script("debug", FLOWKIT_LOG_CONTENT="1")
    assert told.stdout == ""
    assert _PROMPT in told.stderr and _ANSWER in told.stderr


@pytest.fixture
def unconfigured() -> Iterator[None]:
    """structlog at its builtin defaults, as in a newcomer's script (restored afterwards)."""
    structlog.reset_defaults()
    yield


def test_unconfigured_events_go_to_the_flowkit_stdlib_logger_not_stdout(
    unconfigured: None, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    def leak(state: Form) -> None:
        raise ValueError(f"could not book for {state.requester_name}")

    flow = Flow(name="form", state=Form, start="book", nodes={"book": leak}, routes={"book": END})
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        result = Runner(flow).start("t1", {"requester_name": "Sato Hanako"})
    assert capsys.readouterr().out == ""
    [record] = [r for r in caplog.records if r.name == "flowkit"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"node_failed thread_id='t1' run_id='{result.run_id}' node='book' "
        "error_type='ValueError' attempts=1"
    )
    assert record.msg.event == "node_failed" and record.msg.fields["node"] == "book"
    assert record.funcName == "run_steps"  # the line that logged, not the logging module


def test_unconfigured_lines_are_pii_masked_when_rendered(
    unconfigured: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="flowkit"):
        get_logger().bind(thread_id="sas-20261123-103000-0f9b").info(
            "contact", note="mail ada@example.com or call 03-1234-5678", api_key="sk-x"
        )
    assert caplog.records[0].getMessage() == (
        "contact thread_id='sas-20261123-103000-0f9b' note='mail *** or call ***' api_key='***'"
    )


def test_an_app_with_structlog_stdlib_integration_gets_structured_events(
    caplog: pytest.LogCaptureFixture,
) -> None:
    structlog.configure(
        processors=[
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
    )

    def chatty(state: Form, ctx: Any) -> None:
        ctx.log.info("booking_checked", slots=2)

    flow = Flow(name="form", state=Form, start="book", nodes={"book": chatty}, routes={"book": END})
    with caplog.at_level(logging.INFO, logger="flowkit"):
        result = Runner(flow).start("t9")
    [record] = [r for r in caplog.records if r.name == "flowkit"]
    assert json.loads(record.getMessage()) == {
        "event": "booking_checked",
        "level": "info",
        "logger": "flowkit",
        "node": "book",
        "run_id": result.run_id,
        "slots": 2,
        "thread_id": "t9",
    }


def test_an_app_configuring_structlog_after_the_runner_was_built_still_gets_events() -> None:
    @node(retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
    def flaky(state: Form, ctx: Any) -> None:
        if ctx.attempt == 1:
            raise ConnectionError("busy")

    flow = Flow(name="form", state=Form, start="book", nodes={"book": flaky}, routes={"book": END})
    structlog.reset_defaults()
    runner = Runner(flow)
    with capture_logs() as logs:
        runner.start("t2")
    [retry] = [e for e in logs if e["event"] == "node_retry"]
    assert (retry["thread_id"], retry["node"], retry["attempt"]) == ("t2", "book", 1)


def test_mask_pii_never_mangles_generated_ids() -> None:
    ids = {
        "thread_id": "sas-20261123-103000-0f9b",
        "run_id": "0312345678901234",
        "node": "step_0312345678",
        "gate": "review",
    }
    event = mask_pii()(None, "info", {"event": "x", **ids, "phone": "090 1234 5678"})
    assert event == {"event": "x", **ids, "phone": "***"}
    # Inside free text too: an id joined by hyphens is not a phone number.
    note = mask_pii()(None, "info", {"path": "/s/threads/sas-20261123-103000-0f9b/journal"})
    assert note["path"] == "/s/threads/sas-20261123-103000-0f9b/journal"


def test_mask_pii_masks_an_id_key_the_app_names_as_sensitive() -> None:
    assert mask_pii(keys={"thread_id"})(None, "info", {"thread_id": "alice"}) == {
        "thread_id": "***"
    }


@pytest.fixture
def flowkit_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("flowkit")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield logger
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


@pytest.mark.parametrize(
    ("verbosity", "shown", "hidden"),
    [(0, ["warned"], ["said", "noted"]), (1, ["warned", "said"], ["noted"]), (2, ["noted"], [])],
)
def test_cli_logging_writes_masked_lines_to_stderr_at_the_verbosity_asked(
    unconfigured: None,
    flowkit_logger: logging.Logger,
    capsys: pytest.CaptureFixture[str],
    verbosity: int,
    shown: list[str],
    hidden: list[str],
) -> None:
    configure_cli_logging(verbosity)
    configure_cli_logging(verbosity)  # idempotent: one handler, one line per event
    log = get_logger()
    log.warning("warned", email="ada@example.com")
    log.info("said")
    log.debug("noted")
    captured = capsys.readouterr()
    assert captured.out == ""
    for event in shown:
        assert captured.err.count(f" {event}") == 1
    for event in hidden:
        assert event not in captured.err
    assert "ada@example.com" not in captured.err and "email='***'" in captured.err
