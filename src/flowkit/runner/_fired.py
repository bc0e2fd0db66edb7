"""What ``Runner.fire_due`` returns: one ``Fired`` per timer it fired, saying where it went."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

from ._result import RunResult

__all__ = ["Fired"]

S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Fired(Generic[S]):
    """A timer that fired: thread ``thread_id`` left ``node`` for ``target``, by the timer
    due at ``due``. ``kind`` is ``"deadline"`` (gate ``node``'s deadline passed unanswered)
    or ``"wake"`` (node ``node`` slept, ``ctx.sleep_until``, and its route chose ``target``).

    ``result`` is where the thread stands after the run that followed (the nodes after
    ``target`` ran, as after a resume); ``error`` is what that run raised instead, if it did
    (the timer has fired all the same: its ``timer`` record is in the journal).
    """

    thread_id: str
    kind: Literal["deadline", "wake"]
    node: str
    target: str
    due: datetime
    result: RunResult[S] | None = None
    error: Exception | None = None
