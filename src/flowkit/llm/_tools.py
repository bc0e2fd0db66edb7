"""Tools a model may call: a name, a description and a JSON Schema for the arguments,
derived from a typed function or a pydantic model, and how a call is checked and run.

The wire shape (``{"type": "function", "function": {...}}``) is the one OpenAI and Ollama
both accept; the backends translate messages, this module only describes tools.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from flowkit.errors import (
    LLMConfigError,
    ToolArgumentsError,
    ToolValidationError,
    UnknownToolError,
)
from flowkit.foundation._untrusted import parse_json
from flowkit.llm._types import Message, ToolCall

__all__ = ["Tool", "ToolLike", "as_tools", "tool_message", "tool_result_text"]

#: What ``tools=`` accepts: a ``Tool``, a typed function, or a pydantic model class.
ToolLike: TypeAlias = "Tool | Callable[..., Any] | type[BaseModel]"

_MAX_ARGUMENT_CHARS = 1_000_000


class Tool:
    """A tool the model may call.

    Build one with :meth:`from_function` (the parameters' annotations and defaults become
    the JSON Schema, the docstring's first paragraph the description) or :meth:`from_model`
    (the model's fields are the arguments; ``run`` receives the validated instance). Passing
    the function or the model class itself to ``tools=`` does the same.
    """

    __slots__ = ("_takes_model", "arguments", "description", "name", "run")

    def __init__(
        self,
        *,
        name: str,
        description: str,
        arguments: type[BaseModel],
        run: Callable[..., Any] | None = None,
        takes_model: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name.strip() or len(name) > 64:
            raise LLMConfigError(f"A tool name must be 1 to 64 characters, not {name!r}.")
        self.name = name
        self.description = description
        self.arguments = arguments
        self.run = run
        self._takes_model = takes_model

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """A tool that runs ``fn(**arguments)``; every parameter must be annotated.

        Raises:
            LLMConfigError: ``fn`` is not a named function, has ``*args``/``**kwargs`` or a
                parameter without an annotation.
        """
        tool_name = name or getattr(fn, "__name__", "")
        if not callable(fn) or not tool_name or tool_name == "<lambda>":
            raise LLMConfigError(
                f"A tool must be a named function or a pydantic model, not {fn!r}; for a "
                "lambda, pass Tool.from_function(fn, name=...)."
            )
        try:
            hints = get_type_hints(fn, include_extras=True)
        except (NameError, TypeError) as exc:
            raise LLMConfigError(
                f"Tool `{tool_name}`: its annotations cannot be resolved ({exc})."
            ) from exc
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise LLMConfigError(
                    f"Tool `{tool_name}` takes *{param.name}; a tool's parameters must be "
                    "named so the model can fill them in."
                )
            if param.name not in hints:
                raise LLMConfigError(
                    f"Tool `{tool_name}`: parameter `{param.name}` has no type annotation; "
                    "annotate it so its JSON Schema can be derived."
                )
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (hints[param.name], default)
        arguments = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        doc = description if description is not None else _first_paragraph(fn.__doc__)
        return cls(name=tool_name, description=doc, arguments=arguments, run=fn)

    @classmethod
    def from_model(
        cls,
        model: type[BaseModel],
        *,
        run: Callable[[Any], Any] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """A tool whose arguments are ``model``; ``run(instance)`` carries it out, if given.

        The name is the model's ``model_config`` title, else its class name.
        """
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise LLMConfigError(f"Tool.from_model needs a pydantic model class, not {model!r}.")
        from flowkit.llm._structured import schema_name

        doc = description if description is not None else _first_paragraph(model.__doc__)
        return cls(
            name=name or schema_name(model),
            description=doc,
            arguments=model,
            run=run,
            takes_model=True,
        )

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    @property
    def is_async(self) -> bool:
        """Whether running the tool returns a coroutine."""
        return self.run is not None and inspect.iscoroutinefunction(self.run)

    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as sent to the model."""
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return schema

    def spec(self) -> dict[str, Any]:
        """The tool as OpenAI and Ollama expect it in a request's ``tools``."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = self.parameters()
        return {"type": "function", "function": function}

    def validate(self, call: ToolCall) -> BaseModel:
        """The call's arguments, validated.

        Raises:
            ToolArgumentsError: the arguments are not a JSON object.
            ToolValidationError: they do not fit the tool's parameters (``.errors``).
        """
        try:
            value = parse_json(
                call.arguments or "{}", what="tool arguments", max_bytes=_MAX_ARGUMENT_CHARS
            )
        except (ValueError, RecursionError) as exc:
            raise ToolArgumentsError(
                f"The arguments of `{call.name}` (call {call.id}) are not valid JSON: {exc}. "
                "Send the arguments as one JSON object.",
                tool=call.name,
                call_id=call.id,
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                f"The arguments of `{call.name}` (call {call.id}) are a JSON "
                f"{type(value).__name__}, not an object. Send the arguments as one JSON object.",
                tool=call.name,
                call_id=call.id,
            )
        try:
            return self.arguments.model_validate(value)
        except ValidationError as exc:
            errors = [
                {"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]}
                for e in exc.errors(include_url=False, include_context=False, include_input=False)
            ]
            summary = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errors[:5]
            )
            raise ToolValidationError(
                f"The arguments of `{call.name}` (call {call.id}) do not fit its parameters: "
                f"{summary}. Call it again with arguments matching its JSON Schema.",
                tool=call.name,
                call_id=call.id,
                errors=errors,
            ) from exc

    def invoke(self, call: ToolCall) -> Any:
        """Validate the call and run the tool (a coroutine when the tool is async).

        Raises:
            ToolArgumentsError, ToolValidationError: see :meth:`validate`.
            LLMConfigError: the tool has nothing to run (a model without ``run=``).
        """
        arguments = self.validate(call)
        if self.run is None:
            raise LLMConfigError(
                f"Tool `{self.name}` has nothing to run; build it with "
                f"Tool.from_model(..., run=fn) or from a function."
            )
        if self._takes_model:
            return self.run(arguments)
        return self.run(**{key: getattr(arguments, key) for key in type(arguments).model_fields})


def as_tools(tools: Iterable[ToolLike] | None) -> tuple[Tool, ...]:
    """Turn what ``tools=`` accepts into ``Tool``s; names must be unique.

    Raises:
        LLMConfigError: an item is neither a Tool, a function nor a model; or two tools
            share a name.
    """
    if tools is None:
        return ()
    if isinstance(tools, Tool | type) or callable(tools) or isinstance(tools, str | bytes):
        raise LLMConfigError("tools= takes a list of tools, e.g. tools=[get_weather].")
    made: list[Tool] = []
    for item in tools:
        if isinstance(item, Tool):
            made.append(item)
        elif isinstance(item, type) and issubclass(item, BaseModel):
            made.append(Tool.from_model(item))
        elif callable(item):
            made.append(Tool.from_function(item))
        else:
            raise LLMConfigError(
                f"{item!r} is not a tool; pass a Tool, a typed function or a pydantic model."
            )
    names = [t.name for t in made]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LLMConfigError(f"Tool names must be unique; given twice: {', '.join(twice)}.")
    return tuple(made)


def find_tool(tools: Sequence[Tool], call: ToolCall) -> Tool:
    """The tool ``call`` names.

    Raises:
        UnknownToolError: the model asked for a tool it was not offered.
    """
    for candidate in tools:
        if candidate.name == call.name:
            return candidate
    offered = ", ".join(t.name for t in tools) or "none"
    raise UnknownToolError(
        f"There is no tool `{call.name}` (call {call.id}); the tools are: {offered}. "
        "Call one of those.",
        tool=call.name,
        call_id=call.id,
    )


def tool_result_text(value: Any) -> str:
    """What a tool returned, as the text of its result message."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


def tool_message(call: ToolCall, content: str) -> Message:
    """The message that gives the model the result of ``call``."""
    return {"role": "tool", "content": content, "tool_call_id": call.id, "name": call.name}


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(inspect.cleandoc(doc).split("\n\n", 1)[0].split())
