"""Tool calling in the LLM layer: tools described from functions and models, tool calls read
from both APIs' real formats (whole and streamed), tool results sent back in each format,
and tool calls recorded and replayed like any call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from flowkit.errors import (
    LLMConfigError,
    ReplayMismatchError,
    ToolArgumentsError,
    ToolValidationError,
    UnknownToolError,
)
from flowkit.llm import LLMResponse, RecordingLLM, ReplayLLM, Tool, ToolCall, tool_message
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm._tools import as_tools, find_tool
from flowkit.llm.replay import request_key
from flowkit.testing import ScriptedLLM

from ._tool_server import Call, ToolServer, calls, says, tool_server
from .conftest import make_llm

__all__ = ["tool_server"]  # the fixture, imported for these tests

ASK = [{"role": "user", "content": "Weather in Paris, and the time there?"}]


def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Current weather for a city.

    The second paragraph is not part of the description.
    """
    return f"sunny, 21 {unit} in {city}"


def local_time(city: Annotated[str, Field(description="a city name")]) -> dict[str, str]:
    """The local time in a city."""
    return {"city": city, "time": "14:05"}


class Ticket(BaseModel):
    """Open a support ticket."""

    model_config = ConfigDict(title="open_ticket")

    title: str
    urgent: bool = False


@pytest.fixture
def llm(tool_server: ToolServer, kind: str) -> Iterator[HTTPChatLLM]:
    client = make_llm(kind, tool_server.url)
    yield client
    client.close()


def _complete(llm: Any, mode: str, messages: Any, **options: Any) -> LLMResponse:
    if mode == "sync":
        result: LLMResponse = llm.complete(messages, **options)
        return result
    return asyncio.run(llm.acomplete(messages, **options))  # type: ignore[no-any-return]


def _stream(llm: Any, mode: str, messages: Any, **options: Any) -> list[Any]:
    if mode == "sync":
        return list(llm.stream(messages, **options))

    async def collect() -> list[Any]:
        return [chunk async for chunk in llm.astream(messages, **options)]

    return asyncio.run(collect())


# -- describing tools ----------------------------------------------------------------------------


def test_a_typed_function_becomes_a_tool_with_a_json_schema() -> None:
    spec = Tool.from_function(get_weather).spec()
    assert spec == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"title": "City", "type": "string"},
                    "unit": {"default": "C", "enum": ["C", "F"], "title": "Unit", "type": "string"},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    described = Tool.from_function(local_time).parameters()["properties"]["city"]
    assert described["description"] == "a city name"


def test_a_pydantic_model_becomes_a_tool_named_by_its_title() -> None:
    (ticket,) = as_tools([Ticket])
    assert ticket.name == "open_ticket"
    assert ticket.spec()["function"]["description"] == "Open a support ticket."
    assert ticket.parameters()["required"] == ["title"]
    parsed = ticket.validate(ToolCall(id="c1", name="open_ticket", arguments='{"title": "jam"}'))
    assert parsed == Ticket(title="jam")


def test_a_model_tool_runs_with_the_validated_instance() -> None:
    opened: list[Ticket] = []
    ticket = Tool.from_model(Ticket, run=opened.append)
    ticket.invoke(ToolCall(id="c1", name="open_ticket", arguments='{"title": "jam"}'))
    assert opened == [Ticket(title="jam")]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([lambda city: city], "named function"),
        ([print], "annotations|no type annotation|takes"),
        ([get_weather, get_weather], "given twice: get_weather"),
        (get_weather, "takes a list of tools"),
        ([42], "not a tool"),
    ],
)
def test_what_cannot_be_a_tool_is_refused_with_the_fix(tools: Any, message: str) -> None:
    with pytest.raises(LLMConfigError, match=message):
        as_tools(tools)


def test_a_function_without_annotations_names_the_parameter() -> None:
    def untyped(city):  # type: ignore[no-untyped-def]
        return city

    with pytest.raises(LLMConfigError, match="parameter `city` has no type annotation"):
        Tool.from_function(untyped)


@pytest.mark.parametrize(
    ("arguments", "error", "text"),
    [
        ('{"city": "Par', ToolArgumentsError, "not valid JSON"),
        ('["Paris"]', ToolArgumentsError, "JSON list, not an object"),
        ('{"city": 3}', ToolValidationError, "do not fit its parameters: city: "),
        ('{"town": "Paris"}', ToolValidationError, "do not fit its parameters: .*town: "),
    ],
)
def test_bad_arguments_give_typed_errors_that_tell_the_model_what_to_do(
    arguments: str, error: type[Exception], text: str
) -> None:
    tool = Tool.from_function(get_weather)
    with pytest.raises(error, match=text) as caught:
        tool.invoke(ToolCall(id="c9", name="get_weather", arguments=arguments))
    assert caught.value.tool == "get_weather" and caught.value.call_id == "c9"  # type: ignore[attr-defined]


