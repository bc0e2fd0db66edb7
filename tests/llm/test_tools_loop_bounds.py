"""The tool loop's bounds: ``max_rounds`` bounds one agent turn (not the whole conversation of
a chat flow that comes back to the agent after a gate), and ``max_calls`` bounds how many
tool calls one model answer gets run, against a loopback server speaking each API's format."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import Flow, Gate, NodeError, Runner
from flowkit.errors import LLMConfigError, ToolCallLimitError
from flowkit.llm import ReplayLLM, ToolLoop, ToolLoopState
from flowkit.stores import MemoryStore

from ._tool_server import Call, ToolServer, calls, says, tool_server
from .conftest import make_llm

__all__ = ["tool_server"]

ran: list[str] = []


def local_time(city: str) -> str:
    """The local time in a city."""
    ran.append(city)
    return f"15:30 in {city}"


class Chat(ToolLoopState):
    pass


class Said(BaseModel):
    text: str


def user_says(state: Chat, said: Said) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": said.text}]}


def chat_flow(loop: ToolLoop) -> Flow:
    """user -> agent (tools as needed) -> user -> ...: a conversation through a gate."""
    return Flow(
        name="chat",
        state=Chat,
        start="user",
        nodes=loop.nodes,
        gates={"user": Gate(Said, apply=user_says, writes=["messages"])},
        routes={**loop.routes(then="user"), "user": loop.name},
    )


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    ran.clear()


def test_max_rounds_bounds_each_turn_of_a_conversation_not_the_whole_of_it(
    tool_server: ToolServer, kind: str
) -> None:
    turns = 4
    for n in range(turns):
        tool_server.script(calls(Call("local_time", {"city": f"city{n}"})), says(f"answer {n}"))
    llm = make_llm(kind, tool_server.url)
    flow = chat_flow(ToolLoop([local_time], max_rounds=1))
    runner = Runner(flow, store=MemoryStore(), llm=llm)
    result = runner.start("c1")
    for n in range(turns):
        assert result.waiting and result.node == "user"
        result = runner.resume("c1", {"text": f"question {n}"})
        assert result.status == "waiting", result.error
        assert result.state.answer == f"answer {n}" and result.state.tool_rounds == 1
    llm.close()
    assert ran == [f"city{n}" for n in range(turns)]

    # The count is derived from the conversation, so replaying the journal gives the same.
    replay = ReplayLLM(runner.llm_calls("c1"))
    again = Runner(flow, store=MemoryStore(), llm=replay)
    again.start("c2")
    for n in range(turns):
        replayed = again.resume("c2", {"text": f"question {n}"})
    assert replayed.state == result.state and replay.remaining == 0


def test_a_turn_that_hit_the_limit_does_not_doom_the_next_turn(
    tool_server: ToolServer, kind: str
) -> None:
    class Guarded(Chat):
        error: NodeError | None = None

    def sorry(state: Guarded) -> dict[str, Any]:
        return {"answer": "sorry", "error": None}

    loop = ToolLoop([local_time], max_rounds=1)
    flow = Flow(
        name="guarded_chat",
        state=Guarded,
        start="user",
        nodes={**loop.nodes, "sorry": sorry},
        gates={"user": Gate(Said, apply=user_says, writes=["messages"])},
        routes={**loop.routes(then="user", on_error="sorry"), "user": "agent", "sorry": "user"},
    )
    tool_server.script(
        calls(Call("local_time", {"city": "a"})),
        calls(Call("local_time", {"city": "b"})),  # a second round: over the limit
        calls(Call("local_time", {"city": "c"})),
        says("It is 15:30."),
    )
    llm = make_llm(kind, tool_server.url)
    runner = Runner(flow, llm=llm)
    runner.start("c1")
    first = runner.resume("c1", {"text": "time?"})
    assert first.waiting and first.state.answer == "sorry"
    second = runner.resume("c1", {"text": "time, please?"})
    llm.close()
    assert second.waiting and second.state.answer == "It is 15:30."
    assert ran == ["a", "c"]


def test_calls_beyond_max_calls_are_not_run_and_the_model_is_told(
    tool_server: ToolServer, kind: str
) -> None:
    many = 50
    tool_server.script(
        calls(*(Call("local_time", {"city": f"c{n}"}) for n in range(many))),
        says("Done."),
    )
    llm = make_llm(kind, tool_server.url)
    flow = chat_flow(ToolLoop([local_time], max_calls=3))
    runner = Runner(flow, llm=llm)
    runner.start("c1")
    result = runner.resume("c1", {"text": "time everywhere?"})
    llm.close()
    assert result.waiting and result.state.answer == "Done."
    assert ran == ["c0", "c1", "c2"]
    results = [m["content"] for m in result.state.messages if m["role"] == "tool"]
    assert len(results) == many  # every call is answered, as both APIs require
    assert results[:3] == ["15:30 in c0", "15:30 in c1", "15:30 in c2"]
    refused = results[3:]
    assert all(r.startswith("Error: Not run: ") and "at most 3 tool calls" in r for r in refused)
    # The model saw every answer on its next turn.
    assert [m["role"] for m in tool_server.requests[-1]["messages"]].count("tool") == many


def test_calls_beyond_max_calls_are_typed_errors_outside_a_flow_too(
    tool_server: ToolServer, kind: str
) -> None:
    tool_server.script(
        calls(*(Call("local_time", {"city": f"c{n}"}) for n in range(5))),
        says("Done."),
    )
    llm = make_llm(kind, tool_server.url)
    outcome = ToolLoop([local_time], max_calls=2).run(llm, [{"role": "user", "content": "?"}])
    llm.close()
    assert outcome.answer == "Done." and ran == ["c0", "c1"]
    assert [type(e) for e in outcome.errors] == [ToolCallLimitError] * 3
    assert outcome.errors[0].tool == "local_time"


def test_the_logs_hold_one_line_for_the_calls_refused_in_a_round() -> None:
    from structlog.testing import capture_logs

    from flowkit.llm import ToolCall
    from flowkit.testing import ScriptedLLM

    llm = ScriptedLLM(
        [("Error: Not run", "ok")],
        default=[
            ToolCall(id=f"x{n}", name="local_time", arguments='{"city": "P"}') for n in range(40)
        ],
        match_on="last",
    )
    with capture_logs() as logs:
        ToolLoop([local_time], max_calls=1).run(llm, [{"role": "user", "content": "?"}])
    over = [e for e in logs if e["event"] == "tool_calls_over_limit"]
    assert len(over) == 1 and over[0]["refused"] == 39 and over[0]["max_calls"] == 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "8", None])
def test_max_calls_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(LLMConfigError, match="max_calls must be an integer >= 1"):
        ToolLoop([local_time], max_calls=bad)
