"""The performance monitor (seed 000 §5.1): per-thread health read from a store alone.

Checkpoint size is the JSON size of the thread's latest state; node processing times and
error rates come from the journal's step records; recoveries are the patches written by the
recovery service. ``Thresholds`` are configuration; ``evaluate`` turns the metrics into
``healthy`` / ``warning`` / ``critical`` with what to do about each finding.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import FlowkitError
from ..records._records import PatchRecord, StartRecord, StepRecord
from .policy import RECOVERY_ACTOR

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..stores._protocol import Store

__all__ = [
    "Evaluation",
    "Health",
    "NodeTimes",
    "PerformanceMonitor",
    "ThreadMetrics",
    "Thresholds",
    "format_bytes",
    "judge",
]

Health = Literal["healthy", "warning", "critical"]

_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Limits past which a thread is flagged (the seed's defaults).

    Over ``max_checkpoint_bytes`` or ``max_error_rate``: critical. Over
    ``max_avg_processing_s`` or ``max_recoveries_per_hour``: warning.
    """

    max_checkpoint_bytes: int = 10 * _MB
    max_avg_processing_s: float = 300.0
    max_error_rate: float = 0.1
    max_recoveries_per_hour: int = 3


@dataclass(frozen=True, slots=True)
class NodeTimes:
    """How one node's steps went in a thread."""

    runs: int
    errors: int
    total_s: float
    max_s: float

    @property
    def avg_s(self) -> float:
        return self.total_s / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class ThreadMetrics:
    """What the monitor measured for one thread.

    ``checkpoint_exact`` is False when the flow was unknown: the state was then folded from
    stored updates without the flow's reducers, so list fields may be undercounted.
    """

    thread_id: str
    flow: str
    status: str
    node: str
    version: int
    updated: float
    checkpoint_bytes: int
    checkpoint_exact: bool
    steps: int
    failed_steps: int
    processing_s: float
    nodes: Mapping[str, NodeTimes]
    recoveries: int
    recoveries_last_hour: int

    @property
    def error_rate(self) -> float:
        return self.failed_steps / self.steps if self.steps else 0.0

    @property
    def avg_processing_s(self) -> float:
        return self.processing_s / self.steps if self.steps else 0.0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A thread's metrics judged against the thresholds."""

    metrics: ThreadMetrics
    status: Health
    warnings: tuple[str, ...] = ()
    critical_issues: tuple[str, ...] = ()
    recommendations: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        metrics = asdict(self.metrics)
        metrics["error_rate"] = round(self.metrics.error_rate, 6)
        metrics["avg_processing_s"] = round(self.metrics.avg_processing_s, 6)
        return {
            "thread_id": self.metrics.thread_id,
            "health": self.status,
            "warnings": list(self.warnings),
            "critical_issues": list(self.critical_issues),
            "recommendations": list(self.recommendations),
            "metrics": metrics,
        }


