"""Streaming a run: ``Runner.stream`` / ``astream`` as iterators over what happens.

A stream drives the same execution core as ``start``/``resume`` and watches it through the
runner's event path (a subscriber filtered by its own run id), turning events into items of the
chosen modes; a run that stops to wait for input ends with a ``Paused`` item. Nothing runs in a
helper thread: the sync stream drives the core on the caller's thread and hands out what each
step produced between steps, so tokens and ``ctx.emit`` values of a sync node arrive when that
node's call returns. ``astream`` runs each node call as a task
and hands items out while it runs, so an async node's tokens arrive live.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel

from ..definition._flow import Flow
from ..errors import RunCancelledError, RunError, ThreadNotFoundError
from ..execution._cursor import Cursor, Steps
from ..execution._invoke import advance_sync, perform_async, refuse_inside_event_loop
from ..execution._threads import Threads
from ..records._events import Emitted, Event, StateChanged, Subscriber, TokenStreamed
from ..records._records import new_run_id
from ._result import Pause, RunResult

if TYPE_CHECKING:
    import asyncio
    from types import TracebackType

__all__ = ["PAUSE", "AsyncStream", "Mode", "Paused", "Stream"]

S = TypeVar("S", bound=BaseModel)

Mode = Literal["values", "updates", "events", "tokens", "custom"]
_MODES: tuple[str, ...] = get_args(Mode)


#: The key of the ``updates`` item for a pause: ``{PAUSE: Paused(...)}``.
PAUSE = "__pause__"
#: The modes that end with an item for the pause (``tokens`` and ``custom`` carry what nodes
#: produce, and a pause produces nothing).
_PAUSE_MODES = frozenset({"values", "updates", "events"})


@dataclass(frozen=True, slots=True)
class Paused(Event):
    """The last item of a stream whose run stopped to wait for input.

    ``node`` is where the thread waits: the gate, or the ``Parallel`` node whose gate branches
    wait, or the ``Subflow`` node with a gate inside. ``gates`` names every gate open for input
    (``resume(..., gate=...)`` takes each; a gate inside a ``Subflow`` by path,
    ``"review/approve"``), and ``version`` is the thread's version, for
    ``resume(..., expected_version=...)``. ``pauses`` lists the open pauses with their
    payloads (``Pause(id, payload)``, as ``RunResult.pauses``); ``payload`` is the payload of
    the one open pause (``None`` when several are open, or it carries none).

    ``values`` and ``events`` yield it as it is; ``updates`` as ``{"__pause__": paused}``, so
    every ``updates`` item stays a one-entry mapping. Made by the stream once the run has
    stopped (after the run's own ``Waiting`` events), so subscribers never receive it.
    """

    kind: ClassVar[str] = "paused"
    node: str
    gates: tuple[str, ...]
    version: int
    payload: Any = None
    pauses: tuple[Pause, ...] = ()


class Streamed(Protocol[S]):
    """What a stream needs of the runner it drives; ``Runner`` has all of it. Taken as this
    port rather than as ``Runner``, whose module imports this one."""

    @property
    def flow(self) -> Flow: ...
    @property
    def _threads(self) -> Threads: ...
    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]: ...
    def _using_deps(self, run_id: str, deps: Any) -> AbstractContextManager[None]: ...
    def _start_steps(self, thread_id: str, state: Any, run_id: str) -> Steps: ...
    def _resume_steps(
        self,
        thread_id: str,
        value: Any,
        gate: str | None,
        expected_version: int | None,
        run_id: str,
        actor: str | None = None,
    ) -> Steps: ...
    def _result(self, thread_id: str, cursor: Cursor, run_id: str | None) -> RunResult[S]: ...


def parse_modes(thread_id: str, mode: str | Sequence[str]) -> tuple[frozenset[str], bool]:
    """The modes asked for, and whether items are bare (one mode named as a string)."""
    single = isinstance(mode, str)
    modes = [mode] if isinstance(mode, str) else list(mode)
    unknown = [m for m in modes if m not in _MODES]
    if unknown or not modes:
        raise RunError(
            f"Cannot stream thread `{thread_id}` in mode(s) {unknown or modes!r}: choose one or "
            f"more of {', '.join(_MODES)} (a string for bare items, a list for (mode, item) "
            "pairs).",
            thread_id=thread_id,
        )
    return frozenset(modes), single


class _Collector:
    """Subscribed while a stream runs: keeps its run's items, in order, until handed out."""

    __slots__ = ("_wake", "items", "modes", "run_id", "single", "states")

    def __init__(self, run_id: str, modes: frozenset[str], single: bool) -> None:
        self.run_id = run_id
        self.modes = modes
        self.single = single
        # A deque: a sync node with a timeout runs in a worker thread and emits from there.
        self.items: deque[Any] = deque()
        self._wake: Callable[[], None] | None = None
        #: How many ``values`` items were put: whether the stream began with a state.
        self.states = 0

    def put(self, mode: str, item: Any) -> None:
        if mode == "values":
            self.states += 1
        self.items.append(item if self.single else (mode, item))
        if self._wake is not None:
            self._wake()

    async def arrival(self, node: asyncio.Future[Any]) -> None:
        """Wait until an item arrives or ``node`` is done (``astream`` between node calls)."""
        import asyncio

        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[None] = loop.create_future()
        home = threading.get_ident()

        def settle() -> None:
            if not arrived.done():
                arrived.set_result(None)

        def wake() -> None:
            if threading.get_ident() == home:
                settle()
            else:  # a sync node with a timeout emits from its worker thread
                loop.call_soon_threadsafe(settle)

        self._wake = wake  # set before looking, so an item put in between still wakes us
        try:
            if not self.items:
                await asyncio.wait({node, arrived}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._wake = None
            arrived.cancel()

    def __call__(self, event: Event) -> None:
        if event.run_id != self.run_id:  # another thread's run on the same runner
            return
        modes = self.modes
        if "events" in modes:
            self.put("events", event)
        if isinstance(event, StateChanged):
            if event.node == "__start__":  # no node ran; the start state went out already
                return
            if "updates" in modes:
                self.put("updates", {event.node: dict(event.update)})
            if "values" in modes:
                self.put("values", event.state)
        elif isinstance(event, TokenStreamed):
            if "tokens" in modes:
                self.put("tokens", event)
        elif isinstance(event, Emitted) and "custom" in modes:
            self.put("custom", event.value)

    def ended(self, result: RunResult[Any]) -> None:
        """The run stopped at ``result``: one item per pause mode when it waits for input."""
        if not result.waiting or not self.modes & _PAUSE_MODES:
            return
        paused = Paused(
            result.thread_id,
            self.run_id,
            result.node,
            result.gates,
            result.version,
            result.payload,
            result.pauses,
        )
        modes = self.modes
        if "values" in modes:
            self.put("values", paused)
        if "updates" in modes:
            self.put("updates", {PAUSE: paused})
        if "events" in modes:
            self.put("events", paused)

    def drain(self) -> Iterator[Any]:
        items = self.items
        while items:
            yield items.popleft()


def _steps(
    runner: Streamed[Any],
    thread_id: str,
    input: Any,
    new: bool | None,
    gate: str | None,
    expected_version: int | None,
    run_id: str,
    collector: _Collector,
    actor: str | None = None,
) -> Steps:
    """Start the thread (a new id, or ``new=True``) or resume it (an answer naming ``actor``);
    under the thread's lock."""
    if new is None:
        try:
            runner._threads.load(thread_id)
            new = False
        except ThreadNotFoundError:
            new = True
    if not new:
        steps = runner._resume_steps(thread_id, input, gate, expected_version, run_id, actor)
        if "values" in collector.modes and not collector.states:
            # The resume committed no state of its own (the answer went to a gate inside a
            # Subflow or to a Parallel's gate branches, or a pending/failed node runs next):
            # begin from where the thread stands, as a new thread begins from its start state.
            collector.put("values", runner._threads.load(thread_id).state)
        return steps
    if gate is not None or expected_version is not None:
        raise RunError(
            f"Thread `{thread_id}` is new: `gate` and `expected_version` apply to resuming a "
            "thread; drop them, or stream an existing thread.",
            thread_id=thread_id,
        )
    steps = runner._start_steps(thread_id, input, run_id)
    if "values" in collector.modes:
        collector.put("values", runner._threads.load(thread_id).state)
    return steps


def sync_items(
    runner: Streamed[S],
    thread_id: str,
    input: Any,
    modes: frozenset[str],
    single: bool,
    new: bool | None,
    gate: str | None,
    expected_version: int | None,
    deps: Any,
    actor: str | None = None,
) -> Generator[Any, None, RunResult[S]]:
    refuse_inside_event_loop(runner.flow, thread_id)
    run_id = new_run_id()
    collector = _Collector(run_id, modes, single)
    with runner._threads.lock(thread_id), runner._using_deps(run_id, deps):
        unsubscribe = runner.subscribe(collector)
        try:
            steps = _steps(
                runner, thread_id, input, new, gate, expected_version, run_id, collector, actor
            )
            try:
                instruction = next(steps)
                while True:
                    yield from collector.drain()
                    instruction = advance_sync(steps, instruction)
            except StopIteration as stop:
                cursor: Cursor = stop.value
            except RunCancelledError:
                yield from collector.drain()  # what was saved before the stop goes out first
                raise
            finally:
                steps.close()  # abandoned mid-run: the last committed step stands
            result = runner._result(thread_id, cursor, run_id)
            collector.ended(result)
            yield from collector.drain()
        finally:
            unsubscribe()
    return result


async def async_items(
    runner: Streamed[S],
    thread_id: str,
    input: Any,
    modes: frozenset[str],
    single: bool,
    new: bool | None,
    gate: str | None,
    expected_version: int | None,
    deps: Any,
    done: list[RunResult[S]],
    actor: str | None = None,
) -> AsyncGenerator[Any, None]:
    import asyncio

    run_id = new_run_id()
    collector = _Collector(run_id, modes, single)
    with runner._threads.lock(thread_id), runner._using_deps(run_id, deps):
        unsubscribe = runner.subscribe(collector)
        try:
            steps = _steps(
                runner, thread_id, input, new, gate, expected_version, run_id, collector, actor
            )
            try:
                instruction = next(steps)
                while True:
                    for item in collector.drain():
                        yield item
                    node = asyncio.ensure_future(perform_async(instruction))
                    try:
                        # Hand out tokens and emitted values while the node still runs.
                        while not node.done():
                            await collector.arrival(node)
                            for item in collector.drain():
                                yield item
                    finally:
                        if not node.done():  # the caller left mid-node: stop it, save nothing
                            node.cancel()
                    instruction = steps.send(node.result())
            except StopIteration as stop:
                cursor: Cursor = stop.value
            except RunCancelledError:
                for item in collector.drain():
                    yield item
                raise
            finally:
                steps.close()
            result = runner._result(thread_id, cursor, run_id)
            collector.ended(result)
            for item in collector.drain():
                yield item
        finally:
            unsubscribe()
    done.append(result)


class Stream(Generic[S]):
    """What ``Runner.stream`` returns: iterate it for items; ``result`` once it is exhausted.

    The run starts at the first ``next()`` and holds the thread until the iterator ends (the
    run waits at a gate, finishes or fails) or is closed. Leaving early (``break``) leaves the
    thread where its last committed step put it, as a crash would; ``close()`` it, or use
    ``with``, so the thread is free for the next call at once.
    """

    def __init__(self, items: Generator[Any, None, RunResult[S]]) -> None:
        self._items = items
        #: Where the thread stands when the stream ended; ``None`` until then.
        self.result: RunResult[S] | None = None

    def __iter__(self) -> Stream[S]:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration as stop:
            self.result = stop.value
            raise StopIteration from None

    def close(self) -> None:
        self._items.close()

    def __enter__(self) -> Stream[S]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncStream(Generic[S]):
    """What ``Runner.astream`` returns: ``async for`` over it; ``result`` once it is exhausted.

    As with ``Stream``; leaving early needs ``await it.aclose()`` or ``async with``, since an
    abandoned async iterator is only closed when the event loop gets round to it.
    """

    def __init__(self, make: Callable[[list[RunResult[S]]], AsyncGenerator[Any, None]]) -> None:
        self._done: list[RunResult[S]] = []
        self._items: AsyncGenerator[Any, None] = make(self._done)
        self.result: RunResult[S] | None = None

    def __aiter__(self) -> AsyncStream[S]:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._items.__anext__()
        except StopAsyncIteration:
            if self._done:
                self.result = self._done[0]
            raise

    async def aclose(self) -> None:
        await self._items.aclose()

    async def __aenter__(self) -> AsyncStream[S]:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
