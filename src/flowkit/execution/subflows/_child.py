"""The ``ChildRunner``: what the core needs of a runner, for a child flow inside a parent's
thread, and where a parent stands while its child runs, waits or fails."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...definition._flow import Flow
from ...definition._jsonform import dump_update
from ...definition._node import RetryPolicy
from ...definition._subflow import Subflow
from ...errors import SubflowError
from ...records._events import Event, Failed, NodeFinished, StateChanged, Waiting
from ...records._node_error import NodeError
from ...records._records import AnyRecord, Status, SubRecord
from .._cursor import Cursor
from .._open import open_pauses
from ._journal import child_error, child_flow_of

__all__ = ["ChildRunner", "leaf", "parent_status", "retries", "waiting_path", "waiting_pauses"]


class ChildRunner:
    """What the core needs of a runner, for the child of ``Subflow`` node ``name``.

    Commits wrap the child's records into the parent's journal; ``cursor`` is the parent's
    cursor after the latest of them. Events of the child's nodes reach the parent's
    subscribers with the node named by path (``review/check``); the child's state events
    do not (a stream of the parent shows parent states).
    """

    def __init__(self, parent: Any, name: str, node: Subflow, cursor: Cursor, run_id: str) -> None:
        self.parent = parent
        #: Which attempt of the node the child run is: its commits are journaled as that one.
        self.attempts = 1 if cursor.sub is None else cursor.sub.attempts
        self.run_id = run_id  # events name the run even without a store (no records then)
        self.name = name
        self.node = node
        self.cursor = cursor
        self.flow = node.flow
        self.store = parent.store
        self.step_limit = parent.step_limit
        self.error_text = parent.error_text
        self.clock = parent.clock
        self.stamp = parent._threads.stamp  # its records are the thread's: the same clock
        self.memory = parent.memory
        self._cache_memory = parent._cache_memory
        self._child_runner = parent._child_runner
        self._deps_for = parent._deps_for  # the child's nodes see the parent's deps
        self._log = parent._log
        self._subscribers = parent._subscribers
        self._marks = None  # an attempt marker names a node of the flow the runner runs
        self._attempt_store = None
        self._max_recoveries = None
        self._threads = self
        #: A cancelled run of the thread stops between the child's nodes too.
        self.cancels = parent._threads.cancels
        #: The parent's cursor to announce (waiting or failed inside the child), held until
        #: the child's own events for the step that got it there have gone out.
        self._untold: tuple[str, Cursor] | None = None
        #: Set while ``run_subflow`` runs the node: a failure inside the child is then told by
        #: it, after the node's own ``NodeFinished``, as a failing node's is.
        self.running = False

    # -- the Runner part -------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if isinstance(event, StateChanged | Waiting | Failed) or not hasattr(event, "node"):
            return
        self.parent._emit(replace(event, node=f"{self.name}/{event.node}"))  # type: ignore[call-arg]
        if isinstance(event, NodeFinished):
            self.flush()

    def _announce(self, *_: Any) -> None:
        """The child's state is not the thread's state: the parent announces its own (its
        wait or failure inside the child, once the child's step that got there is told)."""
        self.flush()

    def flush(self) -> None:
        """Say where the thread now waits or failed inside the child, if not said yet."""
        untold = self._untold
        if untold is None or (self.running and untold[1].status == "failed"):
            return
        self._untold = None
        self._tell(untold[0], self.run_id, untold[1])

    def _node_llm(self, thread_id: str, run_id: str, node: str, calls: list[dict[str, Any]]) -> Any:
        return self.parent._node_llm(thread_id, run_id, f"{self.name}/{node}", calls)

    def _step_prefix(self, thread_id: str) -> str:
        """Step keys of the child's nodes: under the parent's step of this node."""
        parent = self.parent._step_prefix(thread_id)
        return f"{parent}/{self.cursor.step_version}/{self.name}"

    # -- the Threads part --------------------------------------------------------------------

    def dump(self, update: Mapping[str, Any], *, thread_id: str, who: str) -> dict[str, Any]:
        if self.store is None:
            return {}
        return dump_update(self.flow.schema, update, thread_id=thread_id, who=who)

    def commit(self, thread_id: str, before: int, after: Cursor, record: AnyRecord | None) -> None:
        """Commit the child's ``after`` as a checkpoint of the parent (``before`` is the
        child's version; the parent's own version is what the parent's journal checks)."""
        del before
        parent = self.cursor
        new, wrapped = self._wrap(after, () if record is None else (record,))
        self.parent._threads.commit(thread_id, parent.version, new, wrapped[0] if wrapped else None)
        self._committed(thread_id, new)

    def commit_all(
        self, thread_id: str, before: int, after: Cursor, records: Sequence[AnyRecord]
    ) -> None:
        """Commit several records of the child (a batch's calls finished together) as
        checkpoints of the parent, with one commit of the parent's."""
        del before
        parent = self.cursor
        new, wrapped = self._wrap(after, records)
        self.parent._threads.commit_all(thread_id, parent.version, new, wrapped)
        self._committed(thread_id, new)

    def _wrap(self, after: Cursor, records: Sequence[AnyRecord]) -> tuple[Cursor, list[AnyRecord]]:
        """The parent's cursor once the child stands at ``after``, and the child's records
        (one at least, but none without a store) wrapped as the parent's ``sub`` records.
        Every record but the last leaves the child pending: only a group of finished calls
        has several."""
        if self.attempts != 1:
            after = after._replace(attempts=self.attempts)
        parent = self.cursor
        status = parent_status(self.parent.flow, self.name, after)
        error = child_error(self.name, after) if status == "failed" else None
        new = Cursor(
            parent.state,
            self.name,
            status,
            parent.version + max(1, len(records)),
            error,
            None,
            after,
            parent.step_version,
            # The child's timer is the thread's: fire_due finds it on the parent, and fires
            # it inside the child.
            due=after.due if status == "waiting" else None,
        )
        if self.store is None:
            return new, []
        last = len(records) - 1
        wrapped: list[AnyRecord] = [
            SubRecord.model_construct(
                version=parent.version + i + 1,
                ts=record.ts,
                run_id=record.run_id,
                next=self.name,
                status=status if i == last else "pending",
                due=new.due if i == last else None,
                node=self.name,
                attempts=self.attempts,
                record=record,
            )
            for i, record in enumerate(records)
        ]
        return new, wrapped

    def _committed(self, thread_id: str, new: Cursor) -> None:
        self.cursor = new
        if new.status != "pending" and not isinstance(self.parent, ChildRunner):
            self._untold = (thread_id, new)  # told after the step's own events

    def _tell(self, thread_id: str, run_id: str, top: Cursor) -> None:
        """The thread (the top flow) now waits or failed inside a child: say where."""
        if not self._subscribers:
            return
        if top.status == "waiting":
            for path, payload in waiting_pauses(self.parent.flow, top).items():
                self.parent._emit(Waiting(thread_id, run_id, path, top.version, payload))
        elif top.error is not None:
            self.parent._emit(Failed(thread_id, run_id, self.name, top.error, top.version))


def parent_status(flow: Flow, name: str, child: Cursor) -> Status:
    """The parent's status while the child stands at ``child``."""
    if child.status == "waiting":
        return "waiting"
    if child.status == "failed" and (flow.error_field is None or flow.route_table(name) is None):
        retry = flow.nodes[name].retry
        if retry is None or not retries(retry, child_error(name, child), child.attempts):
            return "failed"
    return "pending"  # running, finished, or failed to be routed or retried: the node goes on


def retries(policy: RetryPolicy | None, error: NodeError, attempt: int) -> bool:
    """Whether ``policy`` runs the child again after attempt ``attempt`` failed with ``error``.

    The policy's own rules, applied to the child's error: by default a ``retryable`` error
    (a timeout, an unavailable service); with ``retry_on=(SomeError, ...)`` an error whose
    type is one of those classes or a subclass of one, by name (``SubflowError`` there
    matches every failure); with ``retry_on=callable`` whatever it says of a ``SubflowError``.
    """
    if policy is None or attempt >= policy.max_attempts:
        return False
    if isinstance(policy.retry_on, tuple):
        return any(
            cls is SubflowError or error.type in _class_names(cls) for cls in policy.retry_on
        )
    return policy.should_retry(SubflowError(error), attempt)


def _class_names(cls: type[BaseException]) -> set[str]:
    """The names of ``cls`` and of every subclass of it loaded in this process."""
    seen: set[type] = set()
    pending: list[type] = [cls]
    while pending:
        each = pending.pop()
        if each not in seen:
            seen.add(each)
            pending.extend(each.__subclasses__())
    return {each.__name__ for each in seen}


def leaf(flow: Flow, cursor: Cursor) -> tuple[Flow, Cursor, str]:
    """The innermost child the cursor stands in, its flow, and the path of the subflow nodes
    leading to it (``outer/inner``)."""
    path = []
    while cursor.sub is not None:
        path.append(cursor.node)
        flow = child_flow_of(flow, cursor.node)
        cursor = cursor.sub
    return flow, cursor, "/".join(path)


def waiting_pauses(flow: Flow, cursor: Cursor) -> dict[str, Any]:
    """The open pauses of the innermost child, by path (``review/approve``) -> payload."""
    child_flow, inner, prefix = leaf(flow, cursor)
    return {
        f"{prefix}/{pause}": payload for pause, payload in open_pauses(child_flow, inner).items()
    }


def waiting_path(flow: Flow, cursor: Cursor) -> str:
    """Where a waiting thread stands: the innermost gate (or node) by path."""
    _, inner, prefix = leaf(flow, cursor)
    return f"{prefix}/{inner.node}"