class PerformanceMonitor:
    """Measures and judges threads in ``store``; needs no runner and no running flow.

    ``flow_for(name)`` may return the Flow of a thread's flow name, for an exact checkpoint
    size; without it (or when it returns ``None``) the size is folded from the journal.
    """

    def __init__(
        self,
        store: Store,
        *,
        thresholds: Thresholds | None = None,
        flow_for: Callable[[str], Flow | None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.thresholds = thresholds or Thresholds()
        self.flow_for = flow_for
        self.clock = clock

    def metrics(self, thread_id: str) -> ThreadMetrics:
        records = self.store.records(thread_id)
        start = records[0]
        flow_name = start.flow if isinstance(start, StartRecord) else "?"
        last = records[-1]
        nodes: dict[str, list[float]] = {}
        errors: dict[str, int] = {}
        steps = [r for r in records if isinstance(r, StepRecord)]
        for step in steps:
            nodes.setdefault(step.node, []).append(step.latency_s)
            errors[step.node] = errors.get(step.node, 0) + (1 if step.error else 0)
        hour_ago = self.clock() - 3600
        recoveries = [
            r for r in records if isinstance(r, PatchRecord) and r.actor == RECOVERY_ACTOR
        ]
        size, exact = self._checkpoint_bytes(thread_id, flow_name)
        return ThreadMetrics(
            thread_id=thread_id,
            flow=flow_name,
            status=last.status,
            node=last.next,
            version=last.version,
            updated=last.ts,
            checkpoint_bytes=size,
            checkpoint_exact=exact,
            steps=len(steps),
            failed_steps=sum(errors.values()),
            processing_s=sum(s.latency_s for s in steps),
            nodes={
                name: NodeTimes(len(times), errors[name], sum(times), max(times))
                for name, times in sorted(nodes.items())
            },
            recoveries=len(recoveries),
            recoveries_last_hour=sum(1 for r in recoveries if r.ts >= hour_ago),
        )

    def evaluate(self, thread_id: str) -> Evaluation:
        """The thread's health: critical beats warning beats healthy."""
        return judge(self.metrics(thread_id), self.thresholds)

    def evaluate_all(self) -> list[Evaluation]:
        return [self.evaluate(thread_id) for thread_id in self.store.threads()]

    def _checkpoint_bytes(self, thread_id: str, flow_name: str) -> tuple[int, bool]:
        flow = self.flow_for(flow_name) if self.flow_for is not None else None
        if flow is not None:
            from ..runner._runner import Runner

            try:
                state: Any = Runner(flow, store=self.store).get_state(thread_id).state
            except FlowkitError:  # e.g. the flow changed since: fall back to folding
                pass
            else:
                return len(state.model_dump_json().encode()), True
        log = self.store.load(thread_id)
        if log.snapshot is not None:
            folded = dict(log.snapshot.state)
            later = list(log.records)
        else:
            first = log.records[0]
            folded = dict(first.state) if isinstance(first, StartRecord) else {}
            later = list(log.records[1:])
        for record in later:
            folded.update(getattr(record, "update", {}))
        encoded = json.dumps(folded, ensure_ascii=False, separators=(",", ":")).encode()
        return len(encoded), False


def judge(metrics: ThreadMetrics, limits: Thresholds) -> Evaluation:
    """Evaluate ``metrics`` against ``limits`` (seed 000 §5.1, with every finding counted)."""
    warnings: list[str] = []
    critical: list[str] = []
    advice: list[str] = []
    if metrics.checkpoint_bytes > limits.max_checkpoint_bytes:
        critical.append(
            f"checkpoint is {format_bytes(metrics.checkpoint_bytes)} "
            f"(limit {format_bytes(limits.max_checkpoint_bytes)})"
        )
        advice.append(
            "Shrink the state: keep large artefacts (programs, files, long texts) on disk and "
            "store their paths; trim lists that only grow."
        )
    if metrics.steps and metrics.avg_processing_s > limits.max_avg_processing_s:
        slowest = max(metrics.nodes.items(), key=lambda item: item[1].avg_s)
        warnings.append(
            f"average node time is {metrics.avg_processing_s:.1f} s (limit "
            f"{limits.max_avg_processing_s:g} s); slowest: `{slowest[0]}` at "
            f"{slowest[1].avg_s:.1f} s"
        )
        advice.append(f"Give `{slowest[0]}` a timeout, or split it into smaller nodes.")
    if metrics.steps and metrics.error_rate > limits.max_error_rate:
        failing = ", ".join(f"`{n}`" for n, t in metrics.nodes.items() if t.errors)
        critical.append(
            f"error rate is {metrics.error_rate:.1%} ({metrics.failed_steps} of "
            f"{metrics.steps} steps failed; limit {limits.max_error_rate:.0%})"
        )
        advice.append(
            f"Look at the failing node(s) {failing}: `flowkit history {metrics.thread_id}` "
            "lists every checkpoint with its error."
        )
    if metrics.recoveries_last_hour > limits.max_recoveries_per_hour:
        warnings.append(
            f"recovered {metrics.recoveries_last_hour} times in the last hour (limit "
            f"{limits.max_recoveries_per_hour})"
        )
        advice.append(
            "The thread keeps getting stuck: see what recovery would do "
            f"(`flowkit recover {metrics.thread_id} --dry-run`) and find the cause "
            "before recovering it again."
        )
    status: Health = "critical" if critical else "warning" if warnings else "healthy"
    return Evaluation(metrics, status, tuple(warnings), tuple(critical), tuple(advice))


def format_bytes(n: int) -> str:
    """``n`` bytes as B, KB or MB for people."""
    if n >= _MB:
        return f"{n / _MB:.2f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} B"
