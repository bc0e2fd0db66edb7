"""``ScriptedLLM``: a fake LLM for tests and offline examples, answering by ordered rules.

Rules match the last user message (or the whole prompt) by substring, regex or predicate;
structured output goes through the same parsing and repair as the real clients. The
``scripted:PATH`` spec (:func:`flowkit.llm.from_spec`) builds one from a rules file;
``flowkit.testing`` offers the same class to tests.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Self, TypeAlias, cast

from pydantic import BaseModel

from flowkit import errors
from flowkit.errors import LLMConfigError
from flowkit.foundation._untrusted import parse_json, read_regular_file
from flowkit.llm._protocol import InProcessLLM
from flowkit.llm._structured import Ask, complete_in_process
from flowkit.llm._tools import ToolLike, as_tools
from flowkit.llm._types import Chunk, LLMResponse, Message, ToolCall, check_messages

__all__ = ["Matcher", "Reply", "ScriptedCall", "ScriptedLLM"]

#: Substring, compiled regex (``search``), or a predicate over the matched text.
Matcher: TypeAlias = str | re.Pattern[str] | Callable[[str], bool]
#: Text; a dict, list or model (sent as JSON); a ``ToolCall`` or a list of them (the model
#: asks for tools); a callable of the matched text returning any of those; or an exception
#: (instance or class) to raise.
Reply: TypeAlias = (
    str
    | Mapping[str, Any]
    | list[Any]
    | BaseModel
    | BaseException
    | type[BaseException]
    | Callable[[str], Any]
)

_WORDS = re.compile(r"\s*\S+|\s+")


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One request a ``ScriptedLLM`` received.

    ``prompt`` is the text the rules saw, ``rule`` the index of the rule that answered
    (``None`` for the default), ``text`` the answer (``None`` when it raised), ``tools`` the
    names of the tools offered and ``tool_calls`` the tools the answer asked for.
    """

    messages: list[Message]
    schema: type[BaseModel] | None
    prompt: str
    rule: int | None
    text: str | None
    tools: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()


class ScriptedLLM(InProcessLLM):
    """An LLM that answers from rules; the first matching rule wins.

    >>> llm = ScriptedLLM([("task list", '{"tasks": []}')], default="OK")
    >>> llm.complete([{"role": "user", "content": "Make a task list"}]).text
    '{"tasks": []}'

    A prompt no rule matches, without a ``default``, raises ``LLMConfigError`` naming it.
    ``match_on="prompt"`` matches against all message contents joined by blank lines;
    ``match_on="last"`` against the last message whatever its role (a tool result, in a
    tool loop). A ``ToolCall`` reply (or a list of them) answers with tool calls.
    """

    def __init__(
        self,
        rules: Iterable[tuple[Matcher, Reply]] = (),
        *,
        default: Reply | None = None,
        model: str = "scripted",
        match_on: Literal["last_user", "last", "prompt"] = "last_user",
    ) -> None:
        if match_on not in ("last_user", "last", "prompt"):
            raise LLMConfigError(
                f"match_on must be 'last_user', 'last' or 'prompt', not {match_on!r}."
            )
        self._rules: list[tuple[Matcher, Reply]] = list(rules)
        self.default = default
        super().__init__(model=model)
        self.match_on = match_on
        self.calls: list[ScriptedCall] = []

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedLLM:
        """Load rules from a JSON file, the form ``scripted:PATH`` specs use.

        The file is ``{"rules": [...], "default": ..., "model": ..., "match_on": ...}``;
        each rule has ``"match"`` (a substring) or ``"regex"`` (with optional
        ``"ignore_case"``), and ``"response"`` (text, or JSON sent as JSON) or ``"error"``
        (the name of an ``LLMError`` class in ``flowkit.errors``) with ``"message"``.
        """
        try:
            data = parse_json(read_regular_file(path, what="rules file"), what="rules file")
        except (OSError, ValueError) as exc:  # ValueError: also UntrustedInputError
            raise LLMConfigError(f"Cannot read scripted LLM file {str(path)!r}: {exc}.") from exc
        if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
            raise LLMConfigError(
                f'Scripted LLM file {str(path)!r} must be an object {{"rules": [...], '
                '"default": ...}.'
            )
        rules = [_rule_from_json(str(path), i, r) for i, r in enumerate(data.get("rules", []))]
        return cls(
            rules,
            default=data.get("default"),
            model=str(data.get("model", "scripted")),
            match_on=data.get("match_on", "last_user"),
        )

    def __repr__(self) -> str:
        return f"ScriptedLLM(rules={len(self._rules)}, calls={len(self.calls)})"

    @property
    def prompts(self) -> list[str]:
        """The texts the rules were matched against, one per call."""
        return [call.prompt for call in self.calls]

    def add(self, match: Matcher, reply: Reply) -> Self:
        """Append a rule (after the existing ones); returns ``self`` for chaining."""
        self._rules.append((match, reply))
        return self

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer by the rules; with ``schema``, parse and repair like the real clients."""
        offered = tuple(t.name for t in as_tools(tools))

        def answer(request: Ask) -> LLMResponse:
            return self._answer(request, schema, offered)

        return complete_in_process(messages, schema, model=self.model, answer=answer)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Yield the scripted answer word by word, then a final ``done`` chunk."""
        offered = tuple(t.name for t in as_tools(tools))
        response = self._answer(Ask(check_messages(messages)), None, offered)
        for piece in _WORDS.findall(response.text):
            yield Chunk(text=piece)
        yield Chunk(text="", done=True, tool_calls=response.tool_calls)

    def _answer(
        self, request: Ask, schema: type[BaseModel] | None, offered: tuple[str, ...] = ()
    ) -> LLMResponse:
        prompt = self._prompt(request.messages)
        index, reply = self._match(prompt)
        record = ScriptedCall(request.messages, schema, prompt, index, None, offered)
        if reply is None:
            self.calls.append(record)
            if request.repairing is not None:
                # No rule for the repair request: the test is about the bad answer itself.
                raise request.repairing
            raise LLMConfigError(
                f"ScriptedLLM has no rule for the prompt {_clip(prompt)!r} and no default; "
                "add a rule that matches it or pass default=.",
                model=self.model,
            )
        try:
            if callable(reply) and not isinstance(reply, type):
                reply, depth = reply(prompt), 1
            else:
                depth = 0
            calls = _tool_calls(reply)
            text = "" if calls else _render(reply, prompt, depth=depth)
        except BaseException:
            self.calls.append(record)
            raise
        self.calls.append(replace(record, text=text, tool_calls=tuple(calls)))
        return LLMResponse(
            text=text, model=self.model, raw={"scripted_rule": index}, tool_calls=calls
        )

    def _prompt(self, messages: list[Message]) -> str:
        if self.match_on == "prompt":
            return "\n\n".join(m["content"] for m in messages)
        if self.match_on == "last":
            return str(messages[-1]["content"])
        users = [str(m["content"]) for m in messages if m["role"] == "user"]
        return users[-1] if users else str(messages[-1]["content"])

    def _match(self, prompt: str) -> tuple[int | None, Reply | None]:
        for index, (matcher, reply) in enumerate(self._rules):
            if _matches(matcher, prompt):
                return index, reply
        return None, self.default