def test_an_unknown_tool_names_the_tools_there_are() -> None:
    with pytest.raises(UnknownToolError, match=r"no tool `fly`.*get_weather, local_time"):
        find_tool(as_tools([get_weather, local_time]), ToolCall(id="c1", name="fly"))


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "", "tool_calls": [{"name": "x"}]},
        {"role": "assistant", "content": "", "tool_calls": "get_weather"},
        {"role": "tool", "content": "ok", "tool_call_id": 7},
    ],
)
def test_malformed_tool_messages_are_refused(message: dict[str, Any]) -> None:
    llm = ScriptedLLM(default="hi")
    with pytest.raises(LLMConfigError, match="Message 1"):
        llm.complete([{"role": "user", "content": "hi"}, message])


# -- both APIs, for real -------------------------------------------------------------------------


def test_tools_are_offered_in_the_wire_format(
    tool_server: ToolServer, llm: HTTPChatLLM, mode: str
) -> None:
    tool_server.script(says("Hello"))
    answer = _complete(llm, mode, ASK, tools=[get_weather, local_time])
    assert answer.text == "Hello" and answer.tool_calls == []
    sent = tool_server.requests[0]["tools"]
    assert [t["type"] for t in sent] == ["function", "function"]
    assert [t["function"]["name"] for t in sent] == ["get_weather", "local_time"]
    assert sent[0]["function"]["parameters"]["required"] == ["city"]


def test_a_request_without_tools_sends_none(tool_server: ToolServer, llm: HTTPChatLLM) -> None:
    tool_server.script(says("Hello"))
    llm.complete(ASK)
    assert "tools" not in tool_server.requests[0]


def test_tool_calls_are_read_from_each_api(
    tool_server: ToolServer, llm: HTTPChatLLM, kind: str, mode: str
) -> None:
    tool_server.script(
        calls(Call("get_weather", {"city": "Paris"}), Call("local_time", {"city": "Paris"}))
    )
    answer = _complete(llm, mode, ASK, tools=[get_weather, local_time])
    assert answer.text == ""
    assert [(c.name, json.loads(c.arguments)) for c in answer.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("local_time", {"city": "Paris"}),
    ]
    # OpenAI gives ids; Ollama gives none, so each call gets call_<n>.
    assert [c.id for c in answer.tool_calls] == ["call_0", "call_1"]
    assert answer.usage is not None and answer.usage.total_tokens == 14


def test_tool_results_go_back_in_each_apis_format(
    tool_server: ToolServer, llm: HTTPChatLLM, kind: str
) -> None:
    tool_server.script(calls(Call("get_weather", {"city": "Paris"})), says("Sunny in Paris."))
    first = llm.complete(ASK, tools=[get_weather])
    call = first.tool_calls[0]
    conversation = [*ASK, first.assistant_message(), tool_message(call, get_weather("Paris"))]
    final = llm.complete(conversation, tools=[get_weather])
    assert final.text == "Sunny in Paris." and final.tool_calls == []
    assistant, result = tool_server.requests[1]["messages"][1:]
    if kind == "openai":
        assert assistant == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        }
        assert result == {
            "role": "tool",
            "content": "sunny, 21 C in Paris",
            "tool_call_id": "call_0",
        }
    else:
        assert assistant == {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        }
        assert result == {
            "role": "tool",
            "content": "sunny, 21 C in Paris",
            "tool_name": "get_weather",
        }


def test_streamed_tool_call_deltas_are_assembled(
    tool_server: ToolServer, llm: HTTPChatLLM, mode: str
) -> None:
    tool_server.script(
        calls(
            Call("get_weather", {"city": "Paris", "unit": "C"}),
            Call("local_time", {"city": "Paris"}),
            text="Let me check.",
        )
    )
    chunks = _stream(llm, mode, ASK, tools=[get_weather, local_time])
    assert "".join(c.text for c in chunks) == "Let me check."
    assert [c.done for c in chunks].count(True) == 1 and chunks[-1].done
    assert all(c.tool_calls == [] for c in chunks[:-1])
    assert [(c.id, c.name, json.loads(c.arguments)) for c in chunks[-1].tool_calls] == [
        ("call_0", "get_weather", {"city": "Paris", "unit": "C"}),
        ("call_1", "local_time", {"city": "Paris"}),
    ]
    assert tool_server.requests[0]["stream"] is True
    assert len(tool_server.requests[0]["tools"]) == 2


