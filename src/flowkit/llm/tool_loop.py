"""A prebuilt agent loop: a model node that may ask for tools, a node that runs them, and the
route table between the two, ready to put in a flow.

Each model turn and each round of tool calls is its own journaled step, so a crash between
them resumes without calling the model again, and ``runner.llm_calls`` replays the whole
conversation. Tool calls the model gets wrong (an unknown tool, arguments that are not JSON or
do not fit) go back to it as the tool's result, so it can correct itself; ``max_rounds``
bounds the rounds of one agent turn and ``max_calls`` the calls run from one answer.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit.definition._conditions import field as state_field
from flowkit.definition._node import Context, Node, node
from flowkit.definition._reducers import append
from flowkit.definition._route_table import Route, RouteTable
from flowkit.errors import LLMConfigError, ToolCallLimitError, ToolError, ToolLoopLimitError
from flowkit.foundation._logging import get_logger
from flowkit.llm._protocol import LLM
from flowkit.llm._tools import Tool, ToolLike, as_tools, find_tool, tool_message, tool_result_text
from flowkit.llm._types import LLMResponse, Message, ToolCall

__all__ = ["ToolLoop", "ToolLoopResult", "ToolLoopState"]

_log = get_logger()

_TURN_WRITES = ("messages", "pending_tools", "answer", "tool_rounds")
_TOOLS_WRITES = ("messages", "pending_tools", "tool_rounds")


class ToolLoopState(BaseModel):
    """The fields a tool loop works with; subclass it for your flow's state.

    ``messages`` is the conversation (start a thread with the user's message in it),
    ``pending_tools`` how many tool calls the last answer asked for, ``tool_rounds`` how many
    rounds of tools the current agent turn has run (the last turn's, once it answered), and
    ``answer`` the model's final text.
    """

    messages: Annotated[list[dict[str, Any]], append] = []
    pending_tools: int = 0
    tool_rounds: int = 0
    answer: str = ""


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """What :meth:`ToolLoop.run` ends with: the answer, the whole conversation, the rounds."""

    answer: str
    messages: list[Message]
    rounds: int
    response: LLMResponse
    errors: list[ToolError] = field(default_factory=list)


class ToolLoop:
    """The model answers or asks for tools; tools run; the model sees their results; repeat.

    ``loop.nodes`` are two nodes, ``name`` (the model's turn) and ``f"{name}_tools"`` (the
    tools' round); ``loop.routes(then=...)`` routes the model's turn to the tools while it
    asks for some and to ``then`` once it answers, and the tools back to the model.
    ``system`` is sent first on every turn (not stored in the state). ``stream=True`` streams
    the model's turns, so their tokens reach ``Runner.stream`` subscribers. After
    ``max_rounds`` rounds of tools in one agent turn (from the model being asked to its
    final answer; a chat flow that comes back to the agent starts a new turn), a model still
    asking for more fails the turn with :class:`flowkit.errors.ToolLoopLimitError`. Of one
    answer's tool calls, the first ``max_calls`` run; each one beyond is answered with a
    :class:`flowkit.errors.ToolCallLimitError` instead of running.

    A tool raising :class:`flowkit.errors.ToolError` tells the model ``str(error)``; any
    other exception fails the tools' node like any node error (retry policies and error
    routes apply).
    """

    def __init__(
        self,
        tools: Iterable[ToolLike],
        *,
        name: str = "agent",
        system: str | None = None,
        max_rounds: int = 8,
        max_calls: int = 16,
        stream: bool = False,
    ) -> None:
        self.tools: tuple[Tool, ...] = as_tools(tools)
        if not self.tools:
            raise LLMConfigError("A ToolLoop needs at least one tool.")
        idle = [t.name for t in self.tools if t.run is None]
        if idle:
            raise LLMConfigError(
                f"Tool(s) {', '.join(idle)} have nothing to run; a ToolLoop runs the tools the "
                "model asks for, so build them from functions or with Tool.from_model(run=...)."
            )
        for option, value in (("max_rounds", max_rounds), ("max_calls", max_calls)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LLMConfigError(f"{option} must be an integer >= 1, not {value!r}.")
        self.name = name
        self.tools_name = f"{name}_tools"
        self.system = system
        self.max_rounds = max_rounds
        self.max_calls = max_calls
        self.stream = stream

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.tools)
        return (
            f"ToolLoop({self.name!r}, tools=[{names}], max_rounds={self.max_rounds}, "
            f"max_calls={self.max_calls})"
        )

    # -- in a flow -------------------------------------------------------------------------------

    @property
    def nodes(self) -> dict[str, Node]:
        """The model's turn and the tools' round, by node name."""
        return {self.name: self._turn_node(), self.tools_name: self._tools_node()}

    def routes(
        self, *, then: str, on_error: str | None = None, error_field: str = "error"
    ) -> dict[str, str | RouteTable]:
        """The routes of the two nodes; ``then`` is where the final answer goes.

        With ``on_error``, a turn that failed (the state's ``error_field`` is set, e.g. by a
        :class:`flowkit.errors.ToolLoopLimitError`) goes there instead.
        """
        rules = [Route(state_field("pending_tools"), self.tools_name)]
        if on_error is not None:
            rules.insert(0, Route(state_field(error_field), on_error))
        table = RouteTable(f"after_{self.name}", rules, default=then)
        return {self.name: table, self.tools_name: self.name}

    def _turn_node(self) -> Node:
        loop = self

        def turn(state: Any, ctx: Context) -> dict[str, Any]:
            if ctx.llm is None:
                raise LLMConfigError(
                    f"ToolLoop `{loop.name}` needs an LLM: pass Runner(flow, llm=...)."
                )
            messages = list(state.messages)
            rounds = _rounds_this_turn(messages, state.tool_rounds)
            response = loop._ask(ctx.llm, messages)
            return {**loop._after_turn(response, rounds), "tool_rounds": rounds}

        turn.__name__ = self.name
        return node(turn, reads=["messages", "tool_rounds"], writes=_TURN_WRITES)

    def _tools_node(self) -> Node:
        loop = self
        if any(t.is_async for t in self.tools):

            async def run_async(state: Any) -> dict[str, Any]:
                allowed, over = loop._split(_pending(state.messages))
                messages: list[Message] = []
                for call in allowed:
                    messages.append(await loop._acall(call))
                messages += loop._over_limit(over, len(allowed) + len(over), None)
                return loop._after_tools(messages, state.tool_rounds)

            run_async.__name__ = self.tools_name
            return node(run_async, reads=["messages", "tool_rounds"], writes=_TOOLS_WRITES)

        def run(state: Any) -> dict[str, Any]:
            messages = loop._run_round(_pending(state.messages), None)
            return loop._after_tools(messages, state.tool_rounds)

        run.__name__ = self.tools_name
        return node(run, reads=["messages", "tool_rounds"], writes=_TOOLS_WRITES)

    # -- outside a flow ------------------------------------------------------------------------

    def run(self, llm: LLM, messages: Sequence[Message]) -> ToolLoopResult:
        """Run the loop to the final answer with ``llm``, without a flow (nothing journaled).

        Raises:
            ToolLoopLimitError: the model still asks for tools after ``max_rounds`` rounds.
            LLMConfigError: a tool is async (run async tools in a flow).
        """
        if any(t.is_async for t in self.tools):
            raise LLMConfigError(
                "ToolLoop.run runs sync tools only; put a loop with async tools in a flow."
            )
        conversation = list(messages)
        rounds = 0
        errors: list[ToolError] = []
        while True:
            response = self._ask(llm, conversation)
            update = self._after_turn(response, rounds)
            conversation += update["messages"]
            if not response.tool_calls:
                return ToolLoopResult(response.text, conversation, rounds, response, errors)
            conversation += self._run_round(response.tool_calls, errors)
            rounds += 1

    # -- the steps -------------------------------------------------------------------------------

    def _ask(self, llm: Any, messages: list[Message]) -> LLMResponse:
        if self.system and not (messages and messages[0].get("role") == "system"):
            messages = [{"role": "system", "content": self.system}, *messages]
        if not self.stream:
            response: LLMResponse = llm.complete(messages, tools=self.tools)
            return response
        parts: list[str] = []
        calls: list[ToolCall] = []
        reason: str | None = None
        for chunk in llm.stream(messages, tools=self.tools):
            parts.append(chunk.text)
            calls = chunk.tool_calls or calls
            reason = chunk.finish_reason or reason
        return LLMResponse(
            text="".join(parts), model=llm.model, tool_calls=calls, finish_reason=reason
        )

    def _after_turn(self, response: LLMResponse, rounds: int) -> dict[str, Any]:
        calls = response.tool_calls
        if calls and rounds >= self.max_rounds:
            raise ToolLoopLimitError(
                f"ToolLoop `{self.name}`: the model still asks for tools "
                f"({', '.join(c.name for c in calls)}) after {rounds} rounds; raise max_rounds, "
                "or tell the model in the system prompt to answer sooner.",
                rounds=rounds,
            )
        update: dict[str, Any] = {
            "messages": [response.assistant_message()],
            "pending_tools": len(calls),
        }
        if not calls:
            update["answer"] = response.text
        return update

    def _after_tools(self, messages: list[Message], rounds: int) -> dict[str, Any]:
        return {"messages": messages, "pending_tools": 0, "tool_rounds": rounds + 1}

    def _split(self, calls: list[ToolCall]) -> tuple[list[ToolCall], list[ToolCall]]:
        """The calls of one answer that run, and those beyond ``max_calls`` that do not."""
        return calls[: self.max_calls], calls[self.max_calls :]

    def _run_round(self, calls: list[ToolCall], errors: list[ToolError] | None) -> list[Message]:
        allowed, over = self._split(calls)
        messages = [self._call(call, errors) for call in allowed]
        return messages + self._over_limit(over, len(calls), errors)

    def _over_limit(
        self, over: list[ToolCall], asked: int, errors: list[ToolError] | None
    ) -> list[Message]:
        # Both APIs need an answer to every call id, so each call beyond the limit gets one;
        # one log line for them all, however many the model asked for.
        if not over:
            return []
        _log.warning(
            "tool_calls_over_limit", loop=self.name, max_calls=self.max_calls, refused=len(over)
        )
        messages = []
        for call in over:
            exc = ToolCallLimitError(
                f"Not run: the tool loop `{self.name}` runs at most {self.max_calls} tool calls "
                f"from one answer and this answer asked for {asked}; ask again for the ones "
                "you still need, after reading these results.",
                tool=call.name,
                call_id=call.id,
            )
            if errors is not None:
                errors.append(exc)
            messages.append(tool_message(call, f"Error: {exc}"))
        return messages

    def _call(self, call: ToolCall, errors: list[ToolError] | None = None) -> Message:
        try:
            tool = find_tool(self.tools, call)
            _log.debug("tool_call", loop=self.name, tool=call.name, call_id=call.id)
            value = tool.invoke(call)
        except ToolError as exc:
            return self._refused(call, exc, errors)
        return tool_message(call, tool_result_text(value))

    async def _acall(self, call: ToolCall) -> Message:
        try:
            tool = find_tool(self.tools, call)
            _log.debug("tool_call", loop=self.name, tool=call.name, call_id=call.id)
            value = tool.invoke(call)
            if inspect.isawaitable(value):
                value = await value
        except ToolError as exc:
            return self._refused(call, exc, None)
        return tool_message(call, tool_result_text(value))

    def _refused(self, call: ToolCall, exc: ToolError, errors: list[ToolError] | None) -> Message:
        # The model made the mistake, so the model is told; the text may quote its arguments,
        # so only the kind of error is logged.
        _log.warning(
            "tool_error", loop=self.name, tool=call.name, call_id=call.id, error=type(exc).__name__
        )
        if errors is not None:
            errors.append(exc)
        return tool_message(call, f"Error: {exc}")


def _rounds_this_turn(messages: Sequence[Message], tool_rounds: int) -> int:
    """The rounds of tools run so far in the turn the model is asked for now.

    A turn goes on while the model is answering tool results (the last message is one);
    anything else (the user's message, the model's own final answer) starts a new turn at 0.
    Derived from the journaled conversation, so a resumed or replayed run counts the same.
    """
    if messages and messages[-1].get("role") == "tool":
        return tool_rounds
    return 0


def _pending(messages: Sequence[Message]) -> list[ToolCall]:
    """The tool calls of the last assistant message (the turn the tools answer)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return [ToolCall.model_validate(c) for c in message.get("tool_calls") or ()]
    return []
