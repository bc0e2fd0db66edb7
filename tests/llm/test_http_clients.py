"""Both HTTP clients, sync and async, against a real loopback server that misbehaves on cue."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import httpx
import pytest
import structlog
from _pydantic_words import reason
from pydantic import BaseModel

from flowkit.errors import (
    LLMConfigError,
    LLMError,
    LLMResponseError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from flowkit.llm import LLM, Usage

from .conftest import USER, complete, fail, malformed, ok, slow
from .conftest import cut as cut_reply


class Tasks(BaseModel):
    tasks: list[str]


def test_answer_has_text_usage_latency_and_raw_body(server, connect, mode, kind):
    llm = connect(server.url)
    server.script(ok("Hi!"))

    response = complete(llm, mode)

    assert isinstance(llm, LLM)
    assert response.text == "Hi!"
    assert response.usage == Usage(prompt_tokens=5, completion_tokens=7, total_tokens=12)
    assert response.latency_s > 0
    assert response.model == llm.model
    assert response.raw["model"] == llm.model
    assert response.parsed is None
    [request] = server.requests
    assert request.body["messages"] == USER
    assert request.body["stream"] is False


def test_500_then_success_retries_and_returns_the_answer(server, connect, mode):
    llm = connect(server.url, max_retries=2)
    server.script(fail(500), fail(503), ok("recovered"))

    assert complete(llm, mode).text == "recovered"
    assert len(server.requests) == 3


def test_persistent_500_raises_unavailable_after_the_retry_budget(server, connect, mode):
    llm = connect(server.url, max_retries=2)
    server.fallback = fail(500, '{"error": {"message": "model crashed"}}')

    with pytest.raises(LLMUnavailableError) as caught:
        complete(llm, mode)

    assert len(server.requests) == 3
    assert caught.value.status_code == 500
    assert "model crashed" in str(caught.value)
    assert "3 attempts" in str(caught.value)
    assert caught.value.retryable


def test_max_retries_zero_makes_exactly_one_attempt(server, connect, mode):
    llm = connect(server.url, max_retries=0)
    server.fallback = fail(502)

    with pytest.raises(LLMUnavailableError):
        complete(llm, mode)

    assert len(server.requests) == 1


def test_429_honours_retry_after_capped_by_the_backoff(server, connect, mode):
    llm = connect(server.url)
    server.script(fail(429, "slow down", Retry_After="30"), ok("after the wait"))

    with structlog.testing.capture_logs() as logs:
        assert complete(llm, mode).text == "after the wait"

    [retry] = [e for e in logs if e["event"] == "llm_retry"]
    assert retry["status"] == 429
    assert retry["delay"] == 0.05  # Retry-After 30 s, capped by max_retry_after in FAST
    assert retry["log_level"] == "warning"
    assert retry["attempt"] == 1
    assert len(server.requests) == 2


def test_429_with_small_retry_after_waits_what_the_server_asked(server, connect, mode):
    llm = connect(server.url)
    server.script(fail(429, "", Retry_After="0"), ok())

    with structlog.testing.capture_logs() as logs:
        complete(llm, mode)

    assert [e["delay"] for e in logs if e["event"] == "llm_retry"] == [0.0]


def test_429_with_a_retry_after_that_is_not_a_number_falls_back_to_the_schedule(
    server, connect, mode
):
    llm = connect(server.url)
    server.script(
        fail(429, "", Retry_After="nan"), fail(429, "", **{"Retry-After-Ms": "NaN"}), ok()
    )

    with structlog.testing.capture_logs() as logs:
        assert complete(llm, mode).text

    delays = [e["delay"] for e in logs if e["event"] == "llm_retry"]
    assert len(delays) == 2 and all(not math.isnan(d) and d >= 0 for d in delays)


def test_persistent_429_raises_unavailable_with_the_status(server, connect, mode):
    llm = connect(server.url, max_retries=1)
    server.fallback = fail(429, '{"error": {"message": "rate limited"}}', Retry_After="0")

    with pytest.raises(LLMUnavailableError) as caught:
        complete(llm, mode)

    assert caught.value.status_code == 429
    assert len(server.requests) == 2


def test_refused_connection_raises_unavailable_after_retries(dead_url, connect, mode):
    llm = connect(dead_url, max_retries=2)

    with structlog.testing.capture_logs() as logs, pytest.raises(LLMUnavailableError) as caught:
        complete(llm, mode)

    retries = [e for e in logs if e["event"] == "llm_retry"]
    assert [e["attempt"] for e in retries] == [1, 2]
    assert {e["reason"] for e in retries} == {"unavailable"}
    assert caught.value.status_code is None
    assert f"POST {dead_url}" in str(caught.value) and "on all 3 attempts" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_slow_server_times_out_on_every_attempt(server, connect, mode):
    llm = connect(server.url, timeout=0.2, max_retries=1)
    server.fallback = slow(3.0)

    with pytest.raises(LLMTimeoutError) as caught:
        complete(llm, mode)

    assert len(server.requests) == 2
    assert "0.2 s" in str(caught.value)
    # httpx's read timeout or the attempt's deadline, whichever fires first.
    assert type(caught.value.__cause__).__name__ in ("ReadTimeout", "TimeoutError")


def test_per_call_timeout_overrides_the_client_default(server, connect, mode):
    llm = connect(server.url, timeout=30.0, max_retries=0)
    server.fallback = slow(3.0)

    with pytest.raises(LLMTimeoutError):
        complete(llm, mode, timeout=0.2)

    assert len(server.requests) == 1


def test_slow_once_then_fast_succeeds_on_retry(server, connect, mode):
    llm = connect(server.url, timeout=0.2, max_retries=1)
    server.script(slow(3.0), ok("second try"))

    assert complete(llm, mode).text == "second try"
    assert len(server.requests) == 2


def test_body_cut_off_is_retried_like_a_network_error(server, connect, mode):
    llm = connect(server.url, max_retries=1)
    server.script(cut_reply(), ok("whole"))

    assert complete(llm, mode).text == "whole"
    assert len(server.requests) == 2


def test_malformed_body_is_a_response_error_without_retry(server, connect, mode):
    llm = connect(server.url)
    server.fallback = malformed()

    with pytest.raises(LLMResponseError) as caught:
        complete(llm, mode)

    assert len(server.requests) == 1
    assert "not a chat completion" in str(caught.value)
    assert caught.value.raw_text.startswith("<html>")
    assert not caught.value.retryable


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried_and_say_what_to_check(server, connect, mode, status):
    llm = connect(server.url)
    server.fallback = fail(status, '{"error": {"message": "nope"}}')

    with pytest.raises(LLMResponseError) as caught:
        complete(llm, mode)

    assert len(server.requests) == 1
    message = str(caught.value)
    assert f"HTTP {status}" in message and "nope" in message
    assert "Check" in message


def test_prose_around_json_is_parsed_into_the_schema(server, connect, mode):
    llm = connect(server.url)
    server.script(ok('<think>maybe {"tasks": 1}</think>Sure! ```json\n{"tasks": ["a", "b"]}\n```'))

    response = complete(llm, mode, schema=Tasks)

    assert response.parsed == Tasks(tasks=["a", "b"])
    assert len(server.requests) == 1


def test_schema_violation_is_repaired_with_one_more_request(server, connect, mode):
    llm = connect(server.url)
    server.script(ok('{"tasks": "not a list"}'), ok('{"tasks": ["fixed"]}'))

    response = complete(llm, mode, schema=Tasks)

    assert response.parsed == Tasks(tasks=["fixed"])
    _, repair = server.requests
    assert repair.body["messages"][: len(USER)] == USER
    assert repair.body["messages"][-2] == {
        "role": "assistant",
        "content": '{"tasks": "not a list"}',
    }
    assert (
        f"tasks: {reason(Tasks, {'tasks': 'not a list'})}" in repair.body["messages"][-1]["content"]
    )
    assert response.usage == Usage(prompt_tokens=10, completion_tokens=14, total_tokens=24)


def test_schema_violation_twice_raises_schema_error_with_raw_text(server, connect, mode):
    llm = connect(server.url)
    server.fallback = ok("I cannot answer in JSON, sorry.")

    with pytest.raises(LLMSchemaError) as caught:
        complete(llm, mode, schema=Tasks)

    assert len(server.requests) == 2
    assert caught.value.raw_text == "I cannot answer in JSON, sorry."
    assert caught.value.errors[0]["type"] == "json_invalid"
    assert "Tasks" in str(caught.value)


def test_ollama_asks_for_json_format_only_with_a_schema(server, mode):
    from .conftest import make_llm

    with make_llm("ollama", server.url, temperature=0.2) as llm:
        server.script(ok("plain"), ok('{"tasks": []}'))
        complete(llm, mode)
        complete(llm, mode, schema=Tasks)

    plain, structured = server.requests
    assert "format" not in plain.body
    assert structured.body["format"] == "json"
    assert plain.body["options"] == {"temperature": 0.2}


def test_openai_sends_temperature_json_mode_extra_body_and_bearer_key(server, mode):
    from .conftest import make_llm

    options = {"temperature": 0.0, "json_mode": True, "extra_body": {"max_tokens": 9}}
    with make_llm("openai", server.url, api_key="k-123", **options) as llm:
        complete(llm, mode)

    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["temperature"] == 0.0
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["max_tokens"] == 9
    assert request.headers["authorization"] == "Bearer k-123"


def test_a_password_in_the_base_url_is_in_no_repr_or_error(server, connect, mode):
    """Masked in log lines, it was shown by ``repr`` and every error (found by a defect
    hunt)."""
    url = server.url.replace("://", "://proxyuser:hunter2-Pa55@", 1)
    llm = connect(url, max_retries=0)
    server.script(fail(503, "busy"))
    assert "hunter2" not in repr(llm) and "proxyuser:***@" in repr(llm)
    with pytest.raises(LLMError) as caught:
        complete(llm, mode)
    assert "hunter2" not in str(caught.value) and "proxyuser:***@" in str(caught.value)


@pytest.mark.parametrize(
    "options",
    [{"timeout": 0}, {"timeout": -1.0}, {"max_retries": -1}, {"model": ""}, {"base_url": "x"}],
)
def test_bad_client_options_raise_config_errors(kind, options):
    from .conftest import make_llm

    with pytest.raises(LLMConfigError):
        make_llm(kind, "http://127.0.0.1:1", **options)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        "hello",
        [{"role": "user"}],
        [{"content": 3}],
        # A value JSON cannot carry: the JSON encoder's own TypeError escaped (found by a
        # defect hunt), where ScriptedLLM took it.
        [{"role": "user", "content": "hi", "sent_at": datetime(2026, 1, 1, tzinfo=UTC)}],
        [{"role": "user", "content": "hi", "score": float("nan")}],
    ],
)
def test_malformed_messages_raise_config_errors_before_any_request(server, connect, mode, messages):
    llm = connect(server.url)

    with pytest.raises(LLMConfigError):
        complete(llm, mode, messages)

    assert server.requests == []


def test_bad_per_call_timeout_raises_config_error(server, connect, mode):
    with pytest.raises(LLMConfigError):
        complete(connect(server.url), mode, timeout=0)


def test_sync_client_is_reused_and_reopened_after_close(server, connect):
    llm = connect(server.url)
    llm.complete(USER)
    llm.close()
    llm.close()  # closing twice is harmless

    assert llm.complete(USER).text == "Hello there, friend"
    assert len(server.requests) == 2
