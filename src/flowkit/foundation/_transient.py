"""Which exceptions are transient: worth running a node again by default.

flowkit's own errors say so themselves (``retryable``). Of the rest, network failures that
may clear on their own are transient — a timeout, a refused or dropped connection, an
unreachable network or host, a name server that asked to try again, an HTTP client's
5xx/429/408 — and nothing else is: a ``ValueError`` is a bug, a missing file stays missing
and a 4xx is a refusal. LangGraph's ``default_retry_on`` draws the same line for HTTP
errors. httpx is looked up only if already imported: an exception of its types cannot
exist otherwise.
"""

from __future__ import annotations

import errno
import socket
import sys

__all__ = ["is_transient"]

#: HTTP statuses an HTTP client's error is retried on: server errors, rate limits, timeouts.
TRANSIENT_STATUS = frozenset({408, 429, *range(500, 600)})

_NETWORK_ERRNOS = frozenset(
    {
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.ENETRESET,
        errno.EHOSTUNREACH,
        errno.EHOSTDOWN,
        errno.ETIMEDOUT,
        errno.ECONNABORTED,
        errno.ECONNREFUSED,
        errno.ECONNRESET,
    }
)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` (not one of flowkit's) is a failure that may clear on its own."""
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    if isinstance(error, socket.gaierror):
        return error.errno == socket.EAI_AGAIN  # "try again"; an unknown name stays unknown
    if isinstance(error, OSError):
        return error.errno in _NETWORK_ERRNOS
    return _is_transient_httpx(error)


def _is_transient_httpx(error: BaseException) -> bool:
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return False
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code in TRANSIENT_STATUS
    # Timeouts, connect/read/write errors and a server that hung up; not our own bad
    # request (UnsupportedProtocol, LocalProtocolError) or proxy setup.
    transient = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
    return isinstance(error, transient)
