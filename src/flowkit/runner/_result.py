"""What runner calls return: where a thread stands (``RunResult``) and its past (``Checkpoint``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from ..records._node_error import NodeError
from ..records._records import Status

__all__ = ["Checkpoint", "Pause", "RunResult"]

S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Pause:
    """One open pause of a waiting thread: its ``id`` (what an answer names: a gate, a gate
    branch of a ``Parallel``, a node that asked, a ``Map`` call ``node[label]``; by path
    inside a ``Subflow``) and its ``payload`` (JSON form; ``None`` when it has none)."""

    id: str
    payload: Any = None


@dataclass(frozen=True, slots=True)
class RunResult(Generic[S]):
    """A thread's position after a call.

    ``status`` is ``"waiting"`` (paused at gate ``node``, or at the ``Parallel`` node ``node``
    whose gate branches wait), ``"done"`` (reached ``node``, END or a final state),
    ``"failed"`` (``node`` raised; see ``error``) or ``"pending"`` (a node is next, e.g. after a
    crash: ``resume`` continues it). ``gates`` names every gate waiting for input: the gate
    itself, or the open gate branches of a ``Parallel`` (answer each with ``resume(...,
    gate=name)``, or several at once with a mapping name -> input).

    For a gate inside a ``Subflow`` node, ``node`` is the subflow node and ``gates`` names the
    gate by path: the node, then the gate (``("review/approve",)``); ``resume(..., gate=...)``
    takes that path.

    ``pauses`` lists the same open pauses with their payloads (``Pause(id, payload)``): what a
    gate's ``payload=`` computed, or what a node asked with (``ctx.ask(payload)``); a node
    that asked and each ``Map`` call that asked (``node[label]``) is a pause too. ``payload``
    is the payload of the one open pause (``None`` when there are several, or none).

    ``due`` is when the thread's timer fires (an aware UTC ``datetime``): the deadline of the
    gate it waits at, or when a node asleep (``ctx.sleep_until``; ``status == "waiting"``
    with no ``gates``) wakes; ``None`` without a timer. See docs/timers.md.
    """

    thread_id: str
    status: Status
    node: str
    state: S
    version: int
    run_id: str | None = None
    error: NodeError | None = None
    gates: tuple[str, ...] = ()
    pauses: tuple[Pause, ...] = ()
    due: datetime | None = None

    @property
    def payload(self) -> Any:
        """The payload of the one open pause; ``None`` when none or several are open."""
        return self.pauses[0].payload if len(self.pauses) == 1 else None

    @property
    def waiting(self) -> bool:
        return self.status == "waiting"

    @property
    def done(self) -> bool:
        return self.status == "done"


CheckpointKind = Literal["start", "step", "input", "patch", "item", "pause", "join", "timer"]


@dataclass(frozen=True, slots=True)
class Checkpoint(Generic[S]):
    """The thread after one journal record: fork from any of these by ``version``.

    A record of a child flow (run by a ``Subflow`` node) shows the child's record: its
    ``kind``, ``node`` and ``next`` as paths (``"review/check"``; ``"review"`` for the child's
    start; ``"review#2/check"`` in the node's second attempt), the parent's ``state`` and
    ``status``, and the child's state in ``child_state``.
    """

    thread_id: str
    version: int
    kind: CheckpointKind
    node: str | None
    next: str
    status: Status
    state: S
    update: dict[str, Any]
    ts: float
    run_id: str | None = None
    error: NodeError | None = None
    reason: str = ""
    #: Who made it: a patch's ``actor``, or who answered (an ``input``, an ``item`` carrying a
    #: gate branch's answer) when ``resume(..., actor=...)`` said so; else ``None``.
    actor: str | None = None
    child_state: BaseModel | None = None
    #: A step whose update came from the node cache: the node did not run.
    cached: bool = False
    #: How many attempts the step's node took (a retried node's, a ``Subflow``'s; else 1).
    attempts: int = 1
    #: The open pauses after this record, with their payloads (as ``RunResult.pauses``).
    pauses: tuple[Pause, ...] = ()
