"""Auto-recovery (seed 000 §3): find stuck threads by a policy's rules and patch them back.

``Recovery(runner).recover(thread_id, dry_run=True)`` reports the problems, the strategy and
the planned patch without writing anything; without ``dry_run`` the patch is applied with
``runner.update_state(..., actor="flowkit-recover")``. The journal is append-only, so a
recovery adds one audited record and the checkpoints before it stay readable and forkable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConflictError, FlowkitError
from ..foundation._logging import get_logger
from ..records._records import StartRecord
from ._facts import ThreadFacts, gather_facts
from .policy import RECOVERY_ACTOR, RecoveryPolicy, policy_for
from .strategies import Patch, PlanContext, Strategy

if TYPE_CHECKING:
    from ..runner._runner import Runner

__all__ = ["Outcome", "Problem", "Recovery", "RecoveryReport"]

#: ``healthy``: no rule matched. ``running``: someone runs the thread now (not judged).
#: ``awaiting_resume``: the last record is a recovery; resume it. ``planned``: a dry run found
#: problems. ``recovered``: the patch was written. ``unrecoverable``: no strategy applies.
Outcome = Literal["healthy", "running", "awaiting_resume", "planned", "recovered", "unrecoverable"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One detection rule that matched, with its reason."""

    rule: str
    reason: str


@dataclass(frozen=True)
class RecoveryReport:
    """What recovery found for one thread and what it did (or would do)."""

    thread_id: str
    outcome: Outcome
    status: str = ""
    node: str = ""
    version: int = -1
    problems: tuple[Problem, ...] = ()
    patch: Patch | None = None
    notes: tuple[str, ...] = ()
    applied_version: int | None = None
    facts: ThreadFacts | None = field(default=None, repr=False, compare=False)

    @property
    def reason(self) -> str:
        """The audit reason written with the patch: strategy, rules and their reasons."""
        strategy = self.patch.strategy if self.patch else "none"
        found = "; ".join(f"{p.rule}: {p.reason}" for p in self.problems)
        return f"flowkit recover ({strategy}): {found}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "outcome": self.outcome,
            "status": self.status,
            "node": self.node,
            "version": self.version,
            "problems": [{"rule": p.rule, "reason": p.reason} for p in self.problems],
            "strategy": self.patch.strategy if self.patch else None,
            "patch": (
                {"goto": self.patch.goto, "values": dict(self.patch.values)} if self.patch else None
            ),
            "notes": list(self.notes),
            "applied_version": self.applied_version,
        }


