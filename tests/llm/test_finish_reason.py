"""Why the model stopped (``finish_reason``): given on an answer and on a stream's last
chunk, by both HTTP clients against a real loopback server, kept by a recording and given
back by its replay."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from flowkit.errors import LLMSchemaError
from flowkit.llm import RecordingLLM, ReplayLLM
from flowkit.llm._stream import said_text
from flowkit.testing.scripted import ScriptedLLM

from .conftest import USER, Reply, complete, stream


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_an_answer_says_why_the_model_stopped(server, connect, mode, finish):
    llm = connect(server.url)
    server.script(Reply(text="Hello there, friend", finish=finish))

    assert complete(llm, mode).finish_reason == finish


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_a_stream_says_why_on_its_last_chunk(server, connect, mode, finish):
    llm = connect(server.url)
    server.script(Reply(text="Hello there, friend", finish=finish))

    chunks = stream(llm, mode, [])

    assert chunks[-1].done and chunks[-1].finish_reason == finish
    assert all(c.finish_reason is None for c in chunks[:-1])


def test_a_recording_keeps_the_reason_and_its_replay_gives_it_back(server, connect):
    calls: list[dict] = []
    llm = RecordingLLM(connect(server.url), calls.append)
    server.script(Reply(text="cut short", finish="length"), Reply(text="streamed", finish="length"))
    assert llm.complete(USER).finish_reason == "length"
    assert list(llm.stream(USER))[-1].finish_reason == "length"

    assert [c["response"]["finish_reason"] for c in json.loads(json.dumps(calls))] == [
        "length",
        "length",
    ]
    replay = ReplayLLM(calls)
    assert replay.complete(USER).finish_reason == "length"
    assert list(replay.stream(USER))[-1].finish_reason == "length"


def test_an_answer_with_no_reason_records_as_before():
    """A recording of a backend that gives no reason has no ``finish_reason`` member, so
    cassettes recorded before it existed and after read alike."""
    calls: list[dict] = []
    RecordingLLM(ScriptedLLM([("hello", "Hello")]), calls.append).complete(USER)
    assert "finish_reason" not in calls[0]["response"]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        (None, None),
        ("", None),
        (5, None),
        ([], None),
        ("\ud800", None),  # a lone surrogate would make the journal unwritable
        ("x" * 1_000_000, None),
        ("stop\n", None),
    ],
)
def test_an_odd_reason_is_dropped_not_fatal(sent, kept):
    assert said_text(sent) == kept


class Plan(BaseModel):
    steps: list[str]


def test_a_schema_answer_cut_at_the_token_limit_says_so(server, connect, mode):
    llm = connect(server.url)
    cut = Reply(text='{"steps": ["pick", "pla', finish="length")
    server.script(cut, cut)  # the answer, then the repair's

    with pytest.raises(LLMSchemaError) as caught:
        complete(llm, mode, schema=Plan)

    assert "token limit" in str(caught.value) and "max_tokens" in str(caught.value)


def test_a_schema_answer_that_stopped_on_its_own_does_not_blame_the_limit(server, connect, mode):
    llm = connect(server.url)
    wrong = Reply(text='{"steps": "not a list"}', finish="stop")
    server.script(wrong, wrong)

    with pytest.raises(LLMSchemaError) as caught:
        complete(llm, mode, schema=Plan)

    assert "token limit" not in str(caught.value)


class Person(BaseModel):
    name: str
    age: int


def test_a_cut_answer_is_not_taken_for_a_value_inside_it(server, connect, mode):
    """Cut at the token limit, the answer's first value that fits the schema is a nested
    one (Bob, not Alice): never returned as the answer."""
    llm = connect(server.url)
    cut = Reply(
        text='{"name": "Alice", "age": 51, "reports": [{"name": "Bob", "age": 23}, {"na',
        finish="length",
    )
    server.script(cut, cut)

    with pytest.raises(LLMSchemaError) as caught:
        complete(llm, mode, schema=Person)

    assert "token limit" in str(caught.value)


def test_a_whole_answer_at_the_token_limit_is_taken(server, connect, mode):
    llm = connect(server.url)
    server.script(Reply(text='```json\n{"name": "Alice", "age": 51}\n```', finish="length"))

    assert complete(llm, mode, schema=Person).parsed == Person(name="Alice", age=51)
