"""A step whose unit was committed, but whose engine checkpoint was lost to a crash, runs again
on resume: it must not write its records twice (no duplicate issues, resolutions or rounds)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flowkit import Context
from flowkit.nodes.quality.check import check
from flowkit.nodes.quality.fixes import apply_fixes
from flowkit.nodes.quality.verify import record_verdicts
from flowkit.quality.app import QualityChecker
from flowkit.quality.models import IterationPolicy
from flowkit.testing import ScriptedLLM

from .conftest import AKI

Make = Callable[..., QualityChecker]


def _ctx(checker: QualityChecker, node: str, llm: Any = None) -> Context[Any]:
    return Context(
        thread_id="t", run_id="r", node=node, attempt=1, llm=llm,
        clock=lambda: datetime.now(UTC), deps=checker.services,
    )  # fmt: skip


def _before(checker: QualityChecker, sid: str, node: str) -> Any:
    """The state the thread was in when ``node`` ran for the first time."""
    return next(c.state for c in checker.runner.history(sid) if c.next == node)


def test_each_recording_step_run_again_writes_nothing_twice(
    make_checker: Make, episode_ja: Path
) -> None:
    checker = make_checker()
    sid = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=2)).session_id
    store = checker.store
    issues = sorted(i.issue_id for i in store.issues(sid, principal=AKI))
    resolutions = len(store.resolutions(sid, principal=AKI))
    steps = len(store.step_executions(sid, principal=AKI))

    refusing = ScriptedLLM([], default=RuntimeError("the LLM must not be asked again"))
    again = check(_before(checker, sid, "check"), _ctx(checker, "check", refusing))
    assert sorted(again["open_issue_ids"]) == sorted(
        i.issue_id for i in store.issues(sid, principal=AKI) if i.open
    )
    apply_fixes(_before(checker, sid, "apply_fixes"), _ctx(checker, "apply_fixes"))
    record_verdicts(_before(checker, sid, "record_verdicts"), _ctx(checker, "record_verdicts"))

    assert sorted(i.issue_id for i in store.issues(sid, principal=AKI)) == issues
    assert len(store.resolutions(sid, principal=AKI)) == resolutions
    assert len(store.step_executions(sid, principal=AKI)) == steps
