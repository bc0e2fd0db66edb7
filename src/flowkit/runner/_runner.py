"""The Runner: start, resume, inspect, fork and patch threads of one flow.

Each call takes the thread's lock, brings its cursor up to date from the store, and drives
the execution core with either the sync or the async driver. Every step is committed to the
store before the next one starts, so a crash loses at most the step that was running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from ..definition._flow import UNSET, Flow
from ..errors import ThreadNotFoundError
from ..execution._invoke import refuse_inside_event_loop
from ..execution._upgrade import MigrationReport
from ..foundation._progress import OnProgress
from ..records._records import new_run_id
from ..stores._ids import check_thread_id
from ..stores._list_threads import list_threads
from ..stores._listing import ThreadPage
from ..stores._work_queue import queue_input
from ._base import D, RunnerBase, S
from ._checkpoints import (
    fork_children,
    fork_cursor,
    history_of,
    patch_thread,
    rewind_thread,
)
from ._fired import Fired
from ._lifecycle import PruneResult, compact_thread, delete_thread, prune_threads
from ._result import Checkpoint, RunResult
from ._stream import AsyncStream, Mode, Stream, async_items, parse_modes, sync_items
from ._timer_firing import fire_due_timers

__all__ = ["Runner"]


class Runner(RunnerBase[S, D]):
    """Runs threads of ``flow``, persisting every step in ``store``.

    ``store`` defaults to a ``MemoryStore``; pass ``JsonFileStore(path)`` for durability, or
    ``None`` to keep only the latest state in this object (no history, fork or restart).
    ``llm`` is handed to nodes as ``ctx.llm``. ``step_limit`` stops a run that never pauses.
    ``track_attempts=True`` has the store note each node before it runs (the store must have
    the ``AttemptMarks`` capability), so recovery can name the node a dead process was in.
    ``max_recovery_attempts`` (implies ``track_attempts``): a node inside which the process
    died more than this many times is not run again; the thread fails with a
    ``RecoveryLimitError`` instead (routed like any failure). A node with a ``RetryPolicy``
    notes its attempts wherever the store keeps markers, so its ``max_attempts`` counts the
    attempts a dead process made too.
    ``deps`` is handed to nodes as ``ctx.deps`` (a call may pass its own: ``start(...,
    deps=...)``); it is never stored. ``memory`` (a ``flowkit.memory.Memory``) is long-term
    memory shared across threads, handed to nodes as ``ctx.memory``. ``cache`` is where nodes
    with a ``CachePolicy`` keep their updates (a ``Memory``; default: in this runner only).
    ``error_text`` is how a failed node's exception text is kept in its ``NodeError`` (state,
    journal, events, the CLI and the server show that one text): ``"masked"`` (e-mail
    addresses, phone numbers and secrets replaced by ``***``, as in log lines) or ``"raw"``,
    the exception's text as it was, for an application that keeps its journal private.
    ``clock`` (returning an aware ``datetime``) stamps every record of this runner's threads,
    in whole milliseconds, and is ``ctx.clock``; default: the wall clock.
    """

    def _child_runner(self, flow: Flow) -> Runner[Any, Any]:
        """A runner of ``flow`` sharing this one's store, LLM, clock, deps, memory and cache:
        it runs the child threads of ``Subflow`` calls in a ``Map`` or ``Parallel``."""
        with self._children_lock:
            child = self._children.get(id(flow))
            if child is None:
                child = Runner(
                    flow,
                    store=self.store,
                    llm=self.llm,
                    clock=self._clock_given,
                    step_limit=self.step_limit,
                    deps=self.deps,
                    memory=self.memory,
                    cache=self._cache_memory(),
                    error_text=self.error_text,
                )
                child._batch_child = True
                self._children[id(flow)] = child
            return child

    def llm_calls(self, thread_id: str) -> list[dict[str, Any]]:
        """Every LLM call journaled in the thread, in order: feed them to a ``ReplayLLM``."""
        return [
            call
            for record, _ in self._threads.replay(thread_id)
            for call in getattr(_innermost(record), "llm_calls", ())
        ]

    # -- public API ---------------------------------------------------------------------------

    def start(
        self, thread_id: str, state: S | Mapping[str, Any] | None = None, *, deps: D = UNSET
    ) -> RunResult[S]:
        """Create thread ``thread_id`` from ``state`` and run until it waits, finishes or fails.

        ``deps`` replaces the runner's ``deps`` for this call's nodes.
        """
        refuse_inside_event_loop(self.flow, thread_id)
        run_id = new_run_id()
        with self._threads.lock(thread_id), self._using_deps(run_id, deps):
            return self._drive(thread_id, run_id, self._start_steps(thread_id, state, run_id))

    async def astart(
        self, thread_id: str, state: S | Mapping[str, Any] | None = None, *, deps: D = UNSET
    ) -> RunResult[S]:
        run_id = new_run_id()
        with self._threads.lock(thread_id), self._using_deps(run_id, deps):
            return await self._adrive(
                thread_id, run_id, self._start_steps(thread_id, state, run_id)
            )

    def resume(
        self,
        thread_id: str,
        input: Any = None,
        *,
        gate: str | None = None,
        expected_version: int | None = None,
        deps: D = UNSET,
        actor: str | None = None,
    ) -> RunResult[S]:
        """Continue a thread: with ``input`` at the gate it waits at, or after a crash/failure.

        ``gate`` asserts which gate the caller means; ``expected_version`` makes the call fail
        with ``ConflictError`` if anyone else moved the thread since the caller looked.
        ``deps`` replaces the runner's ``deps`` for this call's nodes. ``actor`` names who
        answers: the answer's checkpoint keeps it, so ``history()`` shows who answered.
        """
        refuse_inside_event_loop(self.flow, thread_id)
        run_id = new_run_id()
        with self._threads.lock(thread_id), self._using_deps(run_id, deps):
            steps = self._resume_steps(thread_id, input, gate, expected_version, run_id, actor)
            return self._drive(thread_id, run_id, steps)

    async def aresume(
        self,
        thread_id: str,
        input: Any = None,
        *,
        gate: str | None = None,
        expected_version: int | None = None,
        deps: D = UNSET,
        actor: str | None = None,
    ) -> RunResult[S]:
        run_id = new_run_id()
        with self._threads.lock(thread_id), self._using_deps(run_id, deps):
            steps = self._resume_steps(thread_id, input, gate, expected_version, run_id, actor)
            return await self._adrive(thread_id, run_id, steps)

    def stream(
        self,
        thread_id: str,
        input: Any = None,
        *,
        mode: Mode | Sequence[Mode] = "values",
        new: bool | None = None,
        gate: str | None = None,
        expected_version: int | None = None,
        deps: D = UNSET,
        actor: str | None = None,
    ) -> Stream[S]:
        """``start`` a new ``thread_id`` from ``input``, or ``resume`` an existing one with it,
        yielding items of ``mode`` (values, updates, events, tokens, custom; a list gives
        ``(mode, item)`` pairs) until it waits, finishes or fails; then ``.result`` is set.
        ``deps`` replaces the runner's ``deps`` for this call's nodes; ``actor``, as
        ``resume``'s, names who answers (a start journals no answer).
        """
        modes, single = parse_modes(thread_id, mode)
        items = sync_items(
            self, thread_id, input, modes, single, new, gate, expected_version, deps, actor
        )
        return Stream(items)

    def astream(
        self,
        thread_id: str,
        input: Any = None,
        *,
        mode: Mode | Sequence[Mode] = "values",
        new: bool | None = None,
        gate: str | None = None,
        expected_version: int | None = None,
        deps: D = UNSET,
        actor: str | None = None,
    ) -> AsyncStream[S]:
        """``stream`` for asyncio: ``async for item in runner.astream(...)``."""
        modes, single = parse_modes(thread_id, mode)
        return AsyncStream(
            lambda done: async_items(
                self,
                thread_id,
                input,
                modes,
                single,
                new,
                gate,
                expected_version,
                deps,
                done,
                actor,
            )
        )

    def get_state(self, thread_id: str) -> RunResult[S]:
        """Where the thread stands now."""
        return self._result(thread_id, self._threads.load(thread_id), None)

    def history(
        self, thread_id: str, *, limit: int | None = None, before: int | None = None
    ) -> list[Checkpoint[S]]:
        """Every checkpoint of the thread, oldest first (version 0 is the start).

        ``limit`` and ``before`` ask for a page: the ``limit`` checkpoints just before version
        ``before`` (default: up to the latest), still oldest first; the next page back is
        ``before=page[0].version``. A page costs its own records plus the replay from the
        snapshot before it, not the whole history."""
        return history_of(self.flow, self._threads, thread_id, limit, before, self._pause_list)

    def fork(self, thread_id: str, new_thread_id: str, *, at: int | None = None) -> RunResult[S]:
        """Start ``new_thread_id`` from checkpoint ``at`` (default: latest) of ``thread_id``.

        The new thread stands exactly where the original stood then; resume it to go on.
        """
        fresh, version = fork_cursor(self._threads, thread_id, at)
        with self._threads.lock(new_thread_id):
            origin = {"thread_id": thread_id, "version": version}
            if fresh.pauses or fresh.sub is not None:  # the fork copies waiting child threads
                fresh = fork_children(
                    self.flow, fresh, thread_id, new_thread_id, self._child_runner, self._taken
                )
            self._threads.create(new_thread_id, fresh, origin)
        return self._result(new_thread_id, fresh, None)

    def _taken(self, thread_id: str) -> bool:
        """Whether the store holds thread ``thread_id`` already."""
        try:
            self._threads.load(thread_id)
        except ThreadNotFoundError:
            return False
        return True

    def update_state(
        self,
        thread_id: str,
        values: Mapping[str, Any] | None = None,
        *,
        goto: str | None = None,
        reason: str = "",
        actor: str = "user",
        expected_version: int | None = None,
        child: str | None = None,
        as_node: str | None = None,
    ) -> RunResult[S]:
        """Patch a thread's state (through its reducers), optionally moving it to ``goto``.

        The patch is a checkpoint of its own (kind ``patch``, with ``reason`` and ``actor``), so
        history shows who changed what; nothing earlier is rewritten. ``expected_version``
        makes the call fail with ``ConflictError`` if the thread moved since the caller looked.
        ``child="review"`` (a path, ``outer/inner`` when nested) patches the state of the
        subflow running there instead, and ``goto`` names a state of that child's flow.
        ``as_node="draft"`` applies the values as that node's update would be and moves the
        thread where that node's route sends the new state (LangGraph's ``as_node``): a
        person does a node's work, and the flow goes on from there (``resume`` runs on).
        """
        cursor = patch_thread(
            self, self._threads, thread_id, values, goto, reason, actor, expected_version, child,
            as_node,
        )  # fmt: skip
        return self._result(thread_id, cursor, None)

    def rewind(
        self,
        thread_id: str,
        at: int,
        *,
        reason: str = "",
        actor: str = "user",
        expected_version: int | None = None,
    ) -> RunResult[S]:
        """Put the thread back where it stood at checkpoint ``at`` (a ``history()`` version),
        on the same thread: its whole state, node, status and open pauses, as a new
        checkpoint (kind ``patch``, with ``reason`` and ``actor``); nothing earlier is
        rewritten. ``resume`` then runs again from there (a gate it waited at waits again);
        ``update_state`` first to go on with other values. ``fork`` does the same on a new
        thread. ``expected_version`` as in ``update_state``.
        """
        cursor = rewind_thread(self, self._threads, thread_id, at, reason, actor, expected_version)
        return self._result(thread_id, cursor, None)

    def cancel(self, thread_id: str) -> bool:
        """Stop the run of ``thread_id`` going on in this runner (another thread of this
        process, or a task) before its next node: the node running now finishes and is saved,
        then that run raises ``RunCancelledError`` and the thread stands ``pending`` there,
        for ``resume`` to go on. Whether a run (or another call holding the thread) was going
        on; a run in another process or runner is not reached (it goes on to its next pause or
        end).
        """
        return self._threads.cancel(check_thread_id(thread_id))

    def submit(
        self,
        thread_id: str,
        input: S | Mapping[str, Any] | BaseModel | None = None,
        *,
        gate: str | None = None,
        expected_version: int | None = None,
    ) -> int:
        """Queue ``input`` for a worker (``flowkit.workers``): the start state of a new thread,
        else the answer to the gate it waits at. Needs a store with a work queue
        (``PostgresStore``); returns the work item's id. See docs/scale-out.md."""
        return queue_input(
            self.store,
            thread_id,
            flow=self.flow.name,
            input=input,
            gate=gate,
            expected_version=expected_version,
        )

    def fire_due(self, *, now: datetime | None = None, limit: int | None = None) -> list[Fired[S]]:
        """Fire the timers of this flow's threads that are due by ``now`` (an aware
        ``datetime``; default: the runner's clock), earliest first, at most ``limit``: a gate's
        deadline that passed unanswered moves its thread to the gate's ``on_timeout``, a node
        asleep (``ctx.sleep_until``) wakes and its route decides. Each is journaled as a
        ``timer`` record, then the run goes on from there as after a resume. Returns one
        ``Fired`` per timer fired.

        Each timer fires once, whoever else calls this on the same store at the same time
        (other runners, processes, ``flowkit worker``, ``flowkit serve``): the thread is
        fired under its lock, after reading it again, with the version read. A thread that
        someone else is running, or has moved, is left to them; one that could not be fired
        (a route or an invariant refused the move) is logged (``timer_failed``) and tried
        again next time. Call it from a loop of your own; see docs/timers.md.
        """
        return fire_due_timers(self, self._threads, self._drive, now, limit)

    def threads(self) -> list[str]:
        """Ids of the threads in the store."""
        return self._threads.ids()

    def list_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = UNSET,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
        order: str = "updated",
    ) -> ThreadPage:
        """One page of this flow's threads (``flow=None``: of every flow in the store), most
        recently updated first (``order="id"``: by id), read from the store's index without
        loading any; ``next_cursor`` gives the next page. See ``flowkit.stores.list_threads``."""
        return list_threads(
            self._threads.require_store("list threads"),
            status=status,
            flow=self.flow.name if flow is UNSET else flow,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=limit,
            cursor=cursor,
            order=order,
        )

    def migrate(self, thread_id: str, *, dry_run: bool = False) -> MigrationReport:
        """Bring a thread of an older flow version up to this flow's version now.

        Threads are also migrated lazily, when ``resume`` or ``update_state`` loads them;
        this does it ahead of time (``flowkit migrate`` calls it for every thread). The
        report says what changed; with ``dry_run`` nothing is written. A thread already at
        the flow's version is reported with ``from_version == to_version``.

        Raises:
            IncompatibleThreadError: the thread does not fit the flow even after the
                migrations (the message names the record and what to do).
        """
        with self._threads.lock(thread_id):
            cursor, report = self._threads.read(thread_id)
            if report is None:
                version = self.flow.version
                node, status = cursor.node, cursor.status
                return MigrationReport(thread_id, version, version, node, node, status)
            if dry_run:
                return report
            after = self._threads.commit_migration(thread_id, cursor, report)
        return replace(report, record=after.version)

    # -- lifecycle ----------------------------------------------------------------------------

    def delete(self, thread_id: str) -> None:
        """Delete the thread and its whole history from the store.

        ``ThreadNotFoundError`` if there is none; ``ConflictError`` (nothing deleted) while a
        run of it is going on, in this process or another.
        """
        delete_thread(self._threads, thread_id)

    def prune(
        self,
        *,
        older_than: timedelta | float | None = None,
        status: str | Iterable[str] | None = ("done",),
        dry_run: bool = False,
        on_progress: OnProgress | None = None,
    ) -> PruneResult:
        """Delete this flow's threads whose latest step is older than ``older_than`` (a
        ``timedelta`` or seconds; ``None``: any age) and whose status is in ``status``
        (default: finished ones only; ``None``: any). Threads being run are kept and listed
        in ``busy``. ``dry_run`` deletes nothing and says what would go.
        ``on_progress(done, total, what)`` is called with the threads read so far, then with
        those deleted so far (``what``: ``"read"``, ``"deleted"``): a long prune can show how
        far it is.
        """
        store = self._threads.require_store("prune")
        return prune_threads(
            store,
            now=self.clock().timestamp(),
            older_than=older_than,
            status=status,
            flow=self.flow.name,
            dry_run=dry_run,
            forget=self._threads.forget,
            on_progress=on_progress,
        )

    def compact(self, thread_id: str, *, keep: int) -> int:
        """Drop the thread's history older than its last ``keep`` checkpoints; how many
        records went. The oldest checkpoint kept becomes the thread's start: ``history()``
        and ``fork`` begin there, the state and step keys are unchanged. The cut moves back
        to where the thread stood cleanly at a node (not between a ``Map``'s calls or inside
        a ``Subflow``), so a little more may be kept. ``ConflictError`` while it runs.
        """
        return compact_thread(self._threads, thread_id, keep)

    def __repr__(self) -> str:
        return f"Runner({self.flow.name!r}, store={self.store!r})"


def _innermost(record: Any) -> Any:
    """The record itself, or for a child flow's record (``sub``), the child's own."""
    while record.kind == "sub":
        record = record.record
    return record
