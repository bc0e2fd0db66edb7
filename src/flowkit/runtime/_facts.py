"""What recovery knows about a thread: facts gathered from its journal, marker and state.

Rules are conditions over these facts, so a policy can say "a node started and never
finished", "pending in ``merge_xml`` for more than 300 s" or "fewer than 3 messages in an
advanced state" as data. Facts are only gathered for threads nobody is running.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records._records import PatchRecord, StartRecord, Status
from ..stores._protocol import AttemptMarks

if TYPE_CHECKING:
    from ..runner._runner import Runner

__all__ = ["StartedNode", "ThreadFacts", "gather_facts"]


@dataclass(frozen=True, slots=True)
class StartedNode:
    """A node the journal shows started (by its attempt marker) but never committed."""

    node: str
    attempt: int
    version: int
    run_id: str | None
    ts: float
    age_s: float


@dataclass(frozen=True, slots=True)
class ThreadFacts:
    """A thread as recovery rules see it; ``state`` is the latest state in JSON form.

    ``interrupted``: pending, yet nothing runs it and no patch or fork put it there.
    ``in_state_s``: seconds since it entered its current state; ``idle_s``: since its last
    record. ``stable_node`` / ``stable_version``: the last gate it waited at, or its start.
    """

    thread_id: str
    flow: str
    status: Status
    node: str
    version: int
    state: Mapping[str, Any]
    started: StartedNode | None
    interrupted: bool
    idle_s: float
    in_state_s: float
    entered_ts: float
    steps: int
    failed_steps: int
    recoveries: int
    last_kind: str
    last_actor: str | None
    stable_node: str
    stable_version: int

    def scalars(self) -> dict[str, Any]:
        """The facts a rule's reason may quote: names and numbers, never state values."""
        started = self.started
        messages = self.state.get("messages")
        return {
            "thread_id": self.thread_id,
            "flow": self.flow,
            "status": self.status,
            "node": self.node,
            "version": self.version,
            "idle_s": self.idle_s,
            "in_state_s": self.in_state_s,
            "steps": self.steps,
            "failed_steps": self.failed_steps,
            "recoveries": self.recoveries,
            "messages": len(messages) if isinstance(messages, list) else 0,
            "started_node": started.node if started else None,
            "started_attempt": started.attempt if started else None,
            "started_age_s": started.age_s if started else None,
            "stable_node": self.stable_node,
            "stable_version": self.stable_version,
        }


def gather_facts(runner: Runner[Any], thread_id: str, *, now: float, actor: str) -> ThreadFacts:
    """Read the thread's journal, marker and latest state (through the runner's flow)."""
    store = runner._threads.require_store("recovery")
    records = store.records(thread_id)
    current = runner.get_state(thread_id)
    last = records[-1]
    entered = last.ts
    for record in reversed(records):
        if record.next != last.next:
            break
        entered = record.ts
    stable_node, stable_version = records[0].next, 0
    for record in reversed(records):
        if record.status == "waiting":
            stable_node, stable_version = record.next, record.version
            break
    started = None
    marker = store.last_attempt(thread_id) if isinstance(store, AttemptMarks) else None
    if (
        marker is not None
        and current.status == "pending"
        and marker.version == current.version
        and marker.node == current.node
    ):
        started = StartedNode(
            marker.node, marker.attempt, marker.version, marker.run_id, marker.ts, now - marker.ts
        )
    forked = isinstance(last, StartRecord) and last.forked_from is not None
    steps = [r for r in records if r.kind == "step"]
    return ThreadFacts(
        thread_id=thread_id,
        flow=runner.flow.name,
        status=current.status,
        node=current.node,
        version=current.version,
        state=runner.flow.schema.dump_state(current.state),
        started=started,
        interrupted=current.status == "pending" and last.kind != "patch" and not forked,
        idle_s=max(0.0, now - last.ts),
        in_state_s=max(0.0, now - entered),
        entered_ts=entered,
        steps=len(steps),
        failed_steps=sum(1 for r in steps if getattr(r, "error", None)),
        recoveries=sum(1 for r in records if isinstance(r, PatchRecord) and r.actor == actor),
        last_kind=last.kind,
        last_actor=last.actor if isinstance(last, PatchRecord) else None,
        stable_node=stable_node,
        stable_version=stable_version,
    )
