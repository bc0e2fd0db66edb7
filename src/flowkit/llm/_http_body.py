"""The httpx side of reading a body within its ``Budget``: a sync read ended at the deadline,
and a 2xx stream read line by line.

httpx bounds each read, not the whole answer; ``_body`` keeps the sans-I/O budget and line
splitting, this module applies them to live httpx responses (sync and async), apart from the
drivers in ``_http`` that decide when to read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Self, cast

import httpx

from flowkit.llm._body import Budget, LineSplitter

__all__ = ["OpenBody", "Watchdog", "ended_by_close"]


class Watchdog:
    """Ends a sync body read at the deadline, however slowly the bytes come.

    httpx bounds each read, so a server sending a byte just within the timeout could stretch
    a sync call to nearly twice it. At the deadline this shuts the socket down under the
    blocked read, which then fails at once; ``fired`` tells that failure from a real one.
    The lock makes ``cancel`` final: after it returns, the socket is never touched, so a
    connection the pool hands to a later request is safe.
    """

    def __init__(self, response: httpx.Response, budget: Budget) -> None:
        self.fired = False
        self._response = response
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(budget.remaining(), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            stream = self._response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                self.fired = True
                with contextlib.suppress(OSError):
                    # The plain socket's shutdown, also for TLS: SSLSocket.shutdown would
                    # tear down its SSL state under the reading thread.
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()


def ended_by_close(response: httpx.Response) -> bool:
    """Whether the body has no length and no chunking, so that it ends when the connection
    closes (HTTP/1.x): a connection dropped midway then looks like a clean end."""
    headers = response.headers
    return (
        response.http_version in ("HTTP/1.1", "HTTP/1.0")
        and "content-length" not in headers
        and "chunked" not in headers.get("transfer-encoding", "").lower()
    )


def check_clean_end(
    response: httpx.Response, budget: Budget, watchdog: Watchdog | None, splitter: LineSplitter
) -> None:
    """Raise if a body that seemed to end did not: the watchdog shut the socket at the
    deadline, or a body ended by its connection's close stopped in the middle of a line."""
    if watchdog is not None and watchdog.fired:
        raise budget.overdue()
    if splitter.pending and ended_by_close(response):
        # What httpx raises for a chunked or sized body cut short: the same failure.
        raise httpx.RemoteProtocolError(
            "the connection closed in the middle of a line, before the stream's end"
        )


class OpenBody:
    """A 2xx streaming response and the budget its lines are read within."""

    __slots__ = ("budget", "response", "watchdog")

    def __init__(
        self, response: httpx.Response, budget: Budget, watchdog: Watchdog | None = None
    ) -> None:
        self.response = response
        self.budget = budget
        self.watchdog = watchdog

    @property
    def ended_by_close(self) -> bool:
        """Whether the body's end cannot be told from a dropped connection."""
        return ended_by_close(self.response)

    def lines(self) -> Iterator[str]:
        splitter = LineSplitter()
        try:
            for chunk in self.response.iter_bytes():
                yield from splitter.feed(self.budget.take(chunk))
        except httpx.HTTPError:
            if self.watchdog is not None and self.watchdog.fired:
                raise self.budget.overdue() from None
            raise
        check_clean_end(self.response, self.budget, self.watchdog, splitter)
        yield from splitter.end()

    def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
        self.response.close()

    async def alines(self) -> AsyncIterator[str]:
        splitter = LineSplitter()
        # aiter_bytes is an async generator; closing it when we stop early frees it now.
        raw = cast(AsyncGenerator[bytes, None], self.response.aiter_bytes())
        async with contextlib.aclosing(raw) as chunks:
            while True:
                try:
                    async with asyncio.timeout(self.budget.remaining()):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise self.budget.overdue() from None
                for line in splitter.feed(self.budget.take(chunk)):
                    yield line
        check_clean_end(self.response, self.budget, None, splitter)
        for line in splitter.end():
            yield line
