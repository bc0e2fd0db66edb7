"""The sans-I/O core of the HTTP clients: build requests, judge answers, decide retries.

Each call is a generator that yields the steps to carry out (an ``HTTPRequest`` to send or
a ``Sleep``) and receives their outcomes; the sync and async drivers in ``_http`` only
perform the steps, so every decision is written once.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel

from flowkit.errors import (
    LLMConfigError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from flowkit.foundation._logging import get_logger, log_content
from flowkit.foundation._untrusted import parse_json
from flowkit.llm._retry import RETRYABLE_STATUS, Backoff, bounded_wait, parse_retry_after
from flowkit.llm._stream import Delta
from flowkit.llm._structured import Ask, answer_plan, drive
from flowkit.llm._tools import Tool
from flowkit.llm._types import LLMResponse, Message

__all__ = ["ChatExchange", "Exchange", "HTTPRequest", "HTTPResponse", "Sleep", "TransportFailure"]

_log = get_logger()

T = TypeVar("T")


def _message_fields(messages: Any) -> dict[str, Any]:
    """What ``llm_request`` says about the prompt: its size, its text only when opted in.

    Prompts hold what users typed (names, robot tasks), so they stay out of logs unless
    ``FLOWKIT_LOG_CONTENT=1`` asks for them.
    """
    if not isinstance(messages, list):
        return {}
    chars = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
    fields: dict[str, Any] = {"messages": len(messages), "prompt_chars": chars}
    if log_content():
        fields["content"] = messages
    return fields


@dataclass(frozen=True, slots=True)
class HTTPRequest:
    """A POST to make; credentials are added by the driver and never stored here."""

    url: str
    body: dict[str, Any]
    timeout: float
    stream: bool = False


@dataclass(frozen=True, slots=True)
class HTTPResponse:
    """An answer: status, lower-cased headers, body text (empty for an open stream)."""

    status: int
    headers: Mapping[str, str]
    text: str
    handle: Any = field(default=None, repr=False)  # the open streaming response, driver-owned


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait before the next attempt."""

    seconds: float


@dataclass(frozen=True, slots=True)
class TransportFailure:
    """A request that got no HTTP answer (mapped from the HTTP library's exception)."""

    kind: Literal["timeout", "unavailable", "config", "response", "too_large"]
    detail: str
    cause: BaseException


Step = HTTPRequest | Sleep
Outcome = HTTPResponse | TransportFailure | None
Exchange = Generator[Step, Outcome, T]


