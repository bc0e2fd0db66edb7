"""The store capability workers share: a work queue (``PostgresStore`` has one).

``queue_input`` is what ``Runner.submit`` does: queue a start state or a gate's answer for
whichever worker claims the thread next (``flowkit.workers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ..errors import InvalidStateError, RunError
from ..foundation._distribution import install_hint

if TYPE_CHECKING:
    from .postgres import ThreadStatus, WorkItem
    from .postgres._queue import Claim

__all__ = ["WorkQueue", "queue_input", "work_queue"]


@runtime_checkable
class WorkQueue(Protocol):
    """The store capability workers need (``PostgresStore`` has it)."""

    def submit(
        self,
        thread_id: str,
        *,
        flow: str,
        input: Any = None,
        gate: str | None = None,
        expected_version: int | None = None,
    ) -> int: ...
    def claim(self, flows: Sequence[str]) -> str | None: ...
    def claim_next(self, flows: Sequence[str]) -> Claim | None:
        """``claim``, with what ``next_work`` would say of the thread, in one round trip."""
        ...

    def next_work(self, thread_id: str) -> tuple[ThreadStatus | None, WorkItem | None]:
        """``status`` and ``next_item`` together, in one round trip."""
        ...

    def release(self, thread_id: str) -> None: ...
    def lease_lost(self, thread_id: str) -> bool: ...
    def next_item(self, thread_id: str) -> WorkItem | None: ...
    def consume_on_write(self, thread_id: str, item_id: int | None) -> None: ...
    def reject(self, item_id: int, reason: str) -> None: ...
    def park(self, thread_id: str, seconds: float) -> None: ...
    def status(self, thread_id: str) -> ThreadStatus | None: ...


def work_queue(store: object) -> WorkQueue:
    """``store`` as a ``WorkQueue``, or a ``RunError`` that says which store has one."""
    if not isinstance(store, WorkQueue):
        raise RunError(
            f"Queued work needs a store with a work queue that workers share; {store!r} has "
            f"none. Use PostgresStore ({install_hint('postgres')}), or call start/resume.",
            thread_id="",
        )
    return store


def queue_input(
    store: object,
    thread_id: str,
    *,
    flow: str,
    input: Any = None,
    gate: str | None = None,
    expected_version: int | None = None,
) -> int:
    """Queue ``input`` for thread ``thread_id`` of flow ``flow`` in ``store``'s work queue;
    the work item's id."""
    queue = work_queue(store)
    if isinstance(input, BaseModel):
        input = input.model_dump(mode="json")
    elif isinstance(input, Mapping):
        input = dict(input)
    elif input is not None:
        raise InvalidStateError(
            f"Cannot queue a {type(input).__name__} for thread `{thread_id}`: submit a mapping "
            "or a pydantic model (the start state of a new thread, else the gate's answer).",
            thread_id=thread_id,
        )
    return queue.submit(
        thread_id,
        flow=flow,
        input=input,
        gate=gate,
        expected_version=expected_version,
    )