def test_malformed_arguments_arrive_as_sent_and_fail_validation_typed(
    tool_server: ToolServer, mode: str
) -> None:
    # Only OpenAI-style servers pass a model's raw argument text through.
    llm = make_llm("openai", tool_server.url)
    tool_server.script(calls(Call("get_weather", raw='{"city": "Par')))
    tool_server.script(calls(Call("get_weather", raw='{"city": "Par')))
    whole = _complete(llm, mode, ASK, tools=[get_weather]).tool_calls[0]
    streamed = _stream(llm, mode, ASK, tools=[get_weather])[-1].tool_calls[0]
    llm.close()
    assert whole.arguments == streamed.arguments == '{"city": "Par'
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        Tool.from_function(get_weather).validate(whole)


def test_a_schema_is_not_applied_to_an_answer_that_asks_for_tools(
    tool_server: ToolServer, llm: HTTPChatLLM
) -> None:
    class Forecast(BaseModel):
        summary: str

    tool_server.script(calls(Call("get_weather", {"city": "Paris"})))
    answer = llm.complete(ASK, schema=Forecast, tools=[get_weather])
    assert answer.parsed is None and answer.tool_calls[0].name == "get_weather"
    assert len(tool_server.requests) == 1  # no repair request


# -- record and replay ---------------------------------------------------------------------------


def test_tool_calls_are_recorded_and_replayed(
    tool_server: ToolServer, llm: HTTPChatLLM, mode: str
) -> None:
    tool_server.script(calls(Call("get_weather", {"city": "Paris"})), says("Sunny."))
    records: list[dict[str, Any]] = []
    recorder = RecordingLLM(llm, records.append)
    first = _complete(recorder, mode, ASK, tools=[get_weather])
    after = [*ASK, first.assistant_message(), tool_message(first.tool_calls[0], "sunny")]
    streamed = _stream(recorder, mode, after, tools=[get_weather])
    assert records[0]["request"]["tools"] == ["get_weather"]
    assert records[0]["response"]["tool_calls"][0]["name"] == "get_weather"
    assert "tool_calls" not in records[1]["response"]  # none asked: recorded as before

    replay = ReplayLLM(records)
    again = _complete(replay, mode, ASK, tools=[get_weather])
    assert again.tool_calls == first.tool_calls
    assert "".join(c.text for c in _stream(replay, mode, after, tools=[get_weather])) == "".join(
        c.text for c in streamed
    )
    assert replay.remaining == 0


def test_replay_tells_a_change_of_tools_apart() -> None:
    response = LLMResponse(text="", model="m", tool_calls=[ToolCall(id="c", name="get_weather")])
    recorded = {
        "request": {"messages": ASK, "schema": None, "tools": ["get_weather"]},
        "response": response.model_dump(mode="json"),
    }
    with pytest.raises(ReplayMismatchError, match=r"tools offered are \['local_time'\]"):
        ReplayLLM([recorded]).complete(ASK, tools=[local_time])
    streamed = list(ReplayLLM([recorded]).stream(ASK, tools=[get_weather]))
    assert streamed[-1].tool_calls == response.tool_calls


def test_a_request_without_tools_keeps_its_old_key() -> None:
    assert request_key(ASK, None) == request_key(ASK, None, []) == request_key(ASK, None, None)
    assert request_key(ASK, None, ["get_weather"]) != request_key(ASK, None)


def test_an_llm_written_before_tools_still_works_through_the_recorder() -> None:
    class Old:
        model = "old"

        def complete(self, messages: Any, *, schema: Any = None, timeout: Any = None) -> Any:
            return LLMResponse(text="fine", model="old")

    records: list[dict[str, Any]] = []
    assert RecordingLLM(Old(), records.append).complete(ASK).text == "fine"  # type: ignore[arg-type]
    assert "tools" not in records[0]["request"]


# -- scripted ------------------------------------------------------------------------------------


def test_scripted_llm_answers_with_tool_calls_and_matches_the_last_message() -> None:
    call = ToolCall(id="w1", name="get_weather", arguments='{"city": "Oslo"}')
    llm = ScriptedLLM([("sunny", "It is sunny.")], default=call, match_on="last")
    first = llm.complete(ASK, tools=[get_weather])
    assert first.tool_calls == [call] and first.text == ""
    after = [*ASK, first.assistant_message(), tool_message(call, get_weather("Oslo"))]
    assert llm.complete(after, tools=[get_weather]).text == "It is sunny."
    assert llm.calls[0].tools == ("get_weather",) and llm.calls[0].tool_calls == (call,)
    chunks = list(ScriptedLLM(default=[call, call]).stream(ASK, tools=[get_weather]))
    assert chunks[-1].tool_calls == [call, call]
