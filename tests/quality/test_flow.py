"""The quality flow end to end with the scripted editor: INT-QUALITY-120-001 (every node's
step persisted), INT-QUALITY-120-005 (the iteration policy stops the loop), the issue
lifecycle over rounds, QC-012, and the logs of §8."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from flowkit.quality.app import QualityChecker
from flowkit.quality.fetch import ManualClock
from flowkit.quality.models import IterationPolicy, sha256_text
from flowkit.quality.services import Workspace

from .conftest import AKI

Make = Callable[..., QualityChecker]


def test_INT_QUALITY_120_001_every_step_reaches_the_state_store(
    make_checker: Make, episode_ja: Path
) -> None:
    checker = make_checker()
    outcome = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=2))
    assert outcome.result.done and not outcome.resumed
    sid = outcome.session_id
    steps = checker.store.step_executions(sid, principal=AKI)
    names = [s.name for s in steps]
    assert names[:3] == ["begin_session", "load_manuscript", "check"]
    assert names[3:7] == ["apply_fixes", "recheck", "record_verdicts", "apply_fixes"]
    assert names[-1] == "finish"
    assert [s.step_id for s in steps] == list(range(len(steps)))
    check = steps[2]
    assert check.issues_detected == 5 and check.input_hash and check.output_hash
    apply = steps[3]
    assert apply.manuscript_hash_refs[0] != apply.manuscript_hash_refs[1]
    assert apply.tool_selection_status == "selected"
    session = checker.store.get_session(sid, principal=AKI)
    assert (session.current_status, session.lock_status) == ("completed", "released")
    assert session.manuscript_hash == apply.manuscript_hash_refs[1] or session.state_version > 0
    fetched = checker.store.fetch_log(sid, principal=AKI)
    assert fetched and fetched[0].tool_id == "fetch_artifact" and fetched[0].result == "success"


def test_the_issue_lifecycle_over_two_rounds(make_checker: Make, episode_ja: Path) -> None:
    checker = make_checker()
    sid = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=2)).session_id
    issues = checker.store.issues(sid, principal=AKI)
    by_state: dict[str, list[str]] = {}
    for issue in issues:
        by_state.setdefault(issue.state, []).append(issue.category)
    assert sorted(by_state["Resolved"]) == ["notation", "style", "typo", "typo"]
    assert by_state["Recurrence"] == ["typo"]
    assert by_state["New"] == ["structure"]  # its tool is not available (QC-012)
    recurrence = next(i for i in issues if i.state == "Recurrence")
    again = next(i for i in issues if recurrence.issue_id in i.related_issue_ids)
    assert again.state == "Resolved" and again.issue_id != recurrence.issue_id
    resolved = [i for i in issues if i.state == "Resolved"]
    assert all(i.adjustment_method == "diff3" and i.confidence_score >= 0.7 for i in resolved)
    assert all(a.strategy == "exact_match" for i in resolved for a in i.adjustment_attempts[:1])
    resolutions = checker.store.resolutions(sid, principal=AKI)
    statuses = sorted(r.verification_status for r in resolutions)
    assert statuses == ["passed"] * 4 + ["recurrence"]  # 3 + 1 in round 1, 1 in round 2
    flagged = next(r for r in resolutions if r.recurrence_flag)
    assert flagged.issue_id == recurrence.issue_id and flagged.recurrence_score >= 0.7
    assert all(r.diff_ref and r.diff_ref.startswith("artifact:") for r in resolutions)
    final = checker.services.text(
        checker.store.get_session(sid, principal=AKI).manuscript_hash or "", session_id=sid
    )
    assert "見当がつかない" in final and "鳴いていた" in final and "猫は" in final


def test_INT_QUALITY_120_005_count_stops_the_loop(make_checker: Make, episode_ja: Path) -> None:
    checker = make_checker()
    outcome = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=1))
    assert outcome.result.done
    assert outcome.result.state.decision == "count_exhausted"
    assert outcome.result.state.round == 1
    manifest = json.loads(
        (checker.workspace.root / "checks" / outcome.session_id / "manifest.json").read_text()
    )
    assert manifest["decision"] == "count_exhausted"
    assert manifest["policy_history"] == [IterationPolicy(count=1).model_dump()]


def test_INT_QUALITY_120_005_time_budget_stops_the_loop(
    workspace: Workspace, episode_ja: Path
) -> None:
    class Ticking(ManualClock):
        def now(self):  # type: ignore[no-untyped-def]
            self.advance(45)  # each look at the clock: 45 s of work
            return self.start + timedelta(seconds=self.elapsed)

    from flowkit.quality.demo import editor_llm

    with QualityChecker(workspace, principal=AKI, llm=editor_llm(), clock=Ticking()) as checker:
        policy = IterationPolicy(count=5, time_budget_sec=60)
        outcome = checker.check(episode_ja, episode=1, policy=policy)
    assert outcome.result.state.decision == "time_exhausted"
    assert outcome.result.state.round == 1


def test_until_pass_ends_as_soon_as_nothing_is_open(make_checker: Make, tmp_path: Path) -> None:
    clean = tmp_path / "clean.txt"
    clean.write_text("吾輩は猫である。名前はまだ無い。\n", encoding="utf-8")
    outcome = make_checker().check(clean, episode=3, policy=IterationPolicy(count=3))
    assert outcome.result.done and outcome.result.state.decision == "passed"
    assert outcome.result.state.round == 0


def test_the_audit_log_and_io_logs(make_checker: Make, episode_ja: Path) -> None:
    checker = make_checker()
    sid = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=2)).session_id
    entries = checker.services.audit.entries()
    actions = [e.action for e in entries]
    assert actions[0] == "session_started" and actions[-1] == "session_completed"
    assert actions.count("issue_detected") == 5
    unavailable = [e for e in entries if e.action == "tool_unavailable"]
    assert unavailable and all(e.qc_code == "QC-012" for e in unavailable)
    assert {e.performed_by for e in entries} == {"aki"}
    assert all(set(e.model_dump()) >= {"timestamp", "session_id", "issue_id", "action",
               "performed_by", "tool_used", "qc_code", "metadata"} for e in entries)  # fmt: skip
    folder = checker.workspace.root / "checks" / sid
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert all((folder / name).is_file() for name in manifest["files"])
    assert any(name.endswith("_check_input.json") for name in manifest["files"])
    assert any("plan_1_" in name and name.endswith("_output.json") for name in manifest["files"])


def test_the_state_store_holds_no_manuscript_text(make_checker: Make, episode_ja: Path) -> None:
    checker = make_checker()
    checker.check(episode_ja, episode=1, policy=IterationPolicy(count=2))
    text = episode_ja.read_text(encoding="utf-8")
    sentences = [s for s in text.replace("\n", "。").split("。") if len(s) > 6]
    for path in (checker.workspace.root / "state").rglob("*.json"):
        stored = path.read_text(encoding="utf-8")
        assert not [s for s in sentences if s in stored], path
    assert sha256_text(text) in {
        s.manuscript_hash_refs[0]
        for s in checker.store.step_executions(checker.history(1)[0].session_id, principal=AKI)
        if s.manuscript_hash_refs
    }


def test_a_manuscript_named_by_something_that_is_not_a_path_is_a_quality_input_error(
    make_checker: Make,
) -> None:
    import pytest

    from flowkit.quality.errors import QualityInputError

    checker = make_checker()
    for wrong in (5, None, "chapter\x00one.txt"):
        with pytest.raises(QualityInputError):
            checker.check(wrong, episode=1)  # type: ignore[arg-type]
    assert checker.store.latest_session(1, principal=AKI) is None  # no session was begun
