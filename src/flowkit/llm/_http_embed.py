"""The HTTP embeddings clients' shared part: batching, and the chat clients' own machinery
for everything on the wire.

Each request goes through a private ``HTTPChatLLM`` (``_Wire``) that never chats: its
retries and backoff, deadline per attempt, body limit, connection pool, API key handling
and error mapping are exactly the chat clients', so nothing of them is written twice.
Subclasses give the request body and where the vectors are in the answer.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NoReturn

import httpx

from flowkit.errors import LLMConfigError, LLMResponseError
from flowkit.foundation._logging import get_logger
from flowkit.foundation._untrusted import parse_json
from flowkit.llm._body import DEFAULT_MAX_RESPONSE_BYTES
from flowkit.llm._closing import ClosesOnExit
from flowkit.llm._embeddings import (
    BadVectorsError,
    batches,
    check_dimensions,
    check_texts,
    checked_vectors,
)
from flowkit.llm._exchange import HTTPRequest, HTTPResponse, _check_timeout, _excerpt
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm._retry import Backoff
from flowkit.llm._stream import Delta
from flowkit.llm._tools import Tool
from flowkit.llm._types import LLMResponse, Message

__all__ = ["HTTPEmbeddings"]

_log = get_logger()


class HTTPEmbeddings(ClosesOnExit):
    """An embedding model reached over HTTP (see :class:`flowkit.llm.Embeddings`).

    Texts are sent ``batch_size`` at a time, one request per batch, each with the client's
    retries and its ``timeout`` as the deadline of every attempt. Vectors are checked before
    they are handed over: one per text, numbers only, finite, all of one length (the
    ``dimensions`` given, else the length of this client's first answer).
    """

    _path: ClassVar[str]

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        dimensions: int | None,
        batch_size: int,
        timeout: float,
        max_retries: int,
        backoff: Backoff | None,
        http_client: httpx.Client | None,
        async_http_client: httpx.AsyncClient | None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise LLMConfigError(f"batch_size must be an integer > 0, not {batch_size!r}.")
        self.dimensions = check_dimensions(dimensions)
        self.batch_size = batch_size
        self._wire = _Wire(
            self._status_hint,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )

    def __repr__(self) -> str:
        key = ", api_key='***'" if self._wire._api_key else ""
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}{key})"

    @property
    def model(self) -> str:
        """The model name requests are sent with."""
        return self._wire.model

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._wire.base_url

    @property
    def timeout(self) -> float:
        """The deadline of each attempt, in seconds."""
        return self._wire.timeout

    # -- wire format, per backend ----------------------------------------------------------------

    @abstractmethod
    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON body of a request for ``texts``."""

    @abstractmethod
    def _vectors(self, data: Any) -> Any:
        """The answer's vectors in the order of the texts sent (may raise ``KeyError``...)."""

    def _status_hint(self, status: int) -> str:
        """What to do about a non-retryable HTTP status."""
        if status in (401, 403):
            return "Check the API key."
        return f"Check base_url and that the server serves the embedding model `{self.model}`."

    # -- calls ---------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, timeout: float | None = None) -> list[list[float]]:
        """One vector per text, in order; ``[]`` for no texts (nothing is sent)."""
        wire = self._wire
        vectors: list[list[float]] = []
        for request, batch in self._requests(texts, timeout):
            started = time.perf_counter()
            with wire._scrubbing():
                response = wire._run(wire._sync_client(), wire._send(request))
                vectors += self._read(response, request, batch, started)
        return vectors

    async def aembed(
        self, texts: Sequence[str], *, timeout: float | None = None
    ) -> list[list[float]]:
        """Same as :meth:`embed`, without blocking the event loop."""
        wire = self._wire
        vectors: list[list[float]] = []
        requests = self._requests(texts, timeout)
        if not requests:
            return vectors
        async with wire._async_session() as client:
            for request, batch in requests:
                started = time.perf_counter()
                with wire._scrubbing():
                    response = await wire._arun(client, wire._send(request))
                    vectors += self._read(response, request, batch, started)
        return vectors

    def close(self) -> None:
        """Release pooled connections; a later call opens new ones."""
        self._wire.close()

    # -- helpers -------------------------------------------------------------------------------

    def _requests(
        self, texts: Sequence[str], timeout: float | None
    ) -> list[tuple[HTTPRequest, Sequence[str]]]:
        checked = check_texts(texts)
        if timeout is not None:
            _check_timeout(timeout)
        deadline = self.timeout if timeout is None else float(timeout)
        url = self.base_url + self._path
        return [
            (HTTPRequest(url=url, body=self._body(batch), timeout=deadline), batch)
            for batch in batches(checked, self.batch_size)
        ]

    def _read(
        self, response: HTTPResponse, request: HTTPRequest, batch: Sequence[str], started: float
    ) -> list[list[float]]:
        try:
            data = parse_json(response.text, what="embeddings response", max_bytes=None)
            vectors = checked_vectors(self._vectors(data), len(batch), self.dimensions)
        except BadVectorsError as exc:
            raise self._bad_answer(response, request, str(exc)) from exc
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            raise self._bad_answer(
                response, request, f"the body is not an embeddings answer ({exc!r})"
            ) from exc
        if self.dimensions is None:
            # Later answers must match: vectors of two models cannot be compared.
            self.dimensions = len(vectors[0])
        _log.debug(
            "llm_embeddings",
            model=self.model,
            url=request.url,
            latency_s=round(time.perf_counter() - started, 4),
            texts=len(batch),
            chars=sum(len(t) for t in batch),
            dimensions=self.dimensions,
        )
        return vectors

    def _bad_answer(
        self, response: HTTPResponse, request: HTTPRequest, why: str
    ) -> LLMResponseError:
        return LLMResponseError(
            f"POST {request.url} (`{self.model}`) answered HTTP {response.status} but {why}: "
            f"{_excerpt(response.text, 200)!r}. Check that base_url points at an embeddings "
            "server of this API kind and that the model is an embedding model.",
            model=self.model,
            raw_text=response.text,
        )


class _Wire(HTTPChatLLM):
    """The chat client's HTTP machinery, carrying embeddings requests only (built by
    ``HTTPEmbeddings``, so it has no path of its own)."""

    _path = ""

    def __init__(self, status_hint: Callable[[int], str], **options: Any) -> None:
        super().__init__(**options)
        self._hint = status_hint

    def _status_hint(self, status: int) -> str:
        return self._hint(status)

    def _body(
        self, messages: list[Message], *, stream: bool, want_json: bool, tools: Sequence[Tool] = ()
    ) -> dict[str, Any]:
        _not_a_chat()

    def _parse(self, data: Any) -> LLMResponse:
        _not_a_chat()

    def _parse_line(self, line: str) -> Delta | None:
        _not_a_chat()


def _not_a_chat() -> NoReturn:
    raise LLMConfigError("An embeddings client does not chat; use an LLM client for that.")
