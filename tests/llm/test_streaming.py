"""Streaming from both HTTP clients: chunks in order, and no truncated answer passed as whole."""

from __future__ import annotations

import asyncio

import pytest

from flowkit.errors import LLMResponseError, LLMTimeoutError, LLMUnavailableError

from .conftest import (
    bad_line,
    complete,
    cut,
    cut_unframed,
    error_line,
    fail,
    ok,
    slow,
    stall,
    stream,
    unterminated,
)


def test_stream_yields_the_text_in_chunks_and_a_final_done(server, connect, mode):
    llm = connect(server.url)
    server.script(ok("Hello there, friend"))

    chunks = stream(llm, mode, [])

    assert "".join(c.text for c in chunks) == "Hello there, friend"
    assert len(chunks) > 2
    assert chunks[-1].done and not any(c.done for c in chunks[:-1])
    assert server.requests[0].body["stream"] is True


def test_ollama_stream_reports_usage_on_the_final_chunk(server, mode):
    from .conftest import make_llm

    with make_llm("ollama", server.url) as llm:
        chunks = stream(llm, mode, [])

    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 12


def test_stream_cut_off_midway_raises_and_keeps_what_arrived(server, connect, mode):
    llm = connect(server.url)
    server.script(cut("Hello there, friend, how are you today"))
    received: list = []

    with pytest.raises(LLMUnavailableError) as caught:
        stream(llm, mode, received)

    assert received and not any(c.done for c in received)
    assert "cut off" in str(caught.value)
    assert f"after {len(''.join(c.text for c in received))} characters" in str(caught.value)


def test_stream_ending_without_end_marker_is_a_response_error(server, connect, mode):
    llm = connect(server.url)
    server.script(unterminated("Hello there"))
    received: list = []

    with pytest.raises(LLMResponseError) as caught:
        stream(llm, mode, received)

    assert not any(c.done for c in received)
    assert caught.value.raw_text == "Hello there"
    assert "incomplete" in str(caught.value)


def test_unreadable_stream_line_is_a_response_error(server, connect, mode):
    llm = connect(server.url)
    server.script(bad_line())

    with pytest.raises(LLMResponseError, match="cannot be read"):
        stream(llm, mode, [])


def test_stream_retries_before_the_first_byte(server, connect, mode):
    llm = connect(server.url, max_retries=1)
    server.script(fail(503), ok("second"))

    chunks = stream(llm, mode, [])

    assert "".join(c.text for c in chunks) == "second"
    assert len(server.requests) == 2


def test_stream_error_status_after_retries_is_unavailable(server, connect, mode):
    llm = connect(server.url, max_retries=1)
    server.fallback = fail(500)

    with pytest.raises(LLMUnavailableError):
        stream(llm, mode, [])

    assert len(server.requests) == 2


def test_stream_from_a_stalled_server_times_out(server, connect, mode):
    llm = connect(server.url, timeout=0.2, max_retries=0)
    server.fallback = slow(3.0)

    with pytest.raises(LLMTimeoutError):
        stream(llm, mode, [])


def test_error_reported_inside_the_stream_is_a_response_error(server, connect, mode):
    llm = connect(server.url)
    server.script(error_line())

    with pytest.raises(LLMResponseError, match="model overloaded"):
        stream(llm, mode, [])


def test_abandoning_a_stream_early_releases_the_connection(server, connect, mode):
    llm = connect(server.url)
    server.fallback = ok("one two three four five six seven eight nine ten")

    if mode == "sync":
        chunks = llm.stream([{"role": "user", "content": "count"}])
        first = next(chunks)
        chunks.close()
    else:

        async def first_only():
            async for chunk in llm.astream([{"role": "user", "content": "count"}]):
                return chunk

        first = asyncio.run(first_only())

    assert first.text and not first.done
    assert complete(llm, mode).text.startswith("one two")  # the client still works


# -- a stream that stops midway: the documented, retryable types (issue 23 item 19) ----------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("framed", [True, False], ids=["chunked", "ended-by-close"])
def test_a_stream_that_stalls_midway_is_a_timeout_error(server, connect, mode, framed):
    llm = connect(server.url, timeout=1.0, max_retries=0)
    server.script(stall(framed=framed))
    received: list = []

    with pytest.raises(LLMTimeoutError) as caught:
        stream(llm, mode, received)

    assert caught.value.retryable
    assert received and not any(c.done for c in received)


@pytest.mark.timeout(20)
def test_an_answer_that_stalls_midway_is_a_timeout_error_retried(server, connect, mode):
    llm = connect(server.url, timeout=1.0, max_retries=1)
    server.script(stall(framed=False), ok("second"))

    assert complete(llm, mode).text == "second"
    assert len(server.requests) == 2


@pytest.mark.parametrize("mid_line", [False, True], ids=["between-lines", "mid-line"])
def test_a_stream_whose_connection_closes_before_its_end_is_unavailable(
    server, connect, mode, mid_line
):
    llm = connect(server.url)
    server.script(cut_unframed(mid_line=mid_line))
    received: list = []

    with pytest.raises(LLMUnavailableError) as caught:
        stream(llm, mode, received)

    assert caught.value.retryable
    assert received and not any(c.done for c in received)
    assert "cut off" in str(caught.value)


def test_a_cut_stream_fails_its_node_retryably_and_the_retry_policy_runs_it_again(server):
    from pydantic import BaseModel

    from flowkit import END, Flow, RetryPolicy, Runner, node

    from .conftest import make_llm

    class State(BaseModel):
        reply: str = ""

    @node(writes=["reply"], retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False))
    def ask(state: State, ctx) -> dict:
        return {
            "reply": "".join(c.text for c in ctx.llm.stream([{"role": "user", "content": "hi"}]))
        }

    server.script(cut_unframed(), ok("whole answer"))
    with make_llm("openai", server.url) as llm:
        flow = Flow(name="s", state=State, start="ask", nodes={"ask": ask}, routes={"ask": END})
        result = Runner(flow, llm=llm).start("t1")
    assert result.status == "done" and result.state.reply == "whole answer"