class ChatExchange(ABC):
    """Shared core of the HTTP chat clients; subclasses supply the wire format."""

    _path: ClassVar[str]

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        backoff: Backoff | None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise LLMConfigError("Pass the model name, e.g. model='gpt-4o-mini' or 'llama3.1'.")
        if not base_url.startswith(("http://", "https://")):
            raise LLMConfigError(
                f"base_url {base_url!r} must start with http:// or https://, "
                "e.g. 'http://localhost:11434' or 'https://api.openai.com/v1'."
            )
        _check_timeout(timeout)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise LLMConfigError(f"max_retries must be an integer >= 0, not {max_retries!r}.")
        self._model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = backoff or Backoff()

    @property
    def model(self) -> str:
        """The model name requests are sent with."""
        return self._model

    # -- wire format, per backend ------------------------------------------------------------

    @abstractmethod
    def _body(
        self,
        messages: list[Message],
        *,
        stream: bool,
        want_json: bool,
        tools: Sequence[Tool] = (),
    ) -> dict[str, Any]:
        """The JSON body of a chat request (``tools`` offered to the model, if any)."""

    @abstractmethod
    def _parse(self, data: Any) -> LLMResponse:
        """Read a complete answer; may raise ``KeyError``/``TypeError``/... on a bad shape."""

    @abstractmethod
    def _parse_line(self, line: str) -> Delta | None:
        """Read one stream line into a ``Delta`` (or ``None`` for lines that carry nothing)."""

    def _redact(self, text: str) -> str:
        """``text`` fit for a log line or an error (the HTTP clients take their key out)."""
        return text

    def _status_hint(self, status: int) -> str:
        """What to do about a non-retryable HTTP status."""
        if status in (401, 403):
            return "Check the API key."
        if status == 404:
            return f"Check base_url and that the server has the model `{self.model}`."
        return "Check the model name and the request options."

    # -- the steps of a call -------------------------------------------------------------------

    def _request(
        self,
        messages: list[Message],
        *,
        stream: bool,
        want_json: bool,
        timeout: float | None,
        tools: Sequence[Tool] = (),
    ) -> HTTPRequest:
        if timeout is not None:
            _check_timeout(timeout)
        return HTTPRequest(
            url=self.base_url + self._path,
            body=self._body(messages, stream=stream, want_json=want_json, tools=tools),
            timeout=self.timeout if timeout is None else float(timeout),
            stream=stream,
        )

    def _complete_steps(
        self,
        messages: Sequence[Message],
        schema: type[BaseModel] | None,
        timeout: float | None,
        tools: Sequence[Tool] = (),
    ) -> Exchange[LLMResponse]:
        def ask(request: Ask) -> Exchange[LLMResponse]:
            return self._ask(request.messages, schema is not None, timeout, tools)

        return drive(answer_plan(messages, schema, model=self.model), ask)

    def _ask(
        self,
        messages: list[Message],
        want_json: bool,
        timeout: float | None,
        tools: Sequence[Tool] = (),
    ) -> Exchange[LLMResponse]:
        request = self._request(
            messages, stream=False, want_json=want_json, timeout=timeout, tools=tools
        )
        started = time.perf_counter()
        response = yield from self._send(request)
        result = self._read(response, request)
        _log.debug(
            "llm_response",
            model=self.model,
            url=request.url,
            latency_s=round(time.perf_counter() - started, 4),
            usage=result.usage.model_dump() if result.usage else None,
            chars=len(result.text),
            tool_calls=[call.name for call in result.tool_calls],
            **({"content": self._redact(result.text)} if log_content() else {}),
        )
        return result

    def _send(self, request: HTTPRequest) -> Exchange[HTTPResponse]:
        """Send with retries; return the first 2xx answer or raise the typed error."""
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            _log.debug(
                "llm_request",
                model=self.model,
                url=request.url,
                attempt=attempt,
                stream=request.stream,
                **_message_fields(request.body.get("messages")),
            )
            outcome = yield request
            if isinstance(outcome, HTTPResponse) and 200 <= outcome.status < 300:
                return outcome
            assert outcome is not None, "the driver answers every request"
            retryable, status, retry_after = _judge(outcome)
            if not retryable or attempt == attempts:
                cause = outcome.cause if isinstance(outcome, TransportFailure) else None
                raise self._error(outcome, request, attempt) from cause
            delay = bounded_wait(self.backoff, attempt - 1, retry_after, timeout=request.timeout)
            if delay is None:
                raise self._wait_too_long(status, retry_after, request, attempt)
            _log.warning(
                "llm_retry",
                model=self.model,
                url=request.url,
                attempt=attempt,
                delay=round(delay, 3),
                status=status,
                reason=outcome.kind if isinstance(outcome, TransportFailure) else "status",
            )
            yield Sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    def _wait_too_long(
        self, status: int | None, retry_after: float | None, request: HTTPRequest, attempts: int
    ) -> LLMUnavailableError:
        # Still the server's refusal (429/5xx, with its status): nothing timed out; the call
        # only declines to sleep past its own timeout.
        tries = f" (attempt {attempts})" if attempts > 1 else ""
        return LLMUnavailableError(
            f"POST {request.url} (`{self.model}`) answered HTTP {status}{tries} and asked to wait "
            f"{retry_after:g} s before trying again, longer than the call's timeout of "
            f"{request.timeout:g} s, so the call ends here instead of sleeping past it. Retry "
            "later, or raise the timeout if such waits are acceptable.",
            model=self.model,
            status_code=status,
        )

    def _read(self, response: HTTPResponse, request: HTTPRequest) -> LLMResponse:
        try:
            return self._parse(parse_json(response.text, what="LLM response", max_bytes=None))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            # ValueError includes UntrustedInputError (nested past the limit, refused before
            # parsing); RecursionError stays as a backstop.
            raise LLMResponseError(
                f"POST {request.url} answered HTTP {response.status} but the body is not a chat "
                f"completion ({exc!r}): {_excerpt(response.text)!r}. Check that base_url points "
                "at a server of this API kind.",
                model=self.model,
                raw_text=response.text,
            ) from exc

    def _error(
        self, outcome: HTTPResponse | TransportFailure, request: HTTPRequest, attempts: int
    ) -> LLMError:
        where = f"POST {request.url} (`{self.model}`)"
        tries = f" on all {attempts} attempts" if attempts > 1 else ""
        if isinstance(outcome, TransportFailure):
            if outcome.kind == "timeout":
                return LLMTimeoutError(
                    f"{where} got no complete answer within {request.timeout:g} s{tries}. Raise "
                    "the timeout (per client or per call), or use a smaller or less busy model.",
                    model=self.model,
                )
            if outcome.kind == "unavailable":
                return LLMUnavailableError(
                    f"{where} failed{tries}: {outcome.detail}. Check that the server is running "
                    "and base_url is right, then retry.",
                    model=self.model,
                )
            if outcome.kind == "config":
                return LLMConfigError(
                    f"{where} cannot be sent: {outcome.detail}. Fix base_url and the client's "
                    "options."
                )
            if outcome.kind == "too_large":
                return LLMResponseError(f"{where}: {outcome.detail}.", model=self.model)
            return LLMResponseError(
                f"{where} answered something unreadable: {outcome.detail}.", model=self.model
            )
        excerpt = _excerpt(outcome.text)
        if outcome.status in RETRYABLE_STATUS:
            return LLMUnavailableError(
                f"{where} answered HTTP {outcome.status}{tries}: {excerpt}. The server is "
                "overloaded or failing; retry later or raise max_retries.",
                model=self.model,
                status_code=outcome.status,
            )
        return LLMResponseError(
            f"{where} was rejected with HTTP {outcome.status}: {excerpt}. "
            f"{self._status_hint(outcome.status)}",
            model=self.model,
            raw_text=outcome.text,
        )


def _judge(outcome: HTTPResponse | TransportFailure) -> tuple[bool, int | None, float | None]:
    """Whether a failed attempt is worth retrying, its status, and any ``Retry-After``."""
    if isinstance(outcome, TransportFailure):
        return outcome.kind in ("timeout", "unavailable"), None, None
    return outcome.status in RETRYABLE_STATUS, outcome.status, parse_retry_after(outcome.headers)


def _excerpt(text: str, limit: int = 300) -> str:
    """The server's own error message if the body has one, else the start of the body."""
    message: Any = None
    try:
        data = parse_json(text, what="LLM error body", max_bytes=None)
    except (ValueError, RecursionError):  # not JSON, or past a limit (UntrustedInputError)
        data = None
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        message = error.get("message", error) if isinstance(error, dict) else error
    found = str(message) if message else text
    flat = " ".join(found.split()) or "(empty body)"
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _check_timeout(timeout: float) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise LLMConfigError(f"timeout must be a number of seconds > 0, not {timeout!r}.")
