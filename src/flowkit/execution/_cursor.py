"""Where a thread is (``Cursor``) and what the core asks its driver to do (``CallNode``,
``Sleep``, ``Batch``) with what comes back (``Outcome``, ``Finished``).

Plain data, shared by the core, batches, subflows, the journal and the drivers.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel

from ..definition._node import Context, Node
from ..records._node_error import NodeError
from ..records._records import (
    Status,
)

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class ItemDone:
    """A finished call of the ``Map``/``Parallel`` node a cursor stands at, not yet merged.

    ``update`` is what merging applies (the normalised update in a live run, its JSON form
    when read back); ``stored`` is the JSON form a snapshot keeps.
    """

    update: Mapping[str, Any]
    stored: Mapping[str, Any]
    error: NodeError | None
    of: int
    label: str = ""


# The values below are NamedTuples rather than frozen dataclasses: they are made several
# times per step, and a frozen dataclass costs three times as much to build (every field goes
# through object.__setattr__), while a NamedTuple is just as immutable.


class Cursor(NamedTuple):
    """A thread's committed position: its state, the machine state, status and version.

    ``items`` holds the finished calls of a ``Map``/``Parallel`` node still running at
    ``node`` (by index); ``None`` everywhere else. ``sub`` is the child's own cursor while
    the ``Subflow`` node at ``node`` runs (or waits, or failed inside). ``entered`` is the
    version at which the thread arrived at ``node`` when records that keep it there (a failed
    attempt, finished calls, child steps) came since; ``None`` when that is ``version``.
    ``attempts``, on a child's cursor (a ``sub``), is which attempt of its ``Subflow`` node
    the child run is (a retry starts the next one afresh).
    """

    state: BaseModel
    node: str
    status: Status
    version: int
    error: NodeError | None = None
    items: Mapping[int, ItemDone] | None = None
    sub: Cursor | None = None
    entered: int | None = None
    attempts: int = 1
    #: The open pauses that carry a payload or were made at run time (a node's ask, a
    #: ``Map`` item's), by id -> payload (JSON form); ``None`` when there are none such.
    pauses: Mapping[str, Any] | None = None
    #: When this position's timer fires (seconds since the epoch; a gate's deadline, a
    #: node's wake-up), or ``None``.
    due: float | None = None

    @property
    def step_version(self) -> int:
        """The version the step at ``node`` started from: part of its idempotency key, the
        same on every attempt and re-run of the step (see ``Context.step_key``)."""
        return self.version if self.entered is None else self.entered


class CallNode(NamedTuple):
    node: Node
    name: str
    state: BaseModel
    #: The node's context: made only for nodes that take one or have a timeout (whose
    #: ``cancel_event`` the driver sets); a plain ``fn(state)`` node never sees it.
    ctx: Context | None
    thread_id: str
    #: Who holds the thread (its store, or the runner that keeps no store): attempts of one
    #: node in one thread of one owner never overlap.
    owner: object = None


class Sleep(NamedTuple):
    seconds: float


class Outcome(NamedTuple):
    value: Any = None
    error: Exception | None = None
    #: ``value`` is a node's update reused from its cache (JSON form): the node did not run.
    cached: bool = False


#: One call's own steps: ``CallNode``/``Sleep`` instructions, returning the last outcome, the
#: attempt number and the LLM calls of that attempt.
AttemptSteps = Generator[
    "CallNode | Sleep", Outcome | None, tuple[Outcome, int, list[dict[str, Any]]]
]


@dataclass(frozen=True, slots=True)
class Job:
    """One call of a batch: its index and a maker of its own steps (run by the driver)."""

    index: int
    make: Callable[[], AttemptSteps]


@dataclass(frozen=True, slots=True)
class Finished:
    """What the driver sends back for a batch: one job that finished, with its result."""

    index: int
    outcome: Outcome
    attempts: int
    llm_calls: list[dict[str, Any]]
    latency_s: float


@dataclass(eq=False, slots=True)
class Batch:
    """Run these jobs, at most ``limit`` at once; send back each ``Finished`` as it comes.

    The core yields the same ``Batch`` again for every next finished job, and the driver keeps
    its running state in ``driver`` between sends; ``close`` stops whatever still runs.
    ``hold``: ``None``, wait for the next finished job; a number, the core holds finished jobs
    not saved yet and would rather save them than wait: the driver sends ``None`` instead of
    waiting for a job still running elsewhere, or of running one in its own thread that is
    likely to take longer than ``hold`` seconds.
    """

    node: str
    jobs: list[Job]
    limit: int
    driver: Any = None
    hold: float | None = None

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()


Instruction = CallNode | Sleep | Batch
Steps = Generator[Instruction, Any, Cursor]
