"""What a server or a caller may get wrong on the wire: stream lines whose fields have the wrong
types, tool-call arguments nested past the JSON parser's limit, text that is not valid Unicode.
Each is a typed ``LLMError`` (or goes through as text), never a TypeError, ValidationError,
RecursionError or UnicodeEncodeError; a real loopback server speaks both APIs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowkit.errors import LLMConfigError, LLMResponseError
from flowkit.llm import ToolCall

from .conftest import Reply, complete, make_llm, stream

pytestmark = pytest.mark.timeout(60)


def _openai_line(delta: dict[str, Any]) -> str:
    return f"data: {json.dumps({'choices': [{'delta': delta, 'finish_reason': None}]})}\n\n"


def _ollama_line(message: Any) -> str:
    return json.dumps({"message": message, "done": False}) + "\n"


def _call(**fields: Any) -> dict[str, Any]:
    function = {"name": "get_weather", "arguments": '{"city": "Paris"}', **fields}
    return {"index": 0, "id": "call_0", "type": "function", "function": function}


#: Stream lines each API could not have meant: a field of the wrong type.
BAD_LINES = {
    "openai": {
        "text that is a number": _openai_line({"content": 5}),
        "arguments that are an object": _openai_line(
            {"tool_calls": [_call(arguments={"city": "Paris"})]}
        ),
        "a tool name that is a number": _openai_line({"tool_calls": [_call(name=5)]}),
        "a call id that is a list": _openai_line({"tool_calls": [{**_call(), "id": [1]}]}),
    },
    "ollama": {
        "text that is a number": _ollama_line({"role": "assistant", "content": 5}),
        "a call id that is a number": _ollama_line(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": 7, "function": {"name": "t", "arguments": {}}}],
            }
        ),
        "a tool name that is a list": _ollama_line(
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": ["t"]}}]}
        ),
    },
}
CASES = [(kind, name) for kind, lines in BAD_LINES.items() for name in lines]


@pytest.mark.parametrize(("api", "case"), CASES, ids=[f"{k}: {n}" for k, n in CASES])
def test_a_stream_line_with_fields_of_the_wrong_type_is_a_response_error(
    server: Any, mode: str, api: str, case: str
) -> None:
    server.script(Reply(kind="status", status=200, body=BAD_LINES[api][case]))
    llm = make_llm(api, server.url)
    try:
        with pytest.raises(LLMResponseError, match="stream line that cannot be read"):
            stream(llm, mode, [])
    finally:
        llm.close()


DEEP_ARGUMENTS = "[" * 100_000 + "]" * 100_000


def test_arguments_nested_past_the_parser_limit_go_back_to_the_model_as_text(
    server: Any, connect: Any, mode: str
) -> None:
    call = ToolCall(id="call_0", name="get_weather", arguments=DEEP_ARGUMENTS)
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call.as_message_part()]},
        {"role": "tool", "content": "Error: not JSON", "tool_call_id": "call_0", "name": "x"},
    ]
    server.script(Reply(text="Sorry, let me try again."))
    answer = complete(connect(server.url), mode, messages)
    assert answer.text == "Sorry, let me try again."
    sent = server.requests[0].body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == DEEP_ARGUMENTS  # as the model wrote them, for it to correct


LONE_SURROGATE = "caf\udce9"  # what surrogateescape makes of a Latin-1 byte


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": LONE_SURROGATE},
        {"role": "user", "content": "hi", "name": LONE_SURROGATE},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "t", "arguments": f'{{"a": "{LONE_SURROGATE}"}}'}],
        },
    ],
    ids=["content", "name", "tool arguments"],
)
def test_text_that_is_not_valid_unicode_is_refused_before_anything_is_sent(
    server: Any, connect: Any, mode: str, message: dict[str, Any]
) -> None:
    with pytest.raises(LLMConfigError, match=r"Message 0.*not valid Unicode"):
        complete(connect(server.url), mode, [message])
    assert server.requests == []
