"""Calling one node: sync or async, with or without a timeout, from a sync or async driver.

Python cannot stop a running thread, so a sync node that overruns its timeout keeps running in
the background; its result is discarded and the run records a ``NodeTimeoutError``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ._execution import CallNode
from .errors import NodeTimeoutError, RunError

if TYPE_CHECKING:
    from ._flow import Flow

__all__ = ["call_async", "call_sync", "refuse_inside_event_loop"]


def call_sync(call: CallNode) -> Any:
    node = call.node
    args = (call.state, call.ctx) if node.takes_context else (call.state,)
    if node.is_async:
        import asyncio

        return asyncio.run(_await_with_timeout(node.fn(*args), call))
    if node.timeout is None:
        return node.fn(*args)
    return _run_in_thread(call, args)


async def call_async(call: CallNode) -> Any:
    import asyncio

    node = call.node
    args = (call.state, call.ctx) if node.takes_context else (call.state,)
    if node.is_async:
        return await _await_with_timeout(node.fn(*args), call)
    if node.timeout is None:
        return node.fn(*args)
    return await _await_with_timeout(asyncio.to_thread(node.fn, *args), call)


async def _await_with_timeout(awaitable: Any, call: CallNode) -> Any:
    import asyncio

    if call.node.timeout is None:
        return await awaitable
    deadline = asyncio.timeout(call.node.timeout)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if not deadline.expired():
            raise  # the node's own wait timed out, not the node: report it as it is
        raise NodeTimeoutError(call.name, call.node.timeout) from None


def _run_in_thread(call: CallNode, args: tuple[Any, ...]) -> Any:
    """Run a sync node in a worker thread and stop waiting for it after its timeout."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call.node.fn(*args)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"flowkit-{call.name}", daemon=True)
    worker.start()
    worker.join(call.node.timeout)
    if worker.is_alive():
        assert call.node.timeout is not None
        raise NodeTimeoutError(call.name, call.node.timeout)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def refuse_inside_event_loop(flow: Flow, thread_id: str) -> None:
    """The sync API cannot run a flow's async nodes from inside a running event loop.

    Checked before anything is written, so the caller gets a clear error instead of a
    thread that failed at a node which never ran.
    """
    if not any(node.is_async for node in flow.nodes.values()):
        return
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RunError(
        f"Flow `{flow.name}` has async nodes and this call runs inside an event loop; use "
        "`await runner.astart(...)` / `await runner.aresume(...)` there.",
        thread_id=thread_id,
    )
