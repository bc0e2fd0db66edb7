"""The httpx drivers: carry out the steps the sans-I/O core decides, sync or async.

Only this module, ``_http_body`` (reading a live body within its budget) and the backends
built on them import httpx; its exceptions are mapped here to ``TransportFailure`` values,
then to flowkit errors by the core.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, SecretStr

from flowkit.errors import LLMConfigError, LLMError
from flowkit.foundation._credentials import mask_url_passwords
from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES, BodyLimitError, Budget, not_text
from flowkit.llm._closing import ClosesOnExit
from flowkit.llm._deadline import DeadlineTransport, until
from flowkit.llm._exchange import (
    ChatExchange,
    Exchange,
    HTTPRequest,
    HTTPResponse,
    Outcome,
    Sleep,
    Step,
    TransportFailure,
)
from flowkit.llm._http_body import OpenBody, Watchdog
from flowkit.llm._retry import Backoff
from flowkit.llm._secrets import check_api_key, redact, scrub_error
from flowkit.llm._stream import StreamDecoder
from flowkit.llm._tools import ToolLike, as_tools
from flowkit.llm._types import Chunk, LLMResponse, Message, check_messages

__all__ = ["HTTPChatLLM"]

T = TypeVar("T")

_USER_AGENT = "flowkit"


class HTTPChatLLM(ClosesOnExit, ChatExchange):
    """An LLM reached over HTTP; implements the ``LLM`` protocol on top of ``ChatExchange``.

    The sync client is pooled and created on first use (``close()`` or ``with`` releases
    it). Async calls use ``async_http_client`` when given, else a client per call, because
    an httpx async pool is bound to the event loop that created it.

    ``timeout`` is a deadline for a whole attempt (connect, headers and the body, a stream
    included), and no body is read past ``max_response_bytes``.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff: Backoff | None,
        http_client: httpx.Client | None,
        async_http_client: httpx.AsyncClient | None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
        )
        # SecretStr keeps the key out of repr() and tracebacks' locals.
        key = check_api_key(api_key)
        self._api_key = SecretStr(key) if key else None
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes <= 0
        ):
            raise LLMConfigError(
                f"max_response_bytes must be an integer > 0, not {max_response_bytes!r}."
            )
        self.max_response_bytes = max_response_bytes
        self._client = http_client
        self._owns_client = http_client is None
        self._async_client = async_http_client
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        key = ", api_key='***'" if self._api_key else ""
        shown = mask_url_passwords(self.base_url)
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown!r}{key})"

    # -- sync ----------------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer the conversation (see :class:`flowkit.llm.LLM`)."""
        steps = self._complete_steps(messages, schema, timeout, as_tools(tools))
        with self._scrubbing():
            return self._run(self._sync_client(), steps)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> Iterator[Chunk]:
        """Yield the answer as it arrives; the last chunk has ``done=True``."""
        with self._scrubbing():
            request, decoder = self._stream_start(messages, timeout, tools)
            opened = self._run(self._sync_client(), self._send(request))
            body: OpenBody = opened.handle
            try:
                with self._stream_faults(decoder):
                    for line in body.lines():
                        if chunk := decoder.feed(line):
                            yield chunk
                        if decoder.done:
                            return
            finally:
                body.close()
            if chunk := decoder.end(ended_by_close=body.ended_by_close):
                yield chunk

    def close(self) -> None:
        """Release pooled connections; a later call opens new ones."""
        with self._lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None

    # -- async ---------------------------------------------------------------------------------

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        """Answer the conversation without blocking the event loop."""
        steps = self._complete_steps(messages, schema, timeout, as_tools(tools))
        with self._scrubbing():
            async with self._async_session() as client:
                return await self._arun(client, steps)

    async def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Chunk]:
        """Async version of :meth:`stream`."""
        with self._scrubbing():
            request, decoder = self._stream_start(messages, timeout, tools)
            async with self._async_session() as client:
                opened = await self._arun(client, self._send(request))
                body: OpenBody = opened.handle
                try:
                    with self._stream_faults(decoder):
                        async for line in body.alines():
                            if chunk := decoder.feed(line):
                                yield chunk
                            if decoder.done:
                                return
                finally:
                    await body.response.aclose()
            if chunk := decoder.end(ended_by_close=body.ended_by_close):
                yield chunk

    # -- drivers: perform the core's steps -------------------------------------------------------

    def _run(self, client: httpx.Client, steps: Exchange[T]) -> T:
        step = _advance(steps, None)
        while not isinstance(step, _Done):
            step = _advance(steps, self._perform(client, step))
        return step.value

    async def _arun(self, client: httpx.AsyncClient, steps: Exchange[T]) -> T:
        step = _advance(steps, None)
        while not isinstance(step, _Done):
            step = _advance(steps, await self._aperform(client, step))
        return step.value

    def _perform(self, client: httpx.Client, step: Step) -> Outcome:
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return None
        budget = Budget(timeout=step.timeout, max_bytes=self.max_response_bytes)
        try:
            # Always streamed: the body is read here, chunk by chunk, within the budget; up to
            # the headers, our own client's connections keep to its deadline (``_deadline``).
            with until(budget.deadline):
                response = client.send(self._build(client, step), stream=True)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return self._failure(exc)
        if step.stream and response.is_success:
            opened = OpenBody(response, budget, Watchdog(response, budget))
            return self._received(response, step, opened)
        # The watchdog is cancelled (inner) before the response is closed (outer).
        with contextlib.closing(response), Watchdog(response, budget) as watchdog:
            try:
                budget.check_length(response.headers)
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += budget.take(chunk)
                if watchdog.fired:
                    # The socket was shut at the deadline under a body that ends with its
                    # connection: what looked like its end was the deadline.
                    raise budget.overdue()
            except httpx.HTTPError as exc:
                if watchdog.fired:
                    overdue = budget.overdue()
                    return TransportFailure(overdue.kind, overdue.detail, exc)
                return self._failure(exc)
            except BodyLimitError as exc:
                return TransportFailure(exc.kind, exc.detail, exc)
        return self._received(response, step, bytes(body))

    async def _aperform(self, client: httpx.AsyncClient, step: Step) -> Outcome:
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return None
        budget = Budget(timeout=step.timeout, max_bytes=self.max_response_bytes)
        try:
            # httpx bounds each read; this bounds the attempt, however slowly bytes arrive.
            async with asyncio.timeout(step.timeout):
                response = await client.send(self._build(client, step), stream=True)
                if step.stream and response.is_success:
                    return self._received(response, step, OpenBody(response, budget))
                async with contextlib.aclosing(response):
                    budget.check_length(response.headers)
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += budget.take(chunk)
        except TimeoutError as exc:
            overdue = budget.overdue()
            return TransportFailure(overdue.kind, overdue.detail, exc)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return self._failure(exc)
        except BodyLimitError as exc:
            return TransportFailure(exc.kind, exc.detail, exc)
        return self._received(response, step, bytes(body))

    def _build(
        self, client: httpx.Client | httpx.AsyncClient, request: HTTPRequest
    ) -> httpx.Request:
        headers = {
            "Accept": "text/event-stream" if request.stream else "application/json",
            "User-Agent": _USER_AGENT,
        }
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        return client.build_request(
            "POST", request.url, json=request.body, headers=headers, timeout=request.timeout
        )

    def _received(
        self, response: httpx.Response, request: HTTPRequest, body: bytes | OpenBody
    ) -> HTTPResponse | TransportFailure:
        if isinstance(body, OpenBody):
            text, handle = "", body
        elif not response.is_success:  # only ever error text
            text, handle = body.decode(response.encoding or "utf-8", errors="replace"), None
        else:
            try:
                # An answer is handed over as written: bytes that are not text are refused,
                # never replaced with U+FFFD.
                text, handle = body.decode(response.encoding or "utf-8"), None
            except (UnicodeDecodeError, LookupError) as exc:
                detail = not_text(exc) if isinstance(exc, UnicodeDecodeError) else str(exc)
                return TransportFailure("response", detail, exc)
        return HTTPResponse(
            status=response.status_code,
            headers={k.lower(): v for k, v in response.headers.items()},
            # An answer is handed over as the model wrote it; an error body only goes into
            # error text, so it loses the key.
            text=text if response.is_success else self._redact(text),
            handle=handle,
        )

    def _failure(self, exc: httpx.HTTPError | httpx.InvalidURL) -> TransportFailure:
        failure = _failure(exc)
        return TransportFailure(failure.kind, self._redact(failure.detail), exc)

    @contextlib.contextmanager
    def _stream_faults(self, decoder: StreamDecoder) -> Iterator[None]:
        """A stream that fails midway, as ``decoder``'s error for it (sync and async alike)."""
        try:
            yield
        except httpx.HTTPError as exc:
            failure = self._failure(exc)
            raise decoder.cut(failure.kind, failure.detail) from exc
        except BodyLimitError as exc:
            raise decoder.cut(exc.kind, exc.detail) from exc

    def _redact(self, text: str) -> str:
        # Error and log text only: a server that echoes the key back must not smuggle it
        # into them, and they also lose any credential it quotes, ours or not.
        return redact(text, self._key(), credentials=True)

    def _key(self) -> str | None:
        return self._api_key.get_secret_value() if self._api_key else None

    @contextlib.contextmanager
    def _scrubbing(self) -> Iterator[None]:
        """Every ``LLMError`` leaving a call has the key redacted from its text."""
        try:
            yield
        except LLMError as exc:
            scrub_error(exc, self._key())
            raise

    def _stream_start(
        self,
        messages: Sequence[Message],
        timeout: float | None,
        tools: Sequence[ToolLike] | None,
    ) -> tuple[HTTPRequest, StreamDecoder]:
        request = self._request(
            check_messages(messages),
            stream=True,
            want_json=False,
            timeout=timeout,
            tools=as_tools(tools),
        )
        decoder = StreamDecoder(
            self._parse_line, model=self.model, url=request.url, timeout=request.timeout
        )
        return request, decoder

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                context = _ssl_context()
                self._client = httpx.Client(verify=context, transport=DeadlineTransport(context))
                # Closes the pool if the user never calls close(), without keeping self alive.
                self._finalizer = weakref.finalize(self, self._client.close)
            return self._client

    @contextlib.asynccontextmanager
    async def _async_session(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._async_client is not None:
            yield self._async_client
            return
        async with httpx.AsyncClient(verify=_ssl_context()) as client:
            yield client


class _Done(Generic[T]):
    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


def _advance(steps: Exchange[T], outcome: Outcome) -> Step | _Done[T]:
    """Send ``outcome`` to the core; return its next step, or ``_Done`` with its result."""
    try:
        return steps.send(outcome)
    except StopIteration as stop:
        return _Done(stop.value)


def _failure(exc: httpx.HTTPError | httpx.InvalidURL) -> TransportFailure:
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return TransportFailure("timeout", detail, exc)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL | httpx.LocalProtocolError):
        # Our own request is at fault (a bad URL or header): sending it again cannot help.
        return TransportFailure("config", detail, exc)
    if isinstance(exc, httpx.TransportError):
        return TransportFailure("unavailable", detail, exc)
    return TransportFailure("response", detail, exc)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs milliseconds; every client of the process can share it.
    return httpx.create_ssl_context()
