"""Structured output shared by every backend: validate an answer against a schema, and make
one repair request when it does not fit.

The conversation is a generator *plan* that yields the requests to make (``Ask``) and
receives the responses, so HTTP clients, scripted and replayed LLMs all drive the same logic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from flowkit.errors import LLMResponseError, LLMSchemaError
from flowkit.foundation._logging import get_logger
from flowkit.llm._extract import guard_answer, json_candidates
from flowkit.llm._types import LLMResponse, Message, check_messages

__all__ = [
    "Ask",
    "answer_plan",
    "complete_in_process",
    "drive",
    "parse_answer",
    "schema_name",
]

_log = get_logger()

StepT = TypeVar("StepT")
OutcomeT = TypeVar("OutcomeT")

_REPAIR_PROMPT = (
    "Your previous answer could not be used: {problems}\n"
    "Answer again with only one JSON value that matches this JSON Schema, "
    "without prose and without code fences:\n{schema}"
)


@dataclass(frozen=True, slots=True)
class Ask:
    """One request the plan wants made; ``repairing`` is set on the repair request."""

    messages: list[Message]
    repairing: LLMSchemaError | None = field(default=None, compare=False)


Plan = Generator[Ask, LLMResponse, LLMResponse]


def schema_name(schema: type[BaseModel]) -> str:
    """The stable name recorded for a schema: its ``model_config`` title, else the class name.

    Set ``model_config = ConfigDict(title=...)`` to keep recordings valid across renames.
    """
    title = schema.model_config.get("title")
    return title if isinstance(title, str) and title else schema.__name__


def parse_answer(text: str, schema: type[BaseModel], *, model: str | None = None) -> BaseModel:
    """Validate the first JSON value in ``text`` that fits ``schema``.

    Raises:
        LLMSchemaError: no JSON value, or none that validates (``errors`` are the first
            candidate's, JSON-safe).
    """
    first: ValidationError | None = None
    try:
        guard_answer(text, model=model)
    except LLMResponseError as exc:
        raise LLMSchemaError(
            str(exc),
            model=model,
            raw_text=exc.raw_text,
            errors=[{"type": "json_invalid", "loc": [], "msg": "the answer is past a limit"}],
        ) from exc.__cause__
    for value in json_candidates(text):
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            first = first or exc
    name = schema_name(schema)
    if first is None:
        raise LLMSchemaError(
            f"The answer for schema `{name}` holds no JSON value.",
            model=model,
            raw_text=text,
            errors=[{"type": "json_invalid", "loc": [], "msg": "no JSON value in the answer"}],
        )
    errors = [
        {"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]}
        for e in first.errors(include_url=False, include_context=False, include_input=False)
    ]
    raise LLMSchemaError(
        f"The answer does not match schema `{name}`: {_summary(errors)}",
        model=model,
        raw_text=text,
        errors=errors,
    ) from first


def answer_plan(messages: Sequence[Message], schema: type[BaseModel] | None, *, model: str) -> Plan:
    """Ask once; with a schema, validate and on failure ask once more with the error.

    An answer that asks for tools is returned as is: it is not the answer to validate yet.
    """
    asked = check_messages(messages)
    first = yield Ask(asked)
    if schema is None or first.tool_calls:
        # A model that asks for tools has not answered yet: its answer comes after them.
        return first
    try:
        return _with_parsed(first, schema, model)
    except LLMSchemaError as error:
        _log.warning(
            "llm_repair", model=model, schema=schema_name(schema), problems=_summary(error.errors)
        )
        repair = _REPAIR_PROMPT.format(
            problems=_summary(error.errors, quoting=True),
            schema=json.dumps(schema.model_json_schema(), ensure_ascii=False),
        )
        second = yield Ask(
            [
                *asked,
                {"role": "assistant", "content": first.text},
                {"role": "user", "content": repair},
            ],
            repairing=error,
        )
    usage = (
        second.usage if first.usage is None or second.usage is None else first.usage + second.usage
    )
    if second.tool_calls:
        return second.model_copy(update={"usage": usage})
    try:
        return _with_parsed(second.model_copy(update={"usage": usage}), schema, model)
    except LLMSchemaError as final:
        raise LLMSchemaError(
            f"{final} The model did not fix it when asked once more; change the prompt, the "
            "schema or the model.",
            model=model,
            raw_text=final.raw_text,
            errors=final.errors,
        ) from final


def drive(
    plan: Plan, ask: Callable[[Ask], Generator[StepT, OutcomeT, LLMResponse]]
) -> Generator[StepT, OutcomeT, LLMResponse]:
    """Run ``plan``, making each request with ``ask`` (a generator that may yield I/O steps).

    The returned response's ``latency_s`` covers the whole call, retries and repair included.
    """
    started = time.perf_counter()
    request = next(plan)
    while True:
        response = yield from ask(request)
        try:
            request = plan.send(response)
        except StopIteration as done:
            result: LLMResponse = done.value
            return result.model_copy(update={"latency_s": time.perf_counter() - started})


def complete_in_process(
    messages: Sequence[Message],
    schema: type[BaseModel] | None,
    *,
    model: str,
    answer: Callable[[Ask], LLMResponse],
) -> LLMResponse:
    """Run the plan for an LLM that answers in-process (scripted, replayed): no I/O steps."""

    def ask(request: Ask) -> Generator[None, None, LLMResponse]:
        response = answer(request)
        yield from ()
        return response

    steps = drive(answer_plan(messages, schema, model=model), ask)
    try:
        next(steps)
    except StopIteration as done:
        result: LLMResponse = done.value
        return result
    raise AssertionError("an in-process answer never yields")  # pragma: no cover


def _with_parsed(response: LLMResponse, schema: type[BaseModel], model: str) -> LLMResponse:
    try:
        if response.finish_reason == "length":
            # Cut at the token limit: a value inside the cut one may fit the schema ("the
            # first JSON value that fits"), but it is not the answer. Only a whole one is.
            parsed = parse_answer(_whole_value(response.text, model), schema, model=model)
        else:
            parsed = parse_answer(response.text, schema, model=model)
    except LLMSchemaError as exc:
        if response.finish_reason != "length":
            raise
        raise LLMSchemaError(
            f"{exc} The answer was cut at the model's token limit (finish reason `length`); "
            "raise the limit (max_tokens) or ask for less.",
            model=model,
            raw_text=exc.raw_text,
            errors=exc.errors,
        ) from exc
    return response.model_copy(update={"parsed": parsed})


def _whole_value(text: str, model: str) -> str:
    """``text`` if it is one whole JSON value (in a code fence or not), else raise."""
    body = text.strip()
    if body.startswith("```"):
        body = body.partition("\n")[2].removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError:
        raise LLMSchemaError(
            "The answer is not one whole JSON value.",
            model=model,
            raw_text=text,
            errors=[{"type": "json_invalid", "loc": [], "msg": "the answer was cut short"}],
        ) from None
    return body


def _summary(errors: Sequence[dict[str, Any]], limit: int = 5, *, quoting: bool = False) -> str:
    """The schema errors in one line. Where each lies (``loc``) may hold what the model wrote:
    a dict's keys, or a field it made up. ``quoting`` (the repair prompt, which goes back to
    the model) keeps them; a log line or an error message shows only the parts that are
    names a schema could have declared, and ``[key]`` for the others."""
    parts = [
        f"{'.'.join(_place(p, quoting) for p in e.get('loc', ())) or '(root)'}: {e.get('msg', '')}"
        for e in errors[:limit]
    ]
    more = len(errors) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _place(part: Any, quoting: bool) -> str:
    """One step of an error's ``loc``: an index, a declared name, or ``[key]``."""
    text = str(part)
    if quoting or isinstance(part, int) or (text.isidentifier() and len(text) <= 64):
        return text
    return "[key]"
