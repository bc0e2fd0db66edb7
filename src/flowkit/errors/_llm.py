"""Errors of language-model calls and of the tool loop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._base import FlowkitError

__all__ = [
    "LLMConfigError",
    "LLMError",
    "LLMResponseError",
    "LLMSchemaError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "ReplayMismatchError",
    "ToolArgumentsError",
    "ToolCallLimitError",
    "ToolError",
    "ToolLoopLimitError",
    "ToolValidationError",
    "UnknownToolError",
]


class LLMError(FlowkitError):
    """Calling a language model failed."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        self.model = model
        super().__init__(message)


class LLMTimeoutError(LLMError):
    """The model did not answer within the timeout."""

    retryable = True


class LLMUnavailableError(LLMError):
    """The server refused the connection or kept failing (5xx, 429) through every retry."""

    retryable = True

    def __init__(
        self, message: str, *, model: str | None = None, status_code: int | None = None
    ) -> None:
        self.status_code = status_code
        super().__init__(message, model=model)


class LLMResponseError(LLMError):
    """The server answered with something that is not a usable response."""

    def __init__(self, message: str, *, model: str | None = None, raw_text: str = "") -> None:
        self.raw_text = raw_text
        super().__init__(message, model=model)


class LLMSchemaError(LLMResponseError):
    """The answer is not valid JSON for the requested schema, even after one repair request."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        raw_text: str = "",
        errors: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.errors = list(errors)
        super().__init__(message, model=model, raw_text=raw_text)


class ReplayMismatchError(LLMError):
    """A replayed LLM request does not match the recorded one."""


class LLMConfigError(LLMError):
    """The LLM layer is set up or called wrongly: a bad spec string, option, URL or cassette."""


class ToolError(FlowkitError):
    """A tool call cannot be run. Raise it from a tool to give the model a message instead
    of failing the node; the tool loop sends ``str(error)`` back as the tool's result."""

    def __init__(self, message: str, *, tool: str | None = None, call_id: str | None = None):
        self.tool = tool
        self.call_id = call_id
        super().__init__(message)


class UnknownToolError(ToolError):
    """The model asked for a tool that was not offered."""


class ToolArgumentsError(ToolError):
    """A tool call's arguments are not a JSON object (malformed JSON, or another value)."""


class ToolValidationError(ToolError):
    """A tool call's arguments do not fit the tool's parameters."""

    def __init__(
        self,
        message: str,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        errors: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.errors = list(errors)
        super().__init__(message, tool=tool, call_id=call_id)


class ToolCallLimitError(ToolError):
    """One model answer asked for more tool calls than the loop's ``max_calls``; the calls
    beyond it were not run, and each is answered with this error so the model can ask again."""


class ToolLoopLimitError(FlowkitError):
    """The model kept asking for tools after the loop's ``max_rounds`` rounds."""

    def __init__(self, message: str, *, rounds: int) -> None:
        self.rounds = rounds
        super().__init__(message)
