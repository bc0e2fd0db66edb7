"""Runtime services every workflow gets: change detection, event broadcasting to user
interfaces, a performance monitor and auto-recovery, each configured as data.

See ``docs/operations.md``. Modules load on first use, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._facts import StartedNode, ThreadFacts
    from ._queue import Envelope, Priority
    from .broadcast import Broadcaster, BroadcastStats, classify_event, merge_progress
    from .changes import Changes, changes_in, changes_of, detect_changes
    from .monitor import (
        Evaluation,
        Health,
        NodeTimes,
        PerformanceMonitor,
        ThreadMetrics,
        Thresholds,
    )
    from .policy import (
        DEFAULT_POLICY,
        RECOVERY_ACTOR,
        DetectionRule,
        RecoveryPolicy,
        StrategyRoute,
        number,
        policy_for,
        size,
    )
    from .recovery import Problem, Recovery, RecoveryReport
    from .strategies import BackToStable, Complete, Patch, Reset, Resume, Strategy

__all__ = [
    "DEFAULT_POLICY",
    "RECOVERY_ACTOR",
    "BackToStable",
    "BroadcastStats",
    "Broadcaster",
    "Changes",
    "Complete",
    "DetectionRule",
    "Envelope",
    "Evaluation",
    "Health",
    "NodeTimes",
    "Patch",
    "PerformanceMonitor",
    "Priority",
    "Problem",
    "Recovery",
    "RecoveryPolicy",
    "RecoveryReport",
    "Reset",
    "Resume",
    "StartedNode",
    "Strategy",
    "StrategyRoute",
    "ThreadFacts",
    "ThreadMetrics",
    "Thresholds",
    "changes_in",
    "changes_of",
    "classify_event",
    "detect_changes",
    "merge_progress",
    "number",
    "policy_for",
    "size",
]

_LAZY = {
    "StartedNode": "._facts",
    "ThreadFacts": "._facts",
    "Envelope": "._queue",
    "Priority": "._queue",
    "BroadcastStats": ".broadcast",
    "Broadcaster": ".broadcast",
    "classify_event": ".broadcast",
    "merge_progress": ".broadcast",
    "Changes": ".changes",
    "changes_in": ".changes",
    "changes_of": ".changes",
    "detect_changes": ".changes",
    "Evaluation": ".monitor",
    "Health": ".monitor",
    "NodeTimes": ".monitor",
    "PerformanceMonitor": ".monitor",
    "ThreadMetrics": ".monitor",
    "Thresholds": ".monitor",
    "DEFAULT_POLICY": ".policy",
    "RECOVERY_ACTOR": ".policy",
    "DetectionRule": ".policy",
    "RecoveryPolicy": ".policy",
    "StrategyRoute": ".policy",
    "number": ".policy",
    "policy_for": ".policy",
    "size": ".policy",
    "Problem": ".recovery",
    "Recovery": ".recovery",
    "RecoveryReport": ".recovery",
    "BackToStable": ".strategies",
    "Complete": ".strategies",
    "Patch": ".strategies",
    "Reset": ".strategies",
    "Resume": ".strategies",
    "Strategy": ".strategies",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'flowkit.runtime' has no attribute {name!r}")
