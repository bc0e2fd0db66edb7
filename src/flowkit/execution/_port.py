"""What the execution core needs of whoever drives it: the ``RunPort``.

The core never imports the ``Runner``. The runner hands itself in as this port (and a
``Subflow``'s ``ChildRunner`` does the same one level down): the flow and store it runs on,
the clock, its limits, where to commit a step (``_threads``), where events go (``_emit``,
``_announce``), the LLM a node sees, and the memory its cache uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from ..definition._flow import Flow
from ..foundation._logging import Logger
from ..memory import Memory
from ..records._events import Event, Subscriber
from ..records._node_error import ErrorText
from ..stores._protocol import AnyRecord, AttemptMarks, Store
from ._cursor import Cursor, Steps

__all__ = ["Commits", "RunPort", "RunSteps"]


class Commits(Protocol):
    """Where a step is committed: the thread's journal (``Threads``) or, inside a
    ``Subflow``, the parent's ``sub`` record (``ChildRunner``)."""

    @property
    def stamp(self) -> Callable[[], float]: ...

    #: Threads whose run ``Runner.cancel`` asked to stop before its next node.
    cancels: set[str]

    def dump(self, update: Mapping[str, Any], *, thread_id: str, who: str) -> dict[str, Any]: ...

    def commit(
        self, thread_id: str, before: int, after: Cursor, record: AnyRecord | None
    ) -> None: ...

    def commit_all(
        self, thread_id: str, before: int, after: Cursor, records: Sequence[AnyRecord]
    ) -> None:
        """Commit ``records`` (versions ``before + 1`` on) with one append, ending at ``after``."""
        ...


class RunPort(Protocol):
    """The runner as the core sees it."""

    @property
    def flow(self) -> Flow: ...
    @property
    def store(self) -> Store | None: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def step_limit(self) -> int: ...
    @property
    def error_text(self) -> ErrorText: ...
    @property
    def _log(self) -> Logger: ...
    @property
    def _marks(self) -> AttemptMarks | None: ...
    @property
    def _attempt_store(self) -> AttemptMarks | None: ...
    @property
    def _max_recoveries(self) -> int | None: ...
    @property
    def _subscribers(self) -> list[Subscriber]: ...
    @property
    def _threads(self) -> Commits: ...

    def _emit(self, event: Event) -> None: ...

    def _announce(
        self,
        thread_id: str,
        run_id: str | None,
        node: str,
        after: Cursor,
        update: Mapping[str, Any],
    ) -> None: ...

    def _node_llm(
        self, thread_id: str, run_id: str, node: str, calls: list[dict[str, Any]]
    ) -> Any: ...

    def _cache_memory(self) -> Memory: ...

    def _child_runner(self, flow: Flow) -> Any:
        """A runner of ``flow`` on the same store, LLM, clock, deps and memory: what runs the
        child threads of ``Subflow`` calls in a batch (``start``/``resume``/``get_state``)."""
        ...


#: The core's loop (``run_steps``), handed to the parts that run a flow inside a step (a
#: ``Subflow``'s child) so that they do not import the core that calls them.
RunSteps = Callable[[RunPort, str, str, Cursor], Steps]
