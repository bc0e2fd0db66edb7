"""The prebuilt tool loop: a two-tool agent in a flow runs against a loopback server speaking
each API's real tool-call format to a final answer, the model's mistakes go back to it as
tool results, the rounds are bounded, and replay reproduces the run with no server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, NodeError, Runner
from flowkit.errors import FlowDefinitionError, LLMConfigError, ToolError, ToolLoopLimitError
from flowkit.llm import ReplayLLM, Tool, ToolCall, ToolLoop, ToolLoopState
from flowkit.stores import MemoryStore
from flowkit.testing import ScriptedLLM

from ._tool_server import Call, ToolServer, calls, says, tool_server
from .conftest import make_llm

__all__ = ["tool_server"]

QUESTION = "What should I wear in Paris this afternoon?"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Atlantis":
        raise ToolError(f"no weather station in {city}; ask about a real city")
    return f"light rain, 14 C in {city}"


def local_time(city: str) -> dict[str, str]:
    """The local time in a city."""
    return {"city": city, "time": "15:30"}


class Trip(ToolLoopState):
    city: str = ""
    advice: str = ""


def finish(state: Trip) -> dict[str, Any]:
    return {"advice": state.answer.upper()}


def trip_flow(loop: ToolLoop) -> Flow:
    return Flow(
        name="trip",
        state=Trip,
        start="agent",
        nodes={**loop.nodes, "finish": finish},
        routes={**loop.routes(then="finish"), "finish": END},
    )


def start_state() -> dict[str, Any]:
    return {"city": "Paris", "messages": [{"role": "user", "content": QUESTION}]}


#: The model's turns: both tools at once; then a malformed call, an unknown tool and a call
#: whose arguments fail validation, all in one turn; a tool that reports its own error;
#: then the answer.
TURNS = (
    calls(Call("get_weather", {"city": "Paris"}), Call("local_time", {"city": "Paris"})),
    calls(
        Call("get_weather", {"town": "Paris"}),
        Call("umbrella_stock", {"city": "Paris"}),
        Call("get_weather", {"city": "Atlantis"}),
    ),
    says("Take a raincoat: light rain at 14 C, and it is 15:30."),
)


def _tool_results(state: Trip) -> list[str]:
    return [m["content"] for m in state.messages if m["role"] == "tool"]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_two_tool_agent_reaches_a_final_answer_and_replays_without_the_server(
    tool_server: ToolServer, kind: str, streamed: bool
) -> None:
    tool_server.script(*TURNS)
    loop = ToolLoop([get_weather, local_time], system="Use the tools.", stream=streamed)
    flow = trip_flow(loop)
    llm = make_llm(kind, tool_server.url)
    live = Runner(flow, store=MemoryStore(), llm=llm)
    tokens: list[str] = []
    if streamed:
        stream = live.stream("t1", start_state(), mode="tokens")
        tokens = [token.text for token in stream]
        result = stream.result
    else:
        result = live.start("t1", start_state())
    llm.close()

    assert result is not None and result.status == "done"
    state = result.state
    assert state.answer == "Take a raincoat: light rain at 14 C, and it is 15:30."
    assert state.advice == state.answer.upper()
    assert state.tool_rounds == 2 and state.pending_tools == 0
    results = _tool_results(state)
    assert results[:2] == ["light rain, 14 C in Paris", '{"city": "Paris", "time": "15:30"}']
    assert results[2].startswith("Error: The arguments of `get_weather`")
    assert "do not fit its parameters" in results[2] and "town: " in results[2]
    assert results[3].startswith("Error: There is no tool `umbrella_stock`")
    assert results[4] == "Error: no weather station in Atlantis; ask about a real city"
    if streamed:
        assert "".join(tokens) == state.answer

    # What the server saw: the system prompt first, the tools each time, the results back.
    assert len(tool_server.requests) == 3
    last = tool_server.requests[-1]
    assert last["messages"][0] == {"role": "system", "content": "Use the tools."}
    assert [t["function"]["name"] for t in last["tools"]] == ["get_weather", "local_time"]
    assert [m["role"] for m in last["messages"]].count("tool") == 5

    # Replay: the journaled calls answer every turn; the server is gone.
    tool_server.shutdown()
    calls_made = live.llm_calls("t1")
    assert [c["request"]["tools"] for c in calls_made] == [["get_weather", "local_time"]] * 3
    replay = ReplayLLM(calls_made)
    again = Runner(flow, store=MemoryStore(), llm=replay).start("t2", start_state())
    assert again.state == state and replay.remaining == 0


def test_the_loop_replays_from_a_cassette_in_another_process_shape(tmp_path: Any) -> None:
    from flowkit.llm import save_cassette

    script = ScriptedLLM(
        [("15:30", "Raincoat.")],
        default=[
            ToolCall(id="a", name="get_weather", arguments='{"city": "Paris"}'),
            ToolCall(id="b", name="local_time", arguments='{"city": "Paris"}'),
        ],
        match_on="last",
    )
    flow = trip_flow(ToolLoop([get_weather, local_time]))
    live = Runner(flow, llm=script)
    first = live.start("t1", start_state())
    assert first.state.answer == "Raincoat."
    cassette = tmp_path / "trip.json"
    save_cassette(cassette, live.llm_calls("t1"))
    replayed = Runner(flow, llm=ReplayLLM.from_file(cassette)).start("t1", start_state())
    assert replayed.state == first.state


def test_a_model_that_never_stops_asking_is_bounded() -> None:
    forever = ScriptedLLM(default=ToolCall(id="x", name="local_time", arguments='{"city": "P"}'))
    flow = trip_flow(ToolLoop([local_time], max_rounds=3))
    result = Runner(flow, llm=forever).start("t1", start_state())
    assert result.status == "failed" and result.error is not None
    assert result.error.type == "ToolLoopLimitError"
    assert "after 3 rounds" in result.error.message and "raise max_rounds" in result.error.message
    assert result.state.tool_rounds == 3
    assert len(forever.calls) == 4  # three rounds of tools, then the turn that asked again
    with pytest.raises(ToolLoopLimitError) as caught:
        ToolLoop([local_time], max_rounds=3).run(forever, [{"role": "user", "content": "?"}])
    assert caught.value.rounds == 3


def test_a_limit_reached_can_be_routed_like_any_node_error() -> None:
    class Guarded(Trip):
        error: NodeError | None = None

    def apologise(state: Guarded) -> dict[str, Any]:
        return {"advice": "sorry"}

    forever = ScriptedLLM(default=ToolCall(id="x", name="local_time", arguments="{}"))
    loop = ToolLoop([local_time], max_rounds=1)
    flow = Flow(
        name="guarded",
        state=Guarded,
        start="agent",
        nodes={**loop.nodes, "finish": finish, "apologise": apologise},
        routes={
            **loop.routes(then="finish", on_error="apologise"),
            "finish": END,
            "apologise": END,
        },
    )
    result = Runner(flow, llm=forever).start("t1", start_state())
    assert result.status == "done" and result.state.advice == "sorry"
    assert result.state.error.type == "ToolLoopLimitError"


def test_async_tools_run_in_an_async_node() -> None:
    async def slow_time(city: str) -> str:
        """The local time, from a slow service."""
        await asyncio.sleep(0)
        return f"15:30 in {city}"

    llm = ScriptedLLM(
        [("15:30", "It is 15:30.")],
        default=ToolCall(id="a", name="slow_time", arguments='{"city": "Paris"}'),
        match_on="last",
    )
    loop = ToolLoop([slow_time])
    assert loop.nodes["agent_tools"].is_async
    result = asyncio.run(Runner(trip_flow(loop), llm=llm).astart("t1", start_state()))
    assert result.state.answer == "It is 15:30."
    assert _tool_results(result.state) == ["15:30 in Paris"]


class _Crash(BaseException):
    """Stands in for the process dying: no node error handling catches it."""


def test_a_crash_after_the_tools_resumes_without_asking_the_model_again() -> None:
    store = MemoryStore()
    llm = ScriptedLLM(
        [("15:30", "Done.")],
        default=ToolCall(id="a", name="local_time", arguments='{"city": "Paris"}'),
        match_on="last",
    )
    armed = [True]

    def fragile(state: Trip) -> dict[str, Any]:
        if armed.pop() if armed else False:
            raise _Crash
        return finish(state)

    loop = ToolLoop([local_time])
    flow = Flow(
        name="trip",
        state=Trip,
        start="agent",
        nodes={**loop.nodes, "finish": fragile},
        routes={**loop.routes(then="finish"), "finish": END},
    )
    with pytest.raises(_Crash):
        Runner(flow, store=store, llm=llm).start("t1", start_state())
    asked = len(llm.calls)
    assert asked == 2
    after = Runner(flow, store=store, llm=llm)
    assert after.get_state("t1").status == "pending"
    result = after.resume("t1")
    assert result.status == "done" and result.state.advice == "DONE."
    assert len(llm.calls) == asked  # the model's turns and the tools' round were journaled


def test_the_loop_runs_outside_a_flow_too(tool_server: ToolServer, kind: str) -> None:
    tool_server.script(
        calls(Call("get_weather", {"city": "Paris"})),
        calls(Call("get_weather", {"city": 5})),
        says("Rain."),
    )
    llm = make_llm(kind, tool_server.url)
    outcome = ToolLoop([get_weather]).run(llm, [{"role": "user", "content": QUESTION}])
    llm.close()
    assert outcome.answer == "Rain." and outcome.rounds == 2
    assert [type(e).__name__ for e in outcome.errors] == ["ToolValidationError"]
    assert [m["role"] for m in outcome.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_the_tool_loop_refuses_what_it_cannot_run() -> None:
    class Note(BaseModel):
        text: str

    with pytest.raises(LLMConfigError, match="at least one tool"):
        ToolLoop([])
    with pytest.raises(LLMConfigError, match="Note have nothing to run"):
        ToolLoop([Note])
    with pytest.raises(LLMConfigError, match="max_rounds"):
        ToolLoop([local_time], max_rounds=0)
    failed = Runner(trip_flow(ToolLoop([local_time]))).start("t1", start_state())
    assert failed.error is not None and failed.error.type == "LLMConfigError"
    assert "needs an LLM: pass Runner(flow, llm=...)" in failed.error.message
    assert ToolLoop([Tool.from_model(Note, run=lambda n: n.text)]).tools[0].name == "Note"


def test_a_state_without_the_loop_fields_is_refused_when_the_flow_is_built() -> None:
    class Bare(BaseModel):
        city: str = ""

    loop = ToolLoop([local_time])
    with pytest.raises(FlowDefinitionError, match="declares a read of `messages`"):
        Flow(
            name="bare",
            state=Bare,
            start="agent",
            nodes=loop.nodes,
            routes=loop.routes(then=END),
        )


def test_tool_arguments_never_reach_the_logs() -> None:
    from structlog.testing import capture_logs

    llm = ScriptedLLM(
        [("15:30", "ok")],
        default=[
            ToolCall(id="a", name="local_time", arguments='{"city": "Secretville"}'),
            ToolCall(id="b", name="nope", arguments='{"city": "Secretville"}'),
        ],
        match_on="last",
    )
    with capture_logs() as logs:
        Runner(trip_flow(ToolLoop([local_time])), llm=llm).start("t1", start_state())
    assert {"event": "tool_error"}.items() <= next(
        e for e in logs if e["event"] == "tool_error"
    ).items()
    assert "Secretville" not in json.dumps(logs, default=str)
