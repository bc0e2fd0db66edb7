"""The sync client's connections, bounded by the attempt's deadline from connect to headers.

httpx bounds each network operation, not a request: a server that sends its status line and
headers a byte at a time, each byte within the read timeout, keeps a sync call waiting for as
long as it likes (the body has its ``Watchdog``; the async driver has ``asyncio.timeout``).
``DeadlineTransport`` is httpx's own transport over a connection pool whose sockets cap every
connect, TLS handshake, write and read at the time the attempt has left. The attempt's
deadline travels in a context variable that ``until`` sets around the send, so a request
outside it (and a pooled connection it leaves behind) is bounded by httpx's timeouts alone.
A client the user passes in keeps its own transport.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["DeadlineTransport", "until"]

#: The running attempt's deadline (``time.monotonic``), or ``None`` outside one.
_DEADLINE: ContextVar[float | None] = ContextVar("flowkit_llm_deadline", default=None)
#: httpx's own pool limits (``httpx.HTTPTransport``'s defaults).
_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)


@contextlib.contextmanager
def until(deadline: float) -> Iterator[None]:
    """Bound this thread's network operations by ``deadline`` (``time.monotonic``)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bounded(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` cut to the time the attempt has left; ``expired`` once it has none."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` (no proxy) whose connections keep to ``until``'s deadline."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, limits=_LIMITS)
        # httpx builds its pool without a way to pass a network backend: the same pool,
        # with one. Should a later httpx keep its pool elsewhere, its own stays in use (the
        # tests of the headers' deadline say so).
        if isinstance(getattr(self, "_pool", None), httpcore.ConnectionPool):
            self._pool = httpcore.ConnectionPool(
                ssl_context=ssl_context,
                max_connections=_LIMITS.max_connections,
                max_keepalive_connections=_LIMITS.max_keepalive_connections,
                keepalive_expiry=_LIMITS.keepalive_expiry,
                network_backend=_Backend(),
            )
