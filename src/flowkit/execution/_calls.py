"""Calling one node (a ``CallNode``): sync or async, with or without a timeout.

When a node's timeout fires, its ``ctx.cancel_event`` is set. An async node is cancelled by
``asyncio`` and has unwound before the run goes on. A sync node runs in a worker thread, and
Python cannot stop a thread: past its timeout it is *abandoned* (its result is discarded, the
run records a ``NodeTimeoutError``) but may still be running. So that two attempts of a node
never run at once (think of a node moving a robot axis), the next attempt of that node in
that thread first waits for the abandoned one to return, for up to its timeout again; if it
is still running then, the attempt fails with ``NodeStillRunningError`` instead of starting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from ..errors import NodeStillRunningError, NodeTimeoutError
from ._cursor import CallNode

__all__ = ["call_async", "call_sync"]


#: Abandoned attempts still running, by (owner, thread id, node name). Process-wide: a thread
#: in one store may be driven by several runners.
_abandoned: dict[Hashable, _Attempt] = {}
_lock = threading.Lock()


class _Attempt:
    """A sync node running in a worker thread; once abandoned, it is listed until it returns."""

    __slots__ = ("finished", "key", "timeout")

    def __init__(self, key: Hashable, timeout: float) -> None:
        self.key = key
        self.timeout = timeout
        self.finished = threading.Event()

    def finish(self) -> None:
        with _lock:
            self.finished.set()
            if _abandoned.get(self.key) is self:
                del _abandoned[self.key]

    def abandon(self) -> None:
        with _lock:
            if not self.finished.is_set():
                _abandoned[self.key] = self


def _key(call: CallNode) -> Hashable:
    return (id(call.owner), call.thread_id, call.name)


def _earlier(call: CallNode) -> _Attempt | None:
    if not _abandoned:  # the common case costs one truth test
        return None
    with _lock:
        return _abandoned.get(_key(call))


def _still_running(call: CallNode, earlier: _Attempt) -> NodeStillRunningError:
    return NodeStillRunningError(
        call.name, thread_id=call.thread_id, timeout=earlier.timeout, grace=earlier.timeout
    )


def call_sync(call: CallNode) -> Any:
    node = call.node
    args = (call.state, call.ctx) if node.takes_context else (call.state,)
    if node.is_async:
        import asyncio

        return asyncio.run(_await_with_timeout(node.fn(*args), call))
    earlier = _earlier(call)
    if earlier is not None and not earlier.finished.wait(earlier.timeout):
        raise _still_running(call, earlier)
    if node.timeout is None:
        return node.fn(*args)
    return _run_in_thread(call, args)


async def call_async(call: CallNode) -> Any:
    import asyncio

    node = call.node
    args = (call.state, call.ctx) if node.takes_context else (call.state,)
    if node.is_async:
        return await _await_with_timeout(node.fn(*args), call)
    earlier = _earlier(call)
    if earlier is not None and not await asyncio.to_thread(earlier.finished.wait, earlier.timeout):
        raise _still_running(call, earlier)
    if node.timeout is None:
        return node.fn(*args)
    attempt = _Attempt(_key(call), node.timeout)
    try:
        return await _await_with_timeout(asyncio.to_thread(_tracked(attempt, node.fn), *args), call)
    except NodeTimeoutError:
        attempt.abandon()
        raise


def _tracked(attempt: _Attempt, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        try:
            return fn(*args)
        finally:
            attempt.finish()

    return run


async def _await_with_timeout(awaitable: Any, call: CallNode) -> Any:
    import asyncio

    if call.node.timeout is None:
        return await awaitable
    loop = asyncio.get_running_loop()
    deadline = asyncio.timeout(None)

    def expire() -> None:
        # The flag goes up before asyncio cancels the node, so its `except CancelledError`
        # or `finally` already sees `ctx.cancelled`.
        _cancel(call)
        deadline.reschedule(loop.time())

    timer = loop.call_later(call.node.timeout, expire)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if not deadline.expired():
            raise  # the node's own wait timed out, not the node: report it as it is
        raise NodeTimeoutError(call.name, call.node.timeout) from None
    finally:
        timer.cancel()


def _cancel(call: CallNode) -> None:
    """Raise the flag a node with a timeout may watch (``ctx.cancelled``)."""
    assert call.ctx is not None, "a node with a timeout always gets its context"
    call.ctx.cancel_event.set()


def _run_in_thread(call: CallNode, args: tuple[Any, ...]) -> Any:
    """Run a sync node in a worker thread and stop waiting for it after its timeout."""
    assert call.node.timeout is not None
    box: dict[str, Any] = {}
    attempt = _Attempt(_key(call), call.node.timeout)

    def target() -> None:
        try:
            box["value"] = call.node.fn(*args)
        except BaseException as exc:
            box["error"] = exc
        finally:
            attempt.finish()

    worker = threading.Thread(target=target, name=f"flowkit-{call.name}", daemon=True)
    worker.start()
    if not attempt.finished.wait(call.node.timeout):
        _cancel(call)
        attempt.abandon()
        raise NodeTimeoutError(call.name, call.node.timeout)
    if "error" in box:
        raise box["error"]
    return box.get("value")
