"""The default node retry rule: transient network failures are retried, bugs and refusals
are not (issue 23 item 22; LangGraph's ``default_retry_on`` draws the same line)."""

from __future__ import annotations

import errno
import socket
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, RetryPolicy, Runner, node
from flowkit.errors import LLMResponseError, LLMUnavailableError
from flowkit.stores import Store

_REQUEST = httpx.Request("POST", "http://api.example/v1/x")


def _status(code: int) -> httpx.HTTPStatusError:
    response = httpx.Response(code, request=_REQUEST)
    return httpx.HTTPStatusError(f"HTTP {code}", request=_REQUEST, response=response)


TRANSIENT: list[tuple[str, BaseException]] = [
    ("httpx connect error", httpx.ConnectError("connection refused", request=_REQUEST)),
    ("httpx read timeout", httpx.ReadTimeout("timed out", request=_REQUEST)),
    ("httpx connect timeout", httpx.ConnectTimeout("timed out", request=_REQUEST)),
    ("httpx pool timeout", httpx.PoolTimeout("no connection free")),
    ("httpx read error", httpx.ReadError("connection reset", request=_REQUEST)),
    ("httpx server hung up", httpx.RemoteProtocolError("peer closed", request=_REQUEST)),
    ("http 500", _status(500)),
    ("http 503", _status(503)),
    ("http 429", _status(429)),
    ("network unreachable", OSError(errno.ENETUNREACH, "Network is unreachable")),
    ("host unreachable", OSError(errno.EHOSTUNREACH, "No route to host")),
    ("dns try again", socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")),
    ("connection reset", ConnectionResetError("reset by peer")),
    ("timeout", TimeoutError("slow")),
    ("llm unavailable", LLMUnavailableError("busy")),
]
PERMANENT: list[tuple[str, BaseException]] = [
    ("http 404", _status(404)),
    ("http 400", _status(400)),
    ("httpx bad url scheme", httpx.UnsupportedProtocol("ftp is not supported")),
    ("httpx bad header", httpx.LocalProtocolError("illegal header")),
    ("httpx invalid url", httpx.InvalidURL("no host")),
    ("missing file", FileNotFoundError(errno.ENOENT, "No such file", "x.json")),
    ("permission", PermissionError(errno.EACCES, "Permission denied")),
    ("disk full", OSError(errno.ENOSPC, "No space left on device")),
    ("unknown host", socket.gaierror(socket.EAI_NONAME, "Name or service not known")),
    ("value error", ValueError("bad input")),
    ("type error", TypeError("bug")),
    ("key error", KeyError("bug")),
    ("llm response", LLMResponseError("not a completion")),
]


class Job(BaseModel):
    done: str = ""


def _attempts_until_success(error: BaseException, store: Store) -> list[int]:
    attempts: list[int] = []

    @node(writes=["done"], retry=RetryPolicy(max_attempts=3, initial_delay=0, jitter=False))
    def call(state: Job, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise error
        return {"done": "yes"}

    flow = Flow(name="calls", state=Job, start="call", nodes={"call": call},
                routes={"call": END}, error_field=None)  # fmt: skip
    Runner(flow, store=store).start("t1")
    return attempts


@pytest.mark.parametrize("error", [e for _, e in TRANSIENT], ids=[n for n, _ in TRANSIENT])
def test_a_transient_network_failure_is_retried_by_default(
    error: BaseException, store: Store
) -> None:
    assert RetryPolicy().should_retry(error, 1)
    assert _attempts_until_success(error, store) == [1, 2, 3]


@pytest.mark.parametrize("error", [e for _, e in PERMANENT], ids=[n for n, _ in PERMANENT])
def test_a_bug_or_a_refusal_is_not_retried_by_default(error: BaseException, store: Store) -> None:
    assert not RetryPolicy().should_retry(error, 1)
    assert _attempts_until_success(error, store) == [1]


def test_the_failed_nodes_error_says_whether_it_was_retryable() -> None:
    from flowkit import NodeError

    assert NodeError.from_exception(_status(502), node="n", attempts=1).retryable
    assert not NodeError.from_exception(_status(401), node="n", attempts=1).retryable


def test_retry_on_still_decides_when_given() -> None:
    only_value = RetryPolicy(retry_on=(ValueError,))
    assert only_value.should_retry(ValueError("x"), 1)
    assert not only_value.should_retry(httpx.ConnectError("refused"), 1)
    never = RetryPolicy(retry_on=lambda exc: False)
    assert not never.should_retry(_status(503), 1)
