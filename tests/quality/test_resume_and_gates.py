"""Seed §5.2 end to end (interrupt, rerun, resumed, unresolved issues Partial), the
manual-upload gate (QC-017), the manual-alignment gate (QC-013), deferral, and a second
check on a busy episode."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import LLMUnavailableError
from flowkit.quality.app import QualityChecker
from flowkit.quality.demo import editor_llm
from flowkit.quality.errors import (
    AccessDeniedError,
    ManualUploadPending,
    ManuscriptCacheMissError,
    ManuscriptHashMismatchError,
    ManuscriptStorageError,
    QualityInputError,
    SessionBusyError,
)
from flowkit.quality.fetch import Fetched, ManuscriptFetcher
from flowkit.quality.models import IterationPolicy, Principal
from flowkit.quality.services import Workspace
from flowkit.testing import ScriptedLLM

from .conftest import AKI

Make = Callable[..., QualityChecker]


def interrupted_llm() -> ScriptedLLM:
    """Checks like the editor, then the LLM goes away while fixes are planned."""
    editor = editor_llm()
    return ScriptedLLM(
        [
            (
                "Manuscript:\n",
                lambda prompt: editor.complete([{"role": "user", "content": prompt}]).text,
            ),
            ("Excerpt:\n", LLMUnavailableError("the model server went away")),
        ]
    )


def test_seed_5_2_resume_session_after_manual_interruption(
    make_checker: Make, two_issues: Path
) -> None:
    # Given episode 1 session is active with two issues recorded
    first = make_checker(interrupted_llm())
    outcome = first.check(two_issues, episode=1, policy=IterationPolicy(count=2))
    assert outcome.result.status == "failed" and outcome.result.node == "plan_fixes"
    sid = outcome.session_id
    # And WorkflowStateStore snapshots are committed
    issues = first.store.issues(sid, principal=AKI)
    assert [i.state for i in issues] == ["New", "New"]
    first.close()  # the process ends
    # When the user reruns the check (the LLM is still away)
    second = make_checker(interrupted_llm())
    again = second.check(two_issues, episode=1)
    # Then the session resumes
    assert again.resumed and again.session_id == sid
    assert sorted(again.partial_ids) == sorted(i.issue_id for i in issues)
    # And unresolved issues remain flagged with state Partial
    assert [i.state for i in second.store.issues(sid, principal=AKI)] == ["Partial", "Partial"]
    assert again.result.status == "failed"
    assert any(e.action == "session_resumed" for e in second.services.audit.entries())
    second.close()
    # Once the LLM is back, the same command finishes the session
    third = make_checker()
    done = third.check(two_issues, episode=1)
    assert done.resumed and done.result.done
    states = sorted(i.state for i in third.store.issues(sid, principal=AKI))
    assert states == ["New", "Recurrence", "Resolved", "Resolved"] or "Partial" not in states
    session = third.store.get_session(sid, principal=AKI)
    assert session.current_status == "completed" and session.state_version >= 4


def test_a_second_check_on_a_busy_episode_is_refused(make_checker: Make, two_issues: Path) -> None:
    first = make_checker(interrupted_llm())
    first.check(two_issues, episode=1)  # the session stays active and locked by `first`
    with pytest.raises(SessionBusyError):
        make_checker().check(two_issues, episode=1)
    with pytest.raises(SessionBusyError):
        make_checker(principal=Principal(user_id="ben")).check(two_issues, episode=1)


def test_another_user_cannot_read_or_resume(make_checker: Make, two_issues: Path) -> None:
    first = make_checker(interrupted_llm())
    sid = first.check(two_issues, episode=1).session_id
    first.close()
    ben = make_checker(principal=Principal(user_id="ben"))
    assert ben.status(1) is None and ben.history() == []
    with pytest.raises(AccessDeniedError):
        ben.store.issues(sid, principal=ben.principal)
    with pytest.raises(SessionBusyError):  # the episode has aki's active session
        ben.check(two_issues, episode=1)
    admin = make_checker(principal=Principal(user_id="root", admin=True))
    assert admin.history(1)[0].session_id == sid


class _Broken:
    def __init__(self, name: str, error: Exception) -> None:
        self.name, self.error = name, error

    def __call__(self, manuscript_hash: str) -> Fetched:
        raise self.error


def test_qc_017_waits_for_an_upload_then_goes_on(
    workspace: Workspace, clock: Any, two_issues: Path, tmp_path: Path
) -> None:
    services = workspace.services(AKI, clock=clock)
    services.fetcher = ManuscriptFetcher(
        [
            _Broken("fetch_artifact", ManuscriptCacheMissError("evicted")),
            _Broken("read_snapshot", ManuscriptStorageError("NFS is down")),
            services.uploads,
        ],
        clock=clock,
    )
    services.__post_init__()
    with QualityChecker(workspace, principal=AKI, llm=editor_llm(), services=services) as checker:
        outcome = checker.check(two_issues, episode=1, policy=IterationPolicy(count=1))
        assert outcome.result.waiting and outcome.result.node == "manual_upload"
        sid = outcome.session_id
        log = checker.store.fetch_log(sid, principal=AKI)
        assert [(f.tool_id, f.qc_code, f.backoff_ms) for f in log] == [
            ("fetch_artifact", "QC-015", 0),
            ("read_snapshot", "QC-016", 0),
            ("read_snapshot", "QC-016", 1000),
            ("read_snapshot", "QC-016", 2000),
            ("read_snapshot", "QC-016", 4000),
            ("request_manual_upload", "QC-017", 0),
        ]
        assert clock.slept == [1.0, 2.0, 4.0]
        wrong = tmp_path / "wrong.txt"
        wrong.write_text("別の原稿です。", encoding="utf-8")
        with pytest.raises(ManuscriptHashMismatchError):
            checker.upload(sid, wrong)
        result = checker.upload(sid, two_issues)
        assert result is not None and result.done
        log = checker.store.fetch_log(sid, principal=AKI)
        success = next(f for f in log if f.result == "success")
        assert success.tool_id == "request_manual_upload" and success.source_key.startswith(
            "upload:"
        )
        assert checker.services.fetcher is not None
        assert checker.services.fetcher.order[0] == "request_manual_upload"
    assert ManualUploadPending.qc_code == "QC-017"


def _surrounded_llm() -> ScriptedLLM:
    """Finds a problem between two others whose fixes rewrite all of its surroundings; the
    middle one is left for a person (defer), so its range must be placed again."""
    before, middle, after = (
        "春の朝に少年は駅へと急いでいた",
        "猫が",
        "駅の時計は七時を少し過ぎていた",
    )

    def check(prompt: str) -> dict[str, Any]:
        text = prompt.split("Manuscript:\n", 1)[1]
        found = [q for q in (before, middle, after) if q in text]
        return {"issues": [{"category": "typo", "quote": q, "description": q} for q in found]}

    def plan(prompt: str) -> dict[str, Any]:
        if f"⟦{middle}⟧" in prompt:
            return {"tool": "replace_text", "defer": True}
        return {
            "tool": "replace_text",
            "replacement": "ＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸＸ",
        }

    return ScriptedLLM([("Manuscript:\n", check), ("Excerpt:\n", plan)])


class _Blind:
    """An embedder that sees no similarity anywhere (so semantic_search fails)."""

    def embed(self, texts: Any) -> list[list[float]]:
        return [[0.0, 0.0] for _ in texts]


def test_qc_013_a_person_places_the_range_at_the_manual_alignment_gate(
    workspace: Workspace, clock: Any, tmp_path: Path
) -> None:
    manuscript = tmp_path / "ep.txt"
    manuscript.write_text(
        "春の朝に少年は駅へと急いでいた猫が駅の時計は七時を少し過ぎていた。", encoding="utf-8"
    )
    services = workspace.services(AKI, clock=clock, embedder=_Blind())
    with QualityChecker(
        workspace, principal=AKI, llm=_surrounded_llm(), services=services
    ) as checker:
        outcome = checker.check(manuscript, episode=4, policy=IterationPolicy(count=1))
        assert outcome.result.waiting and outcome.result.node == "manual_alignment"
        waiting = outcome.result.state.alignment_pending
        # The two fixed passages were rewritten whole, and the blind embedder cannot find them.
        issues = [checker.store.issue(i, principal=AKI) for i in waiting]
        assert sorted(i.description for i in issues) == [
            "春の朝に少年は駅へと急いでいた",
            "駅の時計は七時を少し過ぎていた",
        ]
        first, second = waiting
        issue = checker.store.issue(first, principal=AKI)
        assert issue.state == "Partial"
        assert [a.strategy for a in issue.adjustment_attempts] == [
            "exact_match",
            "diff3",
            "semantic_search",
            "manual_confirmation",
        ]
        assert issue.adjustment_attempts[-1].result == "required"
        with pytest.raises(QualityInputError):
            checker.resolve(first)  # neither a range nor a reason
        sid = outcome.session_id
        text = checker.services.text(outcome.result.state.manuscript_hash, session_id=sid)
        start = text.index("Ｘ")
        still = checker.resolve(first, start_char=start, end_char=start + 24, confidence=0.9)
        assert getattr(still, "waiting", False)  # the second one still waits
        placed = checker.store.issue(first, principal=AKI)
        assert (placed.adjustment_method, placed.confidence_score) == ("manual_confirmation", 0.9)
        assert placed.text_range.start_char == start and placed.state == "Resolved"
        verified = [r for r in checker.store.resolutions(sid, principal=AKI) if r.issue_id == first]
        assert [r.verification_status for r in verified] == ["passed"]
        done = checker.resolve(second, defer_reason="checked by hand")
        assert getattr(done, "done", False)
        audit = [e for e in checker.services.audit.entries() if e.action == "range_confirmed"]
        assert audit and audit[0].qc_code == "QC-013"


def test_a_low_confidence_placement_goes_back_to_partial_and_a_person_may_defer(
    workspace: Workspace, clock: Any, tmp_path: Path
) -> None:
    manuscript = tmp_path / "ep.txt"
    manuscript.write_text(
        "春の朝に少年は駅へと急いでいた猫が駅の時計は七時を少し過ぎていた。", encoding="utf-8"
    )
    services = workspace.services(AKI, clock=clock, embedder=_Blind())
    with QualityChecker(
        workspace, principal=AKI, llm=_surrounded_llm(), services=services
    ) as checker:
        outcome = checker.check(manuscript, episode=5, policy=IterationPolicy(count=1))
        pending = outcome.result.state.alignment_pending[0]
        for issue_id in outcome.result.state.alignment_pending:
            done = checker.resolve(issue_id, defer_reason="USER_REJECTED_TOOL")
        assert done.done  # type: ignore[union-attr]
        deferred = checker.store.issue(pending, principal=AKI)
        assert (deferred.state, deferred.defer_reason) == ("Deferred", "USER_REJECTED_TOOL")


def test_defer_an_open_issue_outside_any_gate(make_checker: Make, episode_ja: Path) -> None:
    checker = make_checker()
    sid = checker.check(episode_ja, episode=1, policy=IterationPolicy(count=1)).session_id
    structure = next(
        i for i in checker.store.issues(sid, principal=AKI) if i.category == "structure"
    )
    deferred = checker.resolve(structure.issue_id, defer_reason="needs the author")
    assert getattr(deferred, "state", None) == "Deferred"
    resolved = next(i for i in checker.store.issues(sid, principal=AKI) if i.state == "Resolved")
    with pytest.raises(QualityInputError, match="cannot become Deferred"):
        checker.resolve(resolved.issue_id, defer_reason="too late")
    with pytest.raises(QualityInputError, match="does not wait"):
        checker.resolve(structure.issue_id, start_char=0, end_char=1)


def test_ending_a_stuck_session_lets_the_next_check_begin_anew(
    make_checker: Make, two_issues: Path
) -> None:
    first = make_checker(interrupted_llm())
    sid = first.check(two_issues, episode=1).session_id
    first.close()
    second = make_checker()
    ended = second.end(sid)
    assert (ended.current_status, ended.lock_status) == ("failed", "released")
    with pytest.raises(QualityInputError, match="already failed"):
        second.end(sid)
    fresh = second.check(two_issues, episode=1, policy=IterationPolicy(count=1))
    assert not fresh.resumed and fresh.session_id != sid and fresh.result.done
    assert [s.session_id for s in second.history(1)] == [fresh.session_id, sid]


def recheck_fails_llm() -> ScriptedLLM:
    """Checks and plans like the editor; the re-check of round 1 finds the LLM gone."""
    editor = editor_llm()
    checks = 0

    def check(prompt: str) -> str:
        nonlocal checks
        checks += "Manuscript:\n" in prompt and "Excerpt:\n" not in prompt
        if (
            checks == 2 and "Excerpt:\n" not in prompt
        ):  # the first is the check, the second round 1's re-check
            raise LLMUnavailableError("the model server went away")
        return editor.complete([{"role": "user", "content": prompt}]).text

    return ScriptedLLM([("", check)])


def test_fixes_applied_before_an_interruption_are_still_verified(
    make_checker: Make, two_issues: Path
) -> None:
    """A session stopped after round 1's fixes were applied (here the re-check's LLM went away;
    a killed process stops there alike): the resumed check turns the fixed issues Partial
    (§5.2), and still judges those fixes, as the uninterrupted check does."""
    plain = make_checker()
    whole = plain.check(two_issues, episode=1, policy=IterationPolicy(count=1))
    expected = sorted(i.state for i in plain.store.issues(whole.session_id, principal=AKI))
    plain.close()
    two_issues.with_name("ep2.txt").write_text(two_issues.read_text("utf-8"), "utf-8")
    first = make_checker(recheck_fails_llm())
    stopped = first.check(
        two_issues.with_name("ep2.txt"), episode=2, policy=IterationPolicy(count=1)
    )
    assert stopped.result.status == "failed" and stopped.result.node == "recheck"
    sid = stopped.session_id
    fixed = [i for i in first.store.issues(sid, principal=AKI) if i.state == "InProgress"]
    assert fixed  # round 1's fixes were applied before the re-check failed
    first.close()
    second = make_checker()
    done = second.check(two_issues.with_name("ep2.txt"), episode=2)
    assert done.resumed and done.result.done
    assert {i.issue_id for i in fixed} <= set(done.partial_ids)
    issues = second.store.issues(sid, principal=AKI)
    assert sorted(i.state for i in issues) == expected
    resolutions = second.store.resolutions(sid, principal=AKI)
    assert resolutions and all(r.verification_status != "pending" for r in resolutions)