class Recovery:
    """Detects and repairs stuck threads of ``runner``'s flow in ``runner``'s store.

    ``policy`` defaults to the one registered for the flow's name (``sas`` ships one), else
    ``DEFAULT_POLICY``; it is checked against the flow at once (``RecoveryPolicyError``).
    """

    def __init__(
        self,
        runner: Runner[Any],
        policy: RecoveryPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        actor: str = RECOVERY_ACTOR,
    ) -> None:
        self.runner = runner
        self.policy = policy if policy is not None else policy_for(runner.flow.name)
        self.policy.check(runner.flow)
        self.clock = clock
        self.actor = actor
        self._log = get_logger()

    def facts(self, thread_id: str) -> ThreadFacts:
        """The thread's facts as the rules see them (it may be running; see ``recover``)."""
        return gather_facts(self.runner, thread_id, now=self.clock(), actor=self.actor)

    def diagnose(self, facts: ThreadFacts) -> list[Problem]:
        """Every rule of the policy that matches ``facts``, in policy order."""
        scalars = facts.scalars()
        return [
            Problem(rule.name, rule.explain(scalars))
            for rule in self.policy.rules
            if rule.when(facts)
        ]

    def plan(self, thread_id: str, *, strategy: Strategy | None = None) -> RecoveryReport:
        """What ``recover`` would do, without writing anything (a dry run)."""
        return self.recover(thread_id, dry_run=True, strategy=strategy)

    def recover(
        self, thread_id: str, *, dry_run: bool = False, strategy: Strategy | None = None
    ) -> RecoveryReport:
        """Diagnose one thread and, unless ``dry_run``, apply the chosen strategy's patch.

        ``strategy`` overrides the policy's strategy table for this call.
        """
        store = self.runner._threads.require_store("recovery")
        try:
            with store.lock(thread_id):
                pass  # only free threads are judged; a live run is never "stuck"
        except ConflictError:
            return RecoveryReport(thread_id, "running")
        facts = self.facts(thread_id)
        where: dict[str, Any] = {
            "status": facts.status,
            "node": facts.node,
            "version": facts.version,
            "facts": facts,
        }
        if facts.last_kind == "patch" and facts.last_actor == self.actor:
            note = f"recovered at version {facts.version}; resume the thread to continue"
            return RecoveryReport(thread_id, "awaiting_resume", notes=(note,), **where)
        problems = tuple(self.diagnose(facts))
        if not problems:
            return RecoveryReport(thread_id, "healthy", **where)
        chosen = strategy if strategy is not None else self.policy.strategy_for(facts)
        notes: list[str] = []
        patch = chosen.plan(PlanContext(facts, self.runner.flow, self._state_at(thread_id)), notes)
        if patch is None:
            return RecoveryReport(
                thread_id, "unrecoverable", problems=problems, notes=tuple(notes), **where
            )
        report = RecoveryReport(
            thread_id, "planned", problems=problems, patch=patch, notes=patch.notes, **where
        )
        if dry_run:
            return report
        try:
            result = self.runner.update_state(
                thread_id,
                patch.values,
                goto=patch.goto,
                reason=report.reason,
                actor=self.actor,
                expected_version=facts.version,
            )
        except ConflictError:  # a run started (or a patch landed) since we looked
            note = "the thread moved while it was being recovered; nothing was written"
            return RecoveryReport(thread_id, "running", notes=(note,), **where)
        except FlowkitError as exc:  # e.g. the patched state breaks a flow invariant
            refused = (*patch.notes, f"the patch was refused, nothing was written: {exc}")
            return RecoveryReport(
                thread_id, "unrecoverable", problems=problems, patch=patch, notes=refused, **where
            )
        self._log.info(
            "thread_recovered",
            thread_id=thread_id,
            rules=[p.rule for p in problems],
            strategy=patch.strategy,
            goto=patch.goto,
            keys=sorted(patch.values),
            version=result.version,
        )
        return RecoveryReport(
            thread_id,
            "recovered",
            problems=problems,
            patch=patch,
            notes=patch.notes,
            applied_version=result.version,
            **where,
        )

    def scan(
        self, *, dry_run: bool = False, strategy: Strategy | None = None
    ) -> list[RecoveryReport]:
        """``recover`` every thread of this flow in the store, in id order."""
        store = self.runner._threads.require_store("recovery")
        return [
            self.recover(thread_id, dry_run=dry_run, strategy=strategy)
            for thread_id in store.threads()
            if flow_of(store, thread_id) == self.runner.flow.name
        ]

    def _state_at(self, thread_id: str) -> Callable[[int], Mapping[str, Any]]:
        def state_at(version: int) -> Mapping[str, Any]:
            for checkpoint in self.runner.history(thread_id):
                if checkpoint.version == version:
                    return self.runner.flow.schema.dump_state(checkpoint.state)
            raise LookupError(f"thread `{thread_id}` has no checkpoint {version}")

        return state_at


def flow_of(store: Any, thread_id: str) -> str | None:
    """The name of the flow a stored thread belongs to (from its snapshot or start record)."""
    log = store.load(thread_id)
    if log.snapshot is not None:
        return str(log.snapshot.flow)
    first = log.records[0] if log.records else None
    return first.flow if isinstance(first, StartRecord) else None