def _matches(matcher: Matcher, prompt: str) -> bool:
    if isinstance(matcher, str):
        return matcher in prompt
    if isinstance(matcher, re.Pattern):
        return matcher.search(prompt) is not None
    return bool(matcher(prompt))


def _tool_calls(reply: Any) -> list[ToolCall]:
    """The tool calls a reply makes (a ``ToolCall`` or a non-empty list of them), else []."""
    if isinstance(reply, ToolCall):
        return [reply]
    if isinstance(reply, list) and reply and all(isinstance(v, ToolCall) for v in reply):
        return list(reply)
    return []


def _render(reply: Reply, prompt: str, *, depth: int = 0) -> str:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, type) and issubclass(reply, BaseException):
        raise reply(f"scripted {reply.__name__} for the prompt {_clip(prompt)!r}")
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, Mapping | list):
        return json.dumps(reply, ensure_ascii=False)
    if callable(reply) and depth == 0:
        produced: Any = cast(Callable[[str], Any], reply)(prompt)
        return _render(produced, prompt, depth=1)
    raise LLMConfigError(
        f"A scripted reply must be text, a dict, a list, a model, an exception or a callable "
        f"returning one of those, not {type(reply).__name__}."
    )


def _rule_from_json(path: str, index: int, rule: Any) -> tuple[Matcher, Reply]:
    where = f"Rule {index} of {path!r}"
    if not isinstance(rule, dict):
        raise LLMConfigError(f"{where} must be an object.")
    matcher: Matcher
    if isinstance(rule.get("match"), str):
        matcher = rule["match"]
    elif isinstance(rule.get("regex"), str):
        flags = re.IGNORECASE if rule.get("ignore_case") else 0
        try:
            matcher = re.compile(rule["regex"], flags)
        except re.error as exc:
            raise LLMConfigError(f"{where} has an invalid regex: {exc}.") from exc
    else:
        raise LLMConfigError(f'{where} needs "match" (a substring) or "regex".')
    if "error" in rule:
        error = getattr(errors, str(rule["error"]), None)
        if not (isinstance(error, type) and issubclass(error, errors.LLMError)):
            raise LLMConfigError(
                f"{where}: error {rule['error']!r} is not an LLMError class of flowkit.errors, "
                "e.g. LLMTimeoutError or LLMUnavailableError."
            )
        return matcher, error(str(rule.get("message", f"scripted {error.__name__}")))
    if "response" not in rule:
        raise LLMConfigError(f'{where} needs "response" (text or JSON) or "error".')
    return matcher, rule["response"]


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
