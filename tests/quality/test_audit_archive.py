"""The audit archive (seed 003 §6.2: keep 90 days, then archive): entry by entry, on session
begin and by ``flowkit quality audit archive``, with the number of days a setting."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flowkit.cli import main
from flowkit.errors import LLMUnavailableError
from flowkit.quality.app import QualityChecker
from flowkit.quality.audit import KEEP_DAYS, AuditEntry, AuditLog
from flowkit.quality.demo import demo_file, editor_llm
from flowkit.quality.errors import QualityInputError
from flowkit.quality.fetch import ManualClock
from flowkit.quality.models import IterationPolicy
from flowkit.quality.services import Workspace
from flowkit.testing import ScriptedLLM

from .conftest import AKI

NOW = datetime(2025, 9, 27, 9, 0, tzinfo=UTC)


def _log_at(root: Path, *days_ago: int) -> AuditLog:
    """An audit log with one ``session_started`` entry ``d`` days before ``NOW`` per ``d``."""
    when = [NOW]
    audit = AuditLog(root, clock=lambda: when[0])
    for days in days_ago:
        when[0] = NOW - timedelta(days=days)
        audit.record("session_started", session_id=f"QC_EP{days:03d}_20250101_0000",
                     performed_by="aki", metadata={"days_ago": days})  # fmt: skip
    return audit


def _kept(audit: AuditLog) -> list[int]:
    return [e.metadata["days_ago"] for e in audit.entries()]


def _archived(root: Path) -> list[int]:
    found: list[int] = []
    for path in sorted((root / "archive").glob("*.log.gz")):
        lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
        found += [
            AuditEntry.model_validate_json(line).metadata["days_ago"] for line in lines if line
        ]
    return found


def test_entries_older_than_the_setting_are_archived_and_newer_ones_stay(tmp_path: Path) -> None:
    # 94 days ago is in a month (June) that ended less than 90 days ago: it goes all the same.
    audit = _log_at(tmp_path, 140, 94, 84, 7)
    written = audit.archive(now=NOW)
    assert [p.name for p in written] == ["202505.log.gz", "202506.log.gz"]
    assert _kept(audit) == [84, 7]
    assert sorted(_archived(tmp_path)) == [94, 140]


def test_archiving_twice_archives_nothing_twice(tmp_path: Path) -> None:
    audit = _log_at(tmp_path, 140, 94, 84, 7)
    audit.archive(now=NOW)
    before = {p.name: gzip.decompress(p.read_bytes()) for p in (tmp_path / "archive").iterdir()}
    assert audit.archive(now=NOW) == []
    after = {p.name: gzip.decompress(p.read_bytes()) for p in (tmp_path / "archive").iterdir()}
    assert after == before and _kept(audit) == [84, 7]


def test_a_later_archive_of_the_same_month_adds_to_its_file(tmp_path: Path) -> None:
    audit = _log_at(tmp_path, 100, 89, 80)  # 2025-06-19, 06-30 and 07-09
    audit.archive(now=NOW)
    assert _archived(tmp_path) == [100] and _kept(audit) == [89, 80]
    audit.archive(now=NOW + timedelta(days=5))
    assert _archived(tmp_path) == [100, 89] and _kept(audit) == [80]


def test_the_number_of_days_is_a_setting(tmp_path: Path) -> None:
    audit = _log_at(tmp_path / "a", 140, 84, 40, 7)
    assert audit.keep_days == KEEP_DAYS == 90
    short = AuditLog(tmp_path / "a", clock=lambda: NOW, keep_days=30)
    short.archive()
    assert _kept(short) == [7] and sorted(_archived(tmp_path / "a")) == [40, 84, 140]
    other = _log_at(tmp_path / "b", 140, 84)
    other.archive(now=NOW, keep_days=200)  # per call, too
    assert _kept(other) == [140, 84]
    for bad in (-1, 1.5, True, "90"):
        with pytest.raises(QualityInputError, match="keep_days"):
            AuditLog(tmp_path, keep_days=bad)  # type: ignore[arg-type]


def test_a_damaged_line_is_never_lost(tmp_path: Path) -> None:
    audit = _log_at(tmp_path, 100, 92)  # both in June 2025, archived entry by entry
    month = tmp_path / "202506" / "audit.log"
    month.write_text(month.read_text() + "not json\n", encoding="utf-8")
    audit.archive(now=NOW)
    assert month.read_text() == "not json\n"  # kept where it was, for a person to look at
    assert sorted(_archived(tmp_path)) == [92, 100]


def test_a_new_session_archives_with_the_workspace_setting(
    tmp_path: Path, two_issues: Path
) -> None:
    workspace = Workspace(tmp_path / "ws", fsync=False, audit_keep_days=60)
    _log_at(workspace.root / "audit", 140, 84, 40)
    clock = ManualClock(start=NOW)
    with QualityChecker(workspace, principal=AKI, llm=editor_llm(), clock=clock) as checker:
        assert checker.services.audit.keep_days == 60
        checker.check(two_issues, episode=1, policy=IterationPolicy(count=1))
        kept = checker.services.audit.entries()
    assert [e.metadata.get("days_ago") for e in kept if e.metadata.get("days_ago")] == [40]
    assert kept[-1].action == "session_completed"  # today's entries stay
    assert sorted(_archived(workspace.root / "audit")) == [84, 140]


def test_a_resumed_session_archives_too(
    make_checker: Callable[..., QualityChecker], workspace: Workspace, two_issues: Path
) -> None:
    gone = ScriptedLLM([("Manuscript:\n", LLMUnavailableError("the model server went away"))])
    first = make_checker(llm=gone)  # the check step fails: the session stays active
    assert first.check(two_issues, episode=1).result.status == "failed"
    first.close()
    _log_at(workspace.root / "audit", 140)
    make_checker().check(two_issues, episode=1)
    assert _archived(workspace.root / "audit") == [140]


def run(*words: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_archive_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    root = store / "quality" / "audit"
    # The command reads the real clock: entries are placed relative to it, never asserted.
    when = [datetime.now(UTC) - timedelta(days=200)]
    audit = AuditLog(root, clock=lambda: when[0])
    old = audit.record("session_started", session_id="QC_EP001_20250101_0000", performed_by="aki")
    when[0] = datetime.now(UTC) - timedelta(days=10)
    audit.record("session_started", session_id="QC_EP002_20250101_0000", performed_by="aki")
    words = ["quality", "audit", "archive", "--store", str(store)]
    code, out, err = run(*words, "--keep-days", "300", capsys=capsys)
    assert (code, err) == (0, "") and out == "nothing to archive (keeping 300 days)\n"
    code, out, err = run(*words, capsys=capsys)
    assert (code, err) == (0, "") and out.startswith("archived the entries older than 90 days")
    assert out.rstrip().endswith(str(root / "archive" / f"{old.timestamp:%Y%m}.log.gz"))
    assert [e.session_id for e in audit.entries()] == ["QC_EP002_20250101_0000"]
    code, out, _ = run(*words, capsys=capsys)
    assert out == "nothing to archive (keeping 90 days)\n"
    code, out, err = run(*words, "--keep-days", "-3", capsys=capsys)
    assert code == 2 and out == "" and "--keep-days" in err and "Traceback" not in err


def test_the_archive_command_never_creates_a_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run("quality", "audit", "archive", "--store", str(tmp_path / "none"),
                         capsys=capsys)  # fmt: skip
    assert code == 2 and out == "" and "No quality sessions" in err  # as every reading command
    assert not (tmp_path / "none").exists()
    (tmp_path / "empty" / "quality").mkdir(parents=True)
    code, out, _ = run("quality", "audit", "archive", "--store", str(tmp_path / "empty"),
                       capsys=capsys)  # fmt: skip
    assert code == 0 and out == "nothing to archive (keeping 90 days)\n"
    assert sorted(p.name for p in (tmp_path / "empty").rglob("*")) == ["quality"]


def test_the_check_command_archives_with_its_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    store = tmp_path / "store"
    root = store / "quality" / "audit"
    when = [datetime.now(UTC) - timedelta(days=150)]
    audit = AuditLog(root, clock=lambda: when[0])
    audit.record("session_started", session_id="QC_EP009_20250101_0000", performed_by="aki")
    check = ["quality", "check", str(demo_file("episode_en.txt")), "--episode", "2",
             "--policy", "count=2", "--llm", "replay:demo", "--store", str(store)]  # fmt: skip
    code, _, err = run(*check, "--audit-keep-days", "-1", capsys=capsys)
    assert code == 2 and "--audit-keep-days" in err
    code, _, err = run(*check, "--audit-keep-days", "200", capsys=capsys)
    assert code == 0, err
    assert audit.entries()[0].session_id == "QC_EP009_20250101_0000"  # younger than 200 days
    code, _, err = run(*check, capsys=capsys)  # a rerun of the finished check: the default, 90
    assert code == 0, err
    assert "QC_EP009_20250101_0000" not in {e.session_id for e in audit.entries()}
