"""Deeply nested or huge answers and error bodies: a typed ``LLMError``, never RecursionError.

A real loopback server sends them; both clients, sync and async, plain, structured and stream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit.errors import InputTooDeepError, LLMError, LLMResponseError, LLMSchemaError
from flowkit.llm import extract_json
from flowkit.llm._extract import json_candidates
from flowkit.llm._structured import parse_answer

from .conftest import Reply, complete

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000

pytestmark = pytest.mark.timeout(60)


class Answer(BaseModel):
    intent: str


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT, "Sure: " + DEEP, "```json\n" + DEEP + "\n```"])
def test_a_deeply_nested_answer_is_a_response_error_from_the_depth_limit(text: str) -> None:
    with pytest.raises(LLMResponseError) as caught:
        extract_json(text)
    assert isinstance(caught.value.__cause__, InputTooDeepError)
    with pytest.raises(LLMSchemaError) as schema_error:
        parse_answer(text, Answer)
    assert isinstance(schema_error.value.__cause__, InputTooDeepError)


def test_nested_json_within_the_limit_is_still_found() -> None:
    value = {"a": [[[[{"b": "[[[[ in a string ]]]]"}]]]]}
    import json

    assert extract_json("Here: " + json.dumps(value) + " done") == value
    assert next(json_candidates(json.dumps(value))) == value


def test_a_deeply_nested_body_is_a_response_error(server: Any, connect: Any, mode: str) -> None:
    server.script(Reply(kind="status", status=200, body=DEEP))
    with pytest.raises(LLMResponseError) as caught:
        complete(connect(server.url), mode)
    assert isinstance(caught.value.__cause__, InputTooDeepError)


def test_a_deeply_nested_answer_text_fails_a_structured_call_as_an_llm_error(
    server: Any, connect: Any, mode: str
) -> None:
    server.script(Reply(text=DEEP), Reply(text=DEEP))
    with pytest.raises(LLMError):
        complete(connect(server.url), mode, schema=Answer)


def test_a_deeply_nested_error_body_still_gives_the_status_error(
    server: Any, connect: Any, mode: str
) -> None:
    server.script(Reply(kind="status", status=400, body=DEEP))
    with pytest.raises(LLMResponseError, match="HTTP 400"):
        complete(connect(server.url), mode)


def test_a_deeply_nested_stream_line_is_a_response_error(
    server: Any, connect: Any, kind: str, mode: str
) -> None:
    line = f"data: {DEEP}\n\n" if kind == "openai" else DEEP + "\n"
    server.script(Reply(kind="status", status=200, body=line))
    llm = connect(server.url)

    async def drain() -> None:
        async for _ in llm.astream([{"role": "user", "content": "hi"}]):
            pass

    with pytest.raises(LLMResponseError):
        if mode == "sync":
            for _ in llm.stream([{"role": "user", "content": "hi"}]):
                pass
        else:
            asyncio.run(drain())
